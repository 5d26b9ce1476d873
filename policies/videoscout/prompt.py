"""VideoScout's prompt: an observation of the Pacing env → chat messages, a reply → an action.

The policy (:class:`~policies.videoscout.VideoScoutPolicy`), the tool-calling policy, the
RL engines' chat environment and the verifiers environment all render VideoScout's turns
with one :class:`VideoScoutPrompt`: no model is needed to render a prompt. Its
:class:`PromptLayout` is what a model trained on these turns learned of the prompt: where
it says that a window ends the video and where the question stands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from policies import prompts
from policies.observations import option_letters, parse_options
from policies.observed_frames import observed_batch
from policies.videoscout.think_act_pattern import DEFAULT_MAX_CHARS, think_act_pattern
from video_env.actions.pacing import PacingActionSet
from video_env.backends.base import FrameBatch, ReplyGuide, VisionMessage
from video_env.envs.pacing_rules import PacingRules, SpeedSpec
from video_env.errors import ConfigError
from video_env.wrappers.text_actions import parse_text_action

__all__ = [
    "DEFAULT_LAYOUT",
    "END_NOTE",
    "END_NOTE_PLACES",
    "PromptLayout",
    "VideoScoutPrompt",
    "check_end_note",
    "legal_kinds",
    "message_parts",
]

_SPEED_NAMES = {0: "1x", 1: "2x", 2: "4x"}

#: Said on the turn that shows the last chunk (``end_note``): the env then takes
#: ``answer`` only, and a small model reads a sentence more surely than it compares
#: "chunk 10" with "10 chunks".
END_NOTE = "This window ends the video: only answer is left."

#: Where VideoScout's prompt says that a window ends the video
#: (:data:`END_NOTE`): ``window`` ends the window line (before the
#: frames), ``last`` is the user turn's last line (after the question, next to the
#: reply), ``off`` gives the paper's plain prompt.
END_NOTE_PLACES = ("window", "last", "off")


def check_end_note(place: str) -> str:
    """``place`` if it is one of :data:`END_NOTE_PLACES`.

    Raises:
        ConfigError: Otherwise.
    """
    if place not in END_NOTE_PLACES:
        raise ConfigError(f"end_note must be one of {END_NOTE_PLACES}, got {place!r}")
    return place


@dataclass(frozen=True)
class PromptLayout:
    """Where VideoScout's prompt puts its parts: what a model trained on its turns learned.

    The training commands carry one layout from the data to the checkpoint and into every
    rollout (:class:`VideoScoutPrompt` takes it).

    Attributes:
        end_note: Where the prompt says that a window ends the video
            (:data:`END_NOTE_PLACES`).
        question_first: Whether the question and its options come before the frames.

    Raises:
        ConfigError: If ``end_note`` is not a place.
    """

    end_note: str = "window"
    question_first: bool = False

    def __post_init__(self) -> None:
        check_end_note(self.end_note)

    def policy_kwargs(self) -> dict[str, Any]:
        """The layout as ``VideoScoutPolicy`` keyword arguments."""
        return {"end_note": self.end_note, "question_first": self.question_first}


#: The default layout: the end note on the window line, the paper's order.
DEFAULT_LAYOUT = PromptLayout()


class VideoScoutPrompt:
    """VideoScout's turns under ``rules`` and ``layout`` (see the module docstring).

    Args:
        rules: The env's pacing rules, described in the system prompt (default: the paper's).
        layout: Where the prompt says that a window ends the video, and where the question
            stands (default: on the window line; the paper's order).
        strict: Parse replies strictly (exactly the Think-Act format and one action).
    """

    def __init__(
        self,
        rules: PacingRules | None = None,
        layout: PromptLayout = DEFAULT_LAYOUT,
        *,
        strict: bool = False,
    ) -> None:
        self.rules = rules or PacingRules()
        self.layout = layout
        self.strict = strict
        self.action_set = PacingActionSet()
        self._custom_rules = rules is not None

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """The Pacing env's arguments these turns need: frames, no sensors, the rules."""
        settings: dict[str, Any] = {"pixel_observations": True, "sensors": ()}
        if self._custom_rules:
            settings["rules"] = self.rules
        return settings

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
        note = self.layout.end_note if at_end else "off"
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
        if self.layout.question_first:
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

    def reply_guide(
        self,
        observation: dict[str, Any],
        info: dict[str, Any],
        *,
        format_guided: bool = False,
        format_chars: int = DEFAULT_MAX_CHARS,
        answer: bool = True,
    ) -> ReplyGuide:
        """The turn's legal actions as a :class:`ReplyGuide` after ``</memory>``.

        Closed: ``<action>speed(Fx)</action>`` for the rules' speeds,
        ``<action>rewatch(k)</action>`` for the window's chunks and
        ``<action>answer("L")</action>`` for each option letter (the env takes the window
        on screen as the evidence); open: ``<action>answer("`` for an open question (its
        answer and window are the model's) — each only while the env's ``legal_actions``
        has its kind. With ``format_guided``, the whole reply's pattern instead
        (:func:`~policies.videoscout.think_act_pattern.think_act_pattern`), guided from its start.
        ``answer=False`` leaves the answers out (a rollout exploring the pace: DAPO's
        ``explore_pace``), where another action is legal.
        """
        kinds = info.get("legal_actions") or legal_kinds(observation)
        if not answer and set(kinds) & {"speed", "rewatch"}:
            kinds = [kind for kind in kinds if kind != "answer"]
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
        if format_guided:
            pattern = think_act_pattern(closed, open_answer=open_answer, max_chars=format_chars)
            return ReplyGuide("", patterns=(pattern,))
        open_heads = ('<action>answer("',) if open_answer else ()
        return ReplyGuide("</memory>", tuple(closed), open_heads)

    def parse(self, reply: str) -> Any:
        """The reply as the env's action (an invalid action where it does not parse)."""
        return parse_text_action(self.action_set, reply, self.strict)


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


def message_parts(
    messages: Sequence[VisionMessage], frame_parts: Callable[[FrameBatch], list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """A chat as content parts: texts as text parts, frame batches as ``frame_parts`` says.

    ``frame_parts`` renders one batch: engines' placeholders, images or data URLs.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content", "")
        if isinstance(content, str):
            out.append({"role": message["role"], "content": content})
            continue
        parts: list[dict[str, Any]] = []
        for part in content:
            if isinstance(part, FrameBatch):
                parts += frame_parts(part)
            else:
                parts.append({"type": "text", "text": str(part)})
        out.append({"role": message["role"], "content": parts})
    return out
