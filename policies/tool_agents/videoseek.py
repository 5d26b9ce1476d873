"""VideoSeek (Lin et al. 2026, ``jylins/videoseek``) on the Tools env's ``videoseek`` preset.

With an LLM the agent runs VideoSeek's loop: a system prompt (role, environment, state,
the Thought -> Action -> Observation workflow, the toolkit, the rules: one tool per turn,
skim spans of at least 16 s, focus clips under 16 s), the video's length and the
question, then per step the released step instruction ("Step [i / N]: ..."); each reply
is a thought and one JSON call of ``overview``, ``skim``, ``focus`` or ``answer``; the
answer ends the episode. A reply with no call gets VideoSeek's own reminder once. On the
budget's last step the released closing message asks for the answer directly, and its
reply is the answer (``policies/prompts/videoseek/``).

Without an LLM, ``videoseek[offline]`` is a documented heuristic, not the paper's agent:
``overview()``; ``skim`` the video in ``skims`` equal spans (>= 16 s) with the question as
the query; the spans whose sub-model answer names the leading option (most votes so far)
are skimmed again in quarters while longer than 64 s, else ``focus``-ed in clips under
16 s (at most ``max_focus``); then it answers with the option the results voted for
(:mod:`policies.tool_agents.evidence`: focus 2, skim 1, overview 0.5).
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

from policies import prompts
from policies.observations import parse_options
from policies.reasoning import is_non_answer
from policies.tool_agents.agent import MAX_ANSWER_CHARS, ToolAgentPolicy, ToolChat
from policies.tool_agents.calls import (
    answer_call,
    content_texts,
    duration_of,
    span_call,
    turns_left,
)
from policies.tool_agents.evidence import option_votes
from video_env.actions.parsing import ActionParseError, parse_time
from video_env.actions.tools import format_call
from video_env.actions.types import ToolCall
from video_env.backends.llm.base import LLM
from video_env.types import Interval

#: VideoSeek's reminder after a reply without a call (``videoseek/agent.py``).
NO_CALL = (
    "There is no function call in your response. YOU MUST USE A FUNCTION CALL IN EACH RESPONSE."
)
#: Skim spans are at least this long, focus clips shorter (VideoSeek's prompt rules).
SKIM_MIN_S = 16.0
FOCUS_S = 15.0
#: How far a result's printed span may be from the span asked (one decimal).
_SLACK_S = 0.15
_SPAN = re.compile(r"\[([^,\]]+), ([^\]]+)\]")


def result_span(call: str) -> Interval | None:
    """The span a result's call names (``skim([10.0s, 40.0s], 'q')``), if any."""
    match = _SPAN.search(call)
    if match is None:
        return None
    try:
        start, end = parse_time(match.group(1)), parse_time(match.group(2))
    except ActionParseError:
        return None
    return Interval(start, end) if end > start else None


def split(span: Interval, pieces: int) -> list[Interval]:
    """``span`` cut into ``pieces`` equal spans."""
    step = span.length / pieces
    return [Interval(span.start + i * step, span.start + (i + 1) * step) for i in range(pieces)]


