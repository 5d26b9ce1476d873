"""Text actions of the Tools env: each system's reply format, parsed into a ToolCall.

One :class:`ToolsActionSet` per preset reads the format its system's model writes:

- ``hermes``: ``<tool_call>{"name": "crop_video", "arguments": {...}}</tool_call>``, and
  ``<answer>B</answer>`` (LongVT, TimeSearch-R; Qwen's chat template);
- ``json``: an OpenAI-style function call written as JSON, ``{"name": ..., "arguments":
  {...}}`` (``arguments`` may be a JSON string, as the API sends it; VideoSeek, DVD,
  LongVidSearch);
- ``video_zoom``: ``<video_zoom>{"segment": [s, e], "fps": f}</video_zoom>`` (VideoZoomer);
- ``retrieve``: ``<retrieve>a,b</retrieve>`` (Video-MTR);
- ``action``: ``<action>choose frames between A and B</action>`` and ``<action>get frame
  number at time MM:SS</action>`` (FrameThinker);
- ``calls``: video-env's ``name(arg, ..., key=value)`` (the seed presets).

Tag formats answer with ``<answer>...</answer>``; the others call their answer tool. The
lenient parse takes the last complete call of the reply (prose and ``<think>`` around it are
ignored); ``strict`` wants exactly one call and nothing else but a ``<think>`` block.
Every scan is linear in the reply's length (:mod:`video_env.actions.reply_text`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from video_env.actions.base import ActionSet
from video_env.actions.parsing import (
    ActionParseError,
    Call,
    find_calls,
    find_json_action,
    strip_fences,
    unquote,
)
from video_env.actions.reply_text import (
    clean_text,
    is_blank,
    tag_blocks,
    text_outside,
    without_think,
)
from video_env.actions.types import ToolCall
from video_env.envs.tool_rules import ToolPreset, ToolSpec

_CHOOSE = re.compile(r"^\s*choose\s+frames?\s+between\s+(\S+)\s+and\s+(\S+?)\s*\.?\s*$", re.I)
_LOCATE = re.compile(r"^\s*get\s+frame\s+number\s+at\s+time\s+(\S+?)\s*\.?\s*$", re.I)
_ANSWER_ACTION = re.compile(r"^\s*output\s+answer\s*:\s*(.+?)\s*$", re.I | re.S)
_KEYWORD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$", re.S)


class ToolsActionSet(ActionSet[ToolCall]):
    """Parses a preset's reply format into :class:`~video_env.actions.ToolCall` values.

    Args:
        preset: The Tools preset whose tools and reply format to read.
    """

    def __init__(self, preset: ToolPreset) -> None:
        self.preset = preset
        self.names = tuple(s.name.lower() for s in preset.tools if " " not in s.name)

    # -- documentation ---------------------------------------------------------------

    def describe(self) -> str:
        """The tools and how to call them, in the preset's format (for a prompt)."""
        lines = ["Tools:"]
        for spec in self.preset.tools:
            args = ", ".join(a for a in spec.params if a not in spec.fixed)
            lines.append(f"- {spec.name}({args}): {spec.description or spec.tool}")
        lines.append(f"Write one call per reply, like: {self.example()}")
        if self.preset.reply_format == "action":
            lines.append("Answer with <action>output answer: X</action>.")
        elif self.preset.reply_format in _TAG_FORMATS:
            lines.append("Answer with <answer>your answer</answer>.")
        return "\n".join(lines)

    def example(self) -> str:
        """One valid call in the preset's format."""
        spec = next(s for s in self.preset.tools if s.tool != "answer")
        return format_call(self.preset, spec.name, _example_arguments(spec))

    def answer_reply(self, text: str) -> str:
        """An answer written as the preset's system writes it (``<answer>B</answer>``...)."""
        spec = self.preset.answer_tool
        return format_call(self.preset, spec.name, {spec.text_argument or "answer": text})

    # -- parsing ---------------------------------------------------------------------

    def parse(self, text: str, strict: bool = False) -> ToolCall:
        """The reply's tool call (the last one; exactly one when ``strict``).

        Lone surrogates in its text (a raw one, or a JSON escape of half a pair, as a
        model cut mid-character writes) become U+FFFD, so the call, the answer
        and the episode record stay encodable as UTF-8.

        Raises:
            ActionParseError: If the reply holds no readable call.
        """
        call = self._parse(text, strict)
        return ToolCall(clean_text(call.name), clean_text(call.arguments))

    def _parse(self, text: str, strict: bool) -> ToolCall:
        if not isinstance(text, str):
            raise TypeError(f"actions are parsed from str, got {type(text).__name__}")
        fmt = self.preset.reply_format
        if fmt == "calls":
            return super().parse(without_think(text), strict)
        if fmt == "json":
            return self._parse_json(text, strict)
        text = without_think(text)  # a tag named in the reasoning is no call
        blocks = tag_blocks(text, (*_TAG_FORMATS[fmt], "answer"))
        if not blocks:
            raise ActionParseError(f"no tool call or answer found; write one like {self.example()}")
        if strict:
            rest = text_outside(text, blocks)
            if len(blocks) != 1 or rest.strip():
                raise ActionParseError(
                    f"strict mode: the reply must be one call such as {self.example()}"
                )
        tag, body = blocks[-1][0], blocks[-1][3]
        if tag == "answer":
            return self._answer(body.strip())
        return self._tag_call(tag, body)

    def _answer(self, text: str) -> ToolCall:
        if is_blank(text):
            raise ActionParseError("the answer is empty")
        spec = self.preset.answer_tool
        text_arg = next(a for a, f in spec.params.items() if f == "text")
        return ToolCall(spec.name, {text_arg: text})

    def _tag_call(self, tag: str, body: str) -> ToolCall:
        if tag == "tool_call":
            return self._named_call(_json_object(body, "<tool_call>"))
        if tag == "video_zoom":
            return ToolCall("video_zoom", _json_object(body, "<video_zoom>"))
        if tag == "retrieve":
            parts = [p.strip() for p in body.split(",")]
            if len(parts) != 2 or not all(parts):
                raise ActionParseError(
                    "write <retrieve>start,end</retrieve> with two frame indices"
                )
            return ToolCall("retrieve", {"start": _number(parts[0]), "end": _number(parts[1])})
        if (match := _CHOOSE.match(body)) is not None:
            return ToolCall(
                "choose frames between",
                {"start": _number(match.group(1)), "end": _number(match.group(2))},
            )
        if (match := _LOCATE.match(body)) is not None:
            return ToolCall("get frame number at time", {"time": match.group(1)})
        if (match := _ANSWER_ACTION.match(body)) is not None:  # FrameThinker's answer
            return self._answer(match.group(1))
        raise ActionParseError(
            "unknown action; write <action>choose frames between A and B</action>, "
            "<action>get frame number at time MM:SS</action> or <action>output answer: X</action>"
        )

    def _named_call(self, record: Mapping[str, Any]) -> ToolCall:
        """``{"name": ..., "arguments": {...}}`` (or OpenAI's ``{"function": {...}}``)."""
        function = record.get("function")
        if isinstance(function, Mapping):
            record = function
        name, arguments = record.get("name"), record.get("arguments", {})
        if not isinstance(name, str) or not name:
            raise ActionParseError('a tool call needs "name": "<tool>"')
        if isinstance(arguments, str):  # the OpenAI API sends arguments as a JSON string
            arguments = _json_object(arguments, "arguments") if arguments.strip() else {}
        if not isinstance(arguments, Mapping):
            raise ActionParseError('"arguments" must be an object of named values')
        return ToolCall(name, dict(arguments))

    def _parse_json(self, text: str, strict: bool) -> ToolCall:
        cleaned = without_think(strip_fences(text)).strip()
        if strict:
            try:
                record = json.loads(cleaned)
            except (ValueError, RecursionError):
                raise ActionParseError(
                    f"strict mode: the reply must be one JSON call such as {self.example()}"
                ) from None
            if not isinstance(record, dict):
                raise ActionParseError("the call must be a JSON object")
            return self._named_call(record)
        found = _last_named_json(cleaned)
        if found is None:
            raise ActionParseError(f"no tool call found; write one like {self.example()}")
        return self._named_call(found)

    def _from_calls(self, calls: list[Call], strict: bool) -> ToolCall:
        if strict and len(calls) != 1:
            raise ActionParseError("give exactly one call")
        call = calls[-1]
        spec = self.preset.spec(call.name)
        if spec is None:  # cannot happen: find_calls looks for the preset's names only
            raise ActionParseError(f"unknown tool {call.name!r}")
        return ToolCall(spec.name, _call_arguments(spec, call.args))

    def _from_json(self, record: Mapping[str, object]) -> ToolCall:
        name = str(record.get("action", ""))
        arguments = {k: v for k, v in record.items() if k != "action"}
        return ToolCall(name, arguments)


