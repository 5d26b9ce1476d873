"""The VideoScout policy: a vision-language model driving the Pacing env turn by turn.

Each turn the model gets VideoScout's input: a system prompt describing the actions, the
memory mechanism and the Think-Act format; the current window's frames exactly as the env
shows them (pixel observations); its memory from the previous turn (the env keeps it); and
the question. Its raw reply goes to the env's text action set
(:func:`~video_env.wrappers.text_actions.parse_text_action`), so a malformed reply is an
invalid action under the env's rules (penalty, no format reward, error allowance).
With an untrained base model this is the paper's "agentic base model" row.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from policies.base import Policy
from policies.checkpoints import VIDEOSCOUT_DAPO_DIR, VIDEOSCOUT_SFT_DIR
from policies.videoscout.prompt import END_NOTE, PromptLayout, VideoScoutPrompt, legal_kinds
from policies.videoscout.record import (
    trained_layout,
    trained_rules,
)
from policies.videoscout.think_act_pattern import DEFAULT_MAX_CHARS
from video_env._optional import require
from video_env.actions.pacing import PacingActionSet
from video_env.backends.base import ReplyGuide, VisionChat, VisionMessage, takes_guide
from video_env.envs.pacing_rules import PacingRules
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost

__all__ = ["END_NOTE", "SHIPPED", "VideoScoutPolicy", "legal_kinds", "make_videoscout"]


class VideoScoutPolicy(Policy):
    """A :class:`VisionChat` model driving the Pacing env in the Think-Act format.

    Args:
        vlm: The model (any :class:`VisionChat`: transformers, an OpenAI-compatible server).
        rules: The env's pacing rules, described in the system prompt (default: the paper's).
        strict: Parse replies strictly (exactly the Think-Act format and one action).
        max_new_tokens: Generation budget per turn.
        temperature: Sampling temperature (0: greedy).
        name: Name in result tables (default ``videoscout[<model>]``).
        end_note: Where to say, on the turn that shows the last chunk, that only ``answer``
            is left (:data:`END_NOTE`, one of
            :data:`~policies.videoscout.prompt.END_NOTE_PLACES`; the system prompt says
            so once). Our addition to the paper's prompt (``docs/fidelity.md``):
            ``off`` gives the plain one.
        guided: Legal-action decoding: after ``</memory>`` the reply can only go on with
            one of the turn's legal actions (:meth:`reply_guide`; an MCQ answer ends after
            its letter, an open answer's text and window stay free). Needs a model whose
            ``chat`` takes a guide (``transformers`` backends); not the paper's (free
            generation), so the policy's name ends in ``+guided``.
        question_first: Put the question and its options before the frames (after the
            window line) and the memory after them, instead of the paper's order (frames,
            memory, question). A model whose answer reads the frames through the options
            — the pixel VLM's MCQ circuit, trained with its question before the frames —
            can only do so when the options come first (causal attention). Our addition
            (``docs/fidelity.md``; the policy's name ends in ``+question-first``); off gives
            the paper's order.
        format_guided: Format-guided decoding: the whole reply is kept to the Think-Act
            format (:mod:`policies.videoscout.think_act_pattern`): it opens with ``<think>``, the
            thought and the notes hold no tags and at most ``format_chars`` characters
            each, and the action is a legal one (an open answer is its text alone, not a
            bare capital letter; the env takes the window on screen). Implies legal-action
            decoding, with the same needs; the name ends in ``+format-guided``. Its
            format-valid turns are the decoder's, not the model's.
        format_chars: The cap on the thought's and the notes' length under
            ``format_guided``.

    The model's calls are the policy's LLM calls in the records (``llm_calls``, tokens);
    the env runs without its simulated sensor for this policy.
    """

    env_kinds = ("pacing",)
    offline = False

    def __init__(
        self,
        vlm: VisionChat,
        *,
        rules: PacingRules | None = None,
        strict: bool = False,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
        name: str | None = None,
        end_note: str = "window",
        guided: bool = False,
        question_first: bool = False,
        format_guided: bool = False,
        format_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        super().__init__()
        if not isinstance(vlm, VisionChat):
            raise ConfigError(f"videoscout needs a VisionChat model, got {type(vlm).__name__}")
        if format_chars < 1:
            raise ConfigError(f"format_chars must be at least 1, got {format_chars}")
        if guided and not takes_guide(vlm, patterns=False):
            raise ConfigError(
                f"legal-action decoding needs a model whose chat takes a guide (a "
                f"transformers backend); {vlm.name} does not"
            )
        if format_guided and not takes_guide(vlm, patterns=True):
            raise ConfigError(
                f"format-guided decoding needs a model whose chat takes a reply pattern (a "
                f"transformers backend, or a server with its regex_field set); {vlm.name} "
                f"does not"
            )
        self.vlm = vlm
        self.prompt = VideoScoutPrompt(rules, PromptLayout(end_note, question_first), strict=strict)
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.guided = guided
        self.format_guided = format_guided
        self.format_chars = format_chars
        suffix = ("+question-first" if question_first else "") + (
            "+format-guided" if format_guided else "+guided" if guided else ""
        )
        self.name = (name or f"videoscout[{vlm.name}]") + suffix
        self.env_kwargs: Mapping[str, Mapping[str, Any]] = MappingProxyType(
            {"pacing": self.prompt.env_kwargs}
        )
        self.last_messages: list[VisionMessage] = []
        self.last_reply = ""

    @property
    def perceivers(self) -> tuple[Any, ...]:
        """The model: it reads the frames itself (the env runs without sensors)."""
        return (self.vlm,)

    @property
    def rules(self) -> PacingRules:
        """The pacing rules its prompt describes."""
        return self.prompt.rules

    @property
    def end_note(self) -> str:
        """Where its prompt says that a window ends the video."""
        return self.prompt.layout.end_note

    @property
    def question_first(self) -> bool:
        """Whether its prompt puts the question before the frames."""
        return self.prompt.layout.question_first

    @property
    def strict(self) -> bool:
        """Whether replies are parsed strictly."""
        return self.prompt.strict

    @property
    def action_set(self) -> PacingActionSet:
        """The env's text action set its replies are parsed with."""
        return self.prompt.action_set

    def messages(self, observation: dict[str, Any]) -> list[VisionMessage]:
        """The turn's chat (:meth:`VideoScoutPrompt.messages`)."""
        return self.prompt.messages(observation)

    def reply_guide(self, observation: dict[str, Any], info: dict[str, Any]) -> ReplyGuide:
        """The turn's guide under this policy's decoding (:meth:`VideoScoutPrompt.reply_guide`)."""
        return self.prompt.reply_guide(
            observation, info, format_guided=self.format_guided, format_chars=self.format_chars
        )

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Ask the model; its raw reply, parsed by the env's text action set."""
        self.last_messages = self.prompt.messages(observation)
        guided = self.guided or self.format_guided
        guide = {"guide": self.reply_guide(observation, info)} if guided else {}
        reply = self.vlm.chat(
            self.last_messages,
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            **guide,
        )
        self._own_usage = self._own_usage + Cost(
            llm_calls=1,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            money_usd=reply.cost_usd,
        )
        self.last_reply = reply.text
        return self.prompt.parse(reply.text)


#: The VideoScout checkpoints shipped in the package, by their ``videoscout:NAME``:
#: ``pixel`` is the pixel VLM after SFT on teacher turns, ``pixel-dapo`` that SFT after
#: free-rollout DAPO in the Pacing env (both: ``docs/training.md``).
SHIPPED: Mapping[str, Path] = MappingProxyType(
    {"pixel": VIDEOSCOUT_SFT_DIR, "pixel-dapo": VIDEOSCOUT_DAPO_DIR}
)


def resolve_vision_chat(spec: str) -> VisionChat:
    """A :class:`VisionChat` from a backend spec string (the minimal lazy hook).

    ``qwen2.5-vl:PATH_OR_ID`` / ``transformers:PATH_OR_ID`` load
    ``video_env.backends.transformers_vlm.TransformersVLM``; ``openai:MODEL`` loads
    ``video_env.backends.openai_vlm.OpenAIVLM`` (server and reply-pattern field from the
    environment, as ``--vlm openai:MODEL``: ``video_env.backends.registry.openai_vlm``).
    Imported only when asked for.

    Raises:
        ConfigError: For an unknown or empty spec.
        BackendNotInstalled: When the backend's module or extra is missing.
    """
    kind, _, arg = spec.partition(":")
    if not arg:
        raise ConfigError(
            f"videoscout needs a model spec, e.g. videoscout:qwen2.5-vl:PATH, or a shipped "
            f"checkpoint's name ({', '.join(f'videoscout:{n}' for n in SHIPPED)}); got {spec!r}"
        )
    if kind in ("qwen2.5-vl", "transformers"):
        module = require("video_env.backends.transformers_vlm", "models", "the videoscout VLM")
        chat: VisionChat = module.TransformersVLM(model=arg)
        return chat
    if kind == "openai":
        require("openai", "llm", "the videoscout VLM")
        from video_env.backends.registry import openai_vlm

        chat = openai_vlm(arg)
        return chat
    raise ConfigError(
        f"unknown VLM spec {spec!r}; use qwen2.5-vl:PATH, transformers:ID or openai:M"
    )


def make_videoscout(spec: str, **settings: Any) -> VideoScoutPolicy:
    """``videoscout:SPEC`` in the registry (e.g. ``videoscout:qwen2.5-vl:PATH``).

    A checkpoint folder that records its pacing rules (``videoscout.json``,
    :mod:`policies.videoscout.record`, written by the training commands) runs under them
    unless ``rules`` is given, and with the end-of-video note and the question's place as it
    was trained with them unless ``end_note`` / ``question_first`` are given.
    ``videoscout:pixel`` and ``videoscout:pixel-dapo`` are the checkpoints shipped in the
    package (:data:`SHIPPED`: the SFT of the pixel VLM, and that SFT after DAPO).
    """
    name = f"videoscout:{spec}"
    try:
        inspect.signature(VideoScoutPolicy).bind(None, **settings)
    except TypeError as exc:
        raise ConfigError(f"policy {name!r}: {exc}") from None
    if (shipped := SHIPPED.get(spec)) is not None:
        if not (shipped / "config.json").is_file():
            raise ConfigError(f"{name}: the shipped checkpoint is missing from {shipped}")
        spec = f"qwen2.5-vl:{shipped}"
    kind, _, model = spec.partition(":")
    if kind in ("qwen2.5-vl", "transformers") and model:
        # before loading: a bad record fails fast
        recorded = None if "rules" in settings else trained_rules(model)
        if recorded is not None:
            settings["rules"] = recorded
        layout = trained_layout(
            model,
            end_note=settings.get("end_note"),
            question_first=settings.get("question_first"),
        )
        settings.update(layout.policy_kwargs())
    return VideoScoutPolicy(resolve_vision_chat(spec), name=name, **settings)
