"""VideoScout: a vision-language model pacing through a long video (the Pacing env).

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

from policies import prompts
from policies.base import Policy
from policies.checkpoints import VIDEOSCOUT_DAPO_DIR, VIDEOSCOUT_SFT_DIR
from policies.observations import option_letters, parse_options
from policies.observed_frames import observed_batch
from policies.think_act_pattern import DEFAULT_MAX_CHARS, think_act_pattern
from video_env._optional import require
from video_env.actions.pacing import PacingActionSet
from video_env.backends.base import ReplyGuide, VisionChat, VisionMessage, takes_guide
from video_env.envs.pacing_rules import PacingRules, SpeedSpec
from video_env.envs.rules_record import (
    check_end_note,
    trained_layout,
    trained_rules,
)
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost
from video_env.wrappers.text_actions import parse_text_action

_SPEED_NAMES = {0: "1x", 1: "2x", 2: "4x"}


#: Said on the turn that shows the last chunk (``end_note``): the env then takes
#: ``answer`` only, and a small model reads a sentence more surely than it compares
#: "chunk 10" with "10 chunks".
END_NOTE = "This window ends the video: only answer is left."


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
            :data:`~video_env.envs.rules_record.END_NOTE_PLACES`; the system prompt says
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
            format (:mod:`policies.think_act_pattern`): it opens with ``<think>``, the
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
        check_end_note(end_note)
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
        self.rules = rules or PacingRules()
        self.strict = strict
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.end_note = end_note
        self.guided = guided
        self.question_first = question_first
        self.format_guided = format_guided
        self.format_chars = format_chars
        suffix = ("+question-first" if question_first else "") + (
            "+format-guided" if format_guided else "+guided" if guided else ""
        )
        self.name = (name or f"videoscout[{vlm.name}]") + suffix
        self.action_set = PacingActionSet()
        settings: dict[str, Any] = {"pixel_observations": True, "sensors": ()}
        if rules is not None:
            settings["rules"] = rules
        self.env_kwargs: Mapping[str, Mapping[str, Any]] = MappingProxyType({"pacing": settings})
        self.last_messages: list[VisionMessage] = []
        self.last_reply = ""

    @property
    def perceivers(self) -> tuple[Any, ...]:
        """The model: it reads the frames itself (the env runs without sensors)."""
        return (self.vlm,)

    def system_prompt(self) -> str:
        """The system prompt: actions, pacing, memory mechanism, Think-Act format."""
        return prompts.render(
            "videoscout/system", actions=self.action_set.describe(), **self.pacing_fields()
        )

    def pacing_fields(self) -> dict[str, Any]:
        """The rules' part of a system prompt: ``speeds``, ``rewatch``, ``memory_words``."""
        return {
            "speeds": "\n".join(
                f"- speed({factor}x): the next {spec.chunks} chunk{'s' * (spec.chunks > 1)} "
                f"with {_frames(spec)}"
                for factor, spec in sorted(self.rules.speeds.items())
            ),
            "rewatch": _frames(self.rules.rewatch),
            "memory_words": self.rules.memory_words,
        }

    def messages(self, observation: dict[str, Any]) -> list[VisionMessage]:
        """The turn's chat: the system prompt, then the window's frames, memory, question.

        With ``question_first``: the window line, the question, the frames, the memory.
        """
        if "frames" not in observation:
            raise ConfigError("videoscout needs the Pacing env's pixel_observations=True")
        rewatching = bool(int(observation["rewatching"]))
        speed = _SPEED_NAMES[int(observation["speed"])]
        spec = self.rules.rewatch if rewatching else self.rules.speeds[int(speed[0])]
        batch = observed_batch(observation, spec.size)
        first, last = (int(c) for c in observation["chunks"])
        n_chunks = int(observation["n_chunks"][0])
        view = "rewatching" if rewatching else f"at {speed}"
        at_end = float(observation["progress"][0]) >= 1.0 and not rewatching
        note = self.end_note if at_end else "off"
        window = prompts.render(
            "videoscout/window",
            turn=int(observation["turn"][0]),
            n_chunks=n_chunks,
            watched=round(float(observation["progress"][0]) * n_chunks),
            progress=round(100 * float(observation["progress"][0])),
            end_note=f" {END_NOTE}" if note == "window" else "",
            view=view,
            first=first,
            last=last,
            start=f"{float(observation['window'][0]):.0f}",
            end=f"{float(observation['window'][1]):.0f}",
            n_frames=len(batch),
            size=f"{batch.size.width}x{batch.size.height}",
            times=", ".join(f"{t:.1f}s" for t in batch.times),
        )
        error = str(observation["last_action_error"])
        memory = str(observation["memory"]) or "(empty)"
        feedback = f"Your last reply was invalid: {error}\n" if error else ""
        options_block = prompts.options_block(parse_options(str(observation["options"])))
        question = str(observation["question"])
        if self.question_first:
            ask = prompts.render("videoscout/ask", question=question, options_block=options_block)
            notes = prompts.render(
                "videoscout/memory",
                memory=memory,
                feedback=feedback,
                end_note=f"{END_NOTE}\n" if note == "last" else "",
            )
            content: list[Any] = [window + ask, batch, notes]
        else:
            content = [
                window,
                batch,
                prompts.render(
                    "videoscout/question",
                    memory=memory,
                    feedback=feedback,
                    question=question,
                    options_block=options_block,
                    end_note=f"\n{END_NOTE}" if note == "last" else "",
                ),
            ]
        return [
            {"role": "system", "content": self.system_prompt()},
            {"role": "user", "content": content},
        ]

    def reply_guide(self, observation: dict[str, Any], info: dict[str, Any]) -> ReplyGuide:
        """The turn's legal actions as a :class:`ReplyGuide` after ``</memory>``.

        Closed: ``<action>speed(Fx)</action>`` for the rules' speeds,
        ``<action>rewatch(k)</action>`` for the window's chunks and
        ``<action>answer("L")</action>`` for each option letter (the env takes the window
        on screen as the evidence); open: ``<action>answer("`` for an open question (its
        answer and window are the model's) — each only while the env's ``legal_actions``
        has its kind. Under ``format_guided``, the whole reply's pattern instead
        (:func:`~policies.think_act_pattern.think_act_pattern`), guided from its start.
        """
        kinds = info.get("legal_actions") or legal_kinds(observation)
        closed: list[str] = []
        if "speed" in kinds:
            closed += [f"<action>speed({f}x)</action>" for f in sorted(self.rules.speeds)]
        if "rewatch" in kinds:
            first, last = (int(c) for c in observation["chunks"])
            closed += [f"<action>rewatch({k})</action>" for k in range(first, last + 1)]
        letters = option_letters(str(observation["options"]))
        open_answer = "answer" in kinds and not letters
        if "answer" in kinds and letters:
            closed += [f'<action>answer("{letter}")</action>' for letter in letters]
        if self.format_guided:
            pattern = think_act_pattern(
                closed, open_answer=open_answer, max_chars=self.format_chars
            )
            return ReplyGuide("", patterns=(pattern,))
        open_heads = ('<action>answer("',) if open_answer else ()
        return ReplyGuide("</memory>", tuple(closed), open_heads)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Ask the model; its raw reply, parsed by the env's text action set."""
        self.last_messages = self.messages(observation)
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
        return parse_text_action(self.action_set, reply.text, self.strict)


def legal_kinds(observation: dict[str, Any]) -> list[str]:
    """The Pacing env's legal action kinds, read off an observation (as ``legal_actions``)."""
    rewatching = bool(int(observation["rewatching"]))
    if float(observation["progress"][0]) >= 1.0 and not rewatching:
        return ["answer"]  # the last chunk has been shown
    first, last = (int(c) for c in observation["chunks"])
    if last > first and not rewatching:
        return ["speed", "rewatch", "answer"]
    return ["speed", "answer"]


def _frames(spec: SpeedSpec) -> str:
    return f"{spec.frames} frames at {spec.size.width}x{spec.size.height}"


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
    :mod:`video_env.envs.rules_record`, written by the training commands) runs under them
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