_TAG_FORMATS: dict[str, tuple[str, ...]] = {
    "hermes": ("tool_call",),
    "video_zoom": ("video_zoom",),
    "retrieve": ("retrieve",),
    "action": ("action",),
}


def _json_object(body: str, where: str) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        raise ActionParseError(f"the {where} content is not valid JSON") from None
    if not isinstance(value, dict):
        raise ActionParseError(f"the {where} content must be a JSON object")
    return value


def _last_named_json(text: str) -> dict[str, Any] | None:
    """The last JSON object with a ``"name"`` key (OpenAI's ``function`` holds one), if any.

    A video-env style ``{"action": "crop_video", ...}`` is read as the call it names.
    """
    record = find_json_action(text, key="name")
    if record is not None:
        return record
    action = find_json_action(text)
    if action is None:
        return None
    rest = {k: v for k, v in action.items() if k != "action"}
    arguments = rest.get("arguments", {k: v for k, v in rest.items() if k != "arguments"})
    return {"name": action["action"], "arguments": arguments}


def _number(text: str) -> float | int | str:
    """A number from text (an int when it is one); other text is returned as is."""
    cleaned = text.strip().strip("\"'")
    try:
        value = float(cleaned)
    except ValueError:
        return cleaned
    return int(value) if value.is_integer() and "." not in cleaned else value


