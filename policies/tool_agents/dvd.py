"""Deep Video Discovery (Zhang et al. 2025, ``microsoft/DeepVideoDiscovery``) on ``dvd``.

With an LLM the agent runs DVD's ReAct loop (``dvd/dvd_core.py``): its system prompt (THINK
-> ACT -> OBSERVE, one function per step, arguments only from the question or earlier
outputs), its user prompt (browse globally first, search clips without timestamps,
inspect frames of time ranges and CONFIRM an answer with ``frame_inspect_tool``), the
video's length and the question; each reply is one JSON call of ``global_browse_tool``,
``clip_search_tool``, ``frame_inspect_tool`` or ``finish``. On the last iteration the
released message asks for ``finish`` (the env refuses any other tool there).
(``policies/prompts/dvd/``.)

Without an LLM, ``dvd[offline]`` is a documented heuristic, not the paper's agent:
``global_browse_tool`` with the question, ``clip_search_tool`` with the question, then
``frame_inspect_tool`` (the question) on the ``inspect`` found clips ranked first by
whether their caption names an option, then by the offline reasoner's relevance, and
``finish`` with the option the results voted for (:mod:`policies.tool_agents.evidence`:
an inspection 2, a caption 1, the browse 1).
"""

from __future__ import annotations

from typing import Any, ClassVar

from policies import prompts
from policies.observations import parse_options
from policies.tool_agents.agent import ToolAgentPolicy, ToolChat
from policies.tool_agents.calls import (
    ClipLine,
    clip_lines,
    duration_of,
    span_call,
    turns_left,
)
from policies.tool_agents.evidence import option_votes
from video_env.actions.tools import format_call
from video_env.actions.types import ToolCall
from video_env.backends.llm.base import LLM
from video_env.types import Interval


class DVDPolicy(ToolAgentPolicy):
    """Deep Video Discovery's loop (see the module docstring).

    Args:
        llm: The orchestrator (``None``: the offline heuristic).
        inspect: Clips the offline heuristic inspects.
        max_tokens: Cap on a reply.
    """

    base_name = "dvd"
    preset_name = "dvd"
    weights: ClassVar[dict[str, float]] = {
        "global_browse_tool": 1.0,
        "clip_search_tool": 1.0,
        "frame_inspect_tool": 2.0,
    }

    def __init__(self, llm: LLM | None = None, inspect: int = 3, max_tokens: int = 1024) -> None:
        super().__init__(llm, max_tokens)
        self.inspect = inspect
        self._step = 0

    # -- the LLM's loop ------------------------------------------------------------------

    def _start_chat(self, chat: ToolChat, observation: dict[str, Any]) -> None:
        example = format_call(
            self.preset,
            "frame_inspect_tool",
            {
                "question": "What is written on the sign?",
                "time_ranges_hhmmss": [["00:01:10", "00:01:20"]],
            },
        )
        system = prompts.render("dvd/system", tools=self._tools(), example=example)
        user = prompts.render(
            "dvd/question",
            max_iterations=self.preset.max_turns,
            duration=f"{duration_of(observation):.0f}",
            question=str(observation["question"]),
            options_block=prompts.options_block(parse_options(observation["options"])),
        )
        chat.start(system, user)

    def _tools(self) -> str:
        lines = []
        for spec in self.preset.tools:
            args = ", ".join(a for a in spec.params if a not in spec.fixed)
            lines.append(f"- {spec.name}({args}): {spec.description}")
        return "\n".join(lines)

    def _llm_turn(
        self, chat: ToolChat, observation: dict[str, Any], new: list[dict[str, Any]]
    ) -> ToolCall | None:
        for result in new:
            chat.say(self.observed(result))
        if observation["last_action_error"]:
            chat.say(str(observation["last_action_error"]))
        if turns_left(observation) <= 1:  # the released last iteration
            chat.say(prompts.render("dvd/finish"))
        return chat.call()

    # -- the offline heuristic -------------------------------------------------------------

    def _reset_plan(self, observation: dict[str, Any]) -> None:
        self._step = 0

    def _offline_call(self, observation: dict[str, Any]) -> ToolCall | None:
        if turns_left(observation) <= 1:
            return None
        question = str(observation["question"])
        step, self._step = self._step, self._step + 1
        whole = Interval(0.0, duration_of(observation))
        if step == 0:
            return self._call("global_browse_tool", whole, question)
        if step == 1:
            return self._call("clip_search_tool", whole, question)
        ranked = self._ranked_clips(observation)
        if step - 2 < min(self.inspect, len(ranked)):
            return self._call("frame_inspect_tool", ranked[step - 2].span, question)
        return None

    def _call(self, name: str, span: Interval, query: str) -> ToolCall:
        spec = self.preset.spec(name)
        assert spec is not None
        return span_call(self.preset, spec, span, self.units, query=query)

    def _ranked_clips(self, observation: dict[str, Any]) -> list[ClipLine]:
        """The clips the searches found: those naming an option first, then by relevance."""
        found: dict[int, ClipLine] = {}
        for result in observation["results"]:
            if str(result["tool"]) == "clip_search_tool":
                found.update((c.clip, c) for c in clip_lines(str(result["text"])))
        clips = sorted(found.values(), key=lambda c: c.clip)
        if not clips:
            return []
        question = str(observation["question"])
        options = parse_options(observation["options"])
        relevance = self.reasoner.relevance(question, options, [c.caption for c in clips])
        named = [
            sum(option_votes([("caption", c.caption)], options, {})) > 0 if options else False
            for c in clips
        ]
        order = sorted(range(len(clips)), key=lambda i: (not named[i], -relevance[i], i))
        return [clips[i] for i in order]