class VideoSeekPolicy(ToolAgentPolicy):
    """VideoSeek's think-then-call loop (see the module docstring).

    Args:
        llm: The orchestrator (``None``: the offline heuristic).
        skims: Spans of the first offline skim pass.
        max_focus: Most offline focus calls.
        max_tokens: Cap on a reply.
    """

    base_name = "videoseek"
    preset_name = "videoseek"
    weights: ClassVar[dict[str, float]] = {"overview": 0.5, "skim": 1.0, "focus": 2.0}

    def __init__(
        self, llm: LLM | None = None, skims: int = 4, max_focus: int = 8, max_tokens: int = 1024
    ) -> None:
        super().__init__(llm, max_tokens)
        self.skims, self.max_focus = skims, max_focus
        if self.chat is not None:
            self.chat.no_call = NO_CALL
        self._queue: list[tuple[str, Interval]] = []
        self._level: list[Interval] = []
        self._focused = 0

    # -- the LLM's loop ------------------------------------------------------------------

    def _start_chat(self, chat: ToolChat, observation: dict[str, Any]) -> None:
        example = format_call(
            self.preset, "skim", {"query": "the red car", "start_time": 0, "end_time": 60}
        )
        system = prompts.render(
            "videoseek/system",
            max_steps=self.preset.max_turns,
            overview_frames=64,
            skim_frames=16,
            focus_frames=16,
            example=example,
        )
        chat.start(system, self._question_prompt("videoseek/question", observation))

    def _question_prompt(self, name: str, observation: dict[str, Any]) -> str:
        fields: dict[str, Any] = {
            "question": str(observation["question"]),
            "options_block": prompts.options_block(parse_options(observation["options"])),
        }
        if name == "videoseek/question":
            fields["duration"] = f"{duration_of(observation):.1f}"
        return prompts.render(name, **fields)

    def _llm_turn(
        self, chat: ToolChat, observation: dict[str, Any], new: list[dict[str, Any]]
    ) -> ToolCall | None:
        for result in new:
            chat.say(self.observed(result))
        if observation["last_action_error"]:
            chat.say(f"The call failed: {observation['last_action_error']}")
        left, budget = turns_left(observation), self.preset.max_turns
        if left <= 1:  # the released closing call: the reply is the answer
            chat.say(self._question_prompt("videoseek/final", observation))
            text = chat.reply()
            if text is None:
                return None
            chat.used += 1
            try:
                return self.parser.parse(text)
            except ActionParseError:
                return answer_call(self.preset, text.strip()[:MAX_ANSWER_CHARS] or "unknown")
        chat.say(prompts.render("videoseek/step", step=budget - left + 1, max_steps=budget))
        return chat.call()

    # -- the offline heuristic -------------------------------------------------------------

    def _reset_plan(self, observation: dict[str, Any]) -> None:
        whole = Interval(0.0, duration_of(observation))
        pieces = max(1, min(self.skims, math.floor(whole.length / SKIM_MIN_S)))
        self._queue = [("overview", whole)] + [("skim", s) for s in split(whole, pieces)]
        self._focused = 0
        self._level = [s for _, s in self._queue[1:]]

    def _offline_call(self, observation: dict[str, Any]) -> ToolCall | None:
        if turns_left(observation) <= 1:
            return None
        if not self._queue and self._level:
            self._queue = self._next_level(observation)
        if not self._queue:
            return None
        tool, span = self._queue.pop(0)
        if tool == "focus":
            self._focused += 1
        query = "" if tool == "overview" else str(observation["question"])
        spec = self.preset.spec(tool)
        assert spec is not None
        return span_call(self.preset, spec, span, self.units, query=query)

    def _next_level(self, observation: dict[str, Any]) -> list[tuple[str, Interval]]:
        """Skim the voted spans' quarters while they are long, else focus them."""
        level, self._level = self._level, []
        chosen = self._voted_spans(observation, level)
        room = min(turns_left(observation) - 1, self.max_focus - self._focused)
        queue: list[tuple[str, Interval]] = []
        for span in chosen:
            if span.length > 4 * SKIM_MIN_S:
                parts = split(span, 4)
                self._level += parts
                queue += [("skim", s) for s in parts]
            else:
                queue += [("focus", s) for s in split(span, math.ceil(span.length / FOCUS_S))]
        if self._level:
            return queue[: max(0, turns_left(observation) - 1)]
        return queue[: max(0, room)]

    def _voted_spans(self, observation: dict[str, Any], level: list[Interval]) -> list[Interval]:
        """The spans of ``level`` whose skim named the leading option (or, open: answered)."""
        options = parse_options(observation["options"])
        skims = [
            (span, str(result["text"]))
            for result in observation["results"]
            if str(result["tool"]) == "skim"
            and (span := result_span(str(result["call"]))) is not None
        ]
        answered = [
            (s, text)
            for s in level
            for span, text in skims
            if abs(span.start - s.start) < _SLACK_S
            and abs(span.end - s.end) < _SLACK_S
            and not is_non_answer(text)
        ]
        if not options:
            return [s for s, _ in answered][:2]
        totals = option_votes(content_texts(observation), options, self.weights)
        leader = max(range(len(options)), key=lambda i: (totals[i], -i))
        voted = [s for s, text in answered if option_votes([("skim", text)], options, {})[leader]]
        return voted[:2]