def _value(arg: str) -> Any:
    """A ``calls`` argument as a JSON-like value: numbers, lists, quoted text, bare text."""
    arg = arg.strip()
    if arg.startswith("[") or arg.startswith("{"):
        try:
            return json.loads(arg)
        except (ValueError, RecursionError):
            return arg
    if arg[:1] == '"':  # JSON text first: its escapes (\\", \\u00e9) read back
        try:
            value = json.loads(arg)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, str):
            return value
    if arg[:1] in "\"'“‘":
        return unquote(arg)
    return _number(arg)


def _call_arguments(spec: ToolSpec, args: tuple[str, ...]) -> dict[str, Any]:
    """Positional arguments in the spec's order, then ``key=value`` ones."""
    order = [a for a in spec.params if a not in spec.fixed]
    arguments: dict[str, Any] = {}
    for i, arg in enumerate(a for a in args if a.strip()):
        keyword = _KEYWORD.match(arg) if not arg.lstrip().startswith(("'", '"')) else None
        if keyword is not None:
            arguments[keyword.group(1)] = _value(keyword.group(2))
        elif i < len(order):
            arguments[order[i]] = _value(arg)
        else:
            raise ActionParseError(f"{spec.name} takes at most {len(order)} arguments: {order}")
    return arguments


def _example_arguments(spec: ToolSpec) -> dict[str, Any]:
    values = {
        "start": 10,
        "end": 40,
        "spans": [10, 40],
        "query": "a red car",
        "n": 8,
        "fps": 0.5,
        "k": 5,
        "clip": 3,
        "clips": [3],
        "time": "01:05",
        "text": "B",
    }
    required = spec.required or ()
    return {a: values[f] for a, f in spec.params.items() if a not in spec.fixed and a in required}


def format_call(preset: ToolPreset, name: str, arguments: Mapping[str, Any]) -> str:
    """A tool call written in the preset's reply format (for prompts and scripted agents)."""
    spec = preset.spec(name)
    fmt = preset.reply_format
    if spec is not None and spec.tool == "answer" and fmt in _TAG_FORMATS:
        text = next(iter(arguments.values()), "")
        return (
            f"<action>output answer: {text}</action>"
            if fmt == "action"
            else f"<answer>{text}</answer>"
        )
    if fmt == "hermes":
        return (
            "<tool_call>"
            + json.dumps({"name": name, "arguments": dict(arguments)})
            + "</tool_call>"
        )
    if fmt == "json":
        return json.dumps({"name": name, "arguments": dict(arguments)})
    if fmt == "video_zoom":
        return "<video_zoom>" + json.dumps(dict(arguments)) + "</video_zoom>"
    if fmt == "retrieve":
        return f"<retrieve>{arguments.get('start')},{arguments.get('end')}</retrieve>"
    if fmt == "action":
        if name == "get frame number at time":
            return f"<action>get frame number at time {arguments.get('time')}</action>"
        start, end = arguments.get("start"), arguments.get("end")
        return f"<action>choose frames between {start} and {end}</action>"
    return f"{name}({_call_arguments_text(spec, arguments)})"


def _call_arguments_text(spec: ToolSpec | None, arguments: Mapping[str, Any]) -> str:
    """``calls`` arguments as :func:`_value` reads them back.

    Positional in the spec's order while none is skipped, then ``key=value``; each value
    as JSON (text past ASCII written as it is).
    """
    order = [a for a in spec.params if a not in spec.fixed] if spec is not None else []
    parts: list[str] = []
    positional = True
    for name in [*order, *(a for a in arguments if a not in order)]:
        if name not in arguments:
            positional = False
            continue
        value = json.dumps(arguments[name], ensure_ascii=False)
        positional = positional and name in order
        parts.append(value if positional else f"{name}={value}")
    return ", ".join(parts)


def find_tool_calls(text: str, names: tuple[str, ...]) -> list[Call]:
    """``name(...)`` calls of the given tools in ``text`` (video-env's own syntax)."""
    return find_calls(text, names)
