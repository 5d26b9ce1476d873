"""The VideoScout policy on the pixel VLM and its fine-tuned descendants, in the pixel world.

Each checkpoint drives VideoScout's policy (``policies/videoscout/policy.py``: the paper's system
prompt, the window's frames as the env shows them, its own notes, the question) in the
Pacing env with pixel observations and the ``pixel-vlm`` pacing preset (the paper's frame
counts at the pixel VLM's 16:9 frames), on the colour / material / object questions of the
pixel-real world's calibration or test videos (both forms). Per checkpoint: accuracy,
mean reward, GToU, frames shown, turns, the rewatch rate and the share of format-valid
turns (a complete Think-Act reply with a legal action), each with a 95 % interval
clustered by video. Results are real inference of the tiny pixel VLM on rendered frames,
labelled ``pixel-vlm`` (docs/pixel_vlm.md), never a real benchmark model's.

    python -m experiments.videoscout_pixel.videoscout_pixel --models MODEL_A MODEL_B --split calib \
        --baselines pacing-1x pacing-2x pacing-4x pacing-threshold

``--baselines`` adds registered pacing policies that read the env's VLM sensor — the same
pixel VLM's answer and confidence on each window — under the same rules and videos (they
write no replies, so their format column is empty).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shlex
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from experiments._docs import update_block
from policies.episode_settings import EpisodeSettings
from policies.training.cli import RULES, split_samples
from policies.training.distill import load_reference_chunks, with_reference_chunks
from policies.training.episodes import (
    EpisodeRun,
    format_valid,
    rewatch_rate,
    run_recorded_episode,
)
from policies.videoscout.prompt import DEFAULT_LAYOUT, END_NOTE_PLACES, PromptLayout
from policies.videoscout.record import trained_layout
from policies.videoscout.think_act_pattern import pattern_id
from policies.videoscout.tools import first_call, format_valid_call, writes_tool_calls
from video_env._seeding import stable_seed
from video_env.actions.parsing import find_calls, window_bounds
from video_env.errors import ConfigError
from video_env.metrics.bootstrap import cluster_bootstrap_ci
from video_env.types import Interval, VideoQA

__all__ = [
    "COLUMNS",
    "baseline_row",
    "build_parser",
    "episode_row",
    "evidence_sighting",
    "format_interval",
    "format_paired",
    "format_profile",
    "format_sighting",
    "format_table",
    "format_tool_profile",
    "format_valid",
    "main",
    "paired_differences",
    "play",
    "play_episodes",
    "policy_rows",
    "profile_line",
    "record_values",
    "run_baseline",
    "run_model",
    "run_tool_model",
    "summarise",
    "tool_episode_row",
]

#: The marked block each split's table replaces (in experiments/videoscout_pixel/LOG.md).
BLOCKS = {
    "calib": ("<!-- videoscout-pixel -->", "<!-- /videoscout-pixel -->"),
    "test": ("<!-- videoscout-pixel-test -->", "<!-- /videoscout-pixel-test -->"),
}

#: A checkpoint named with this suffix is played with format-guided decoding, so one study
#: can pair a checkpoint's decodings.
FORMAT_GUIDED = "+format-guided"

#: The columns of the table, each a per-episode value (mean over episodes).
COLUMNS = ("accuracy", "reward", "gtou", "frames", "turns", "rewatch_rate", "format_valid")


def record_values(model: str, sample: VideoQA, record: dict[str, Any]) -> dict[str, Any]:
    """The table's columns an episode record gives, with the policy, sample and video."""
    return {
        "model": model,
        "sample_id": sample.id,
        "video": str(sample.meta.get("video_id", sample.id.split("/")[0])),
        "accuracy": float(bool(record.get("correct"))),
        "reward": float(record.get("reward") or 0.0),
        "gtou": float(record.get("gtou") or 0.0),
        "frames": float(record.get("frames_shown") or 0),
        "turns": float(record.get("turns") or 0),
        "rewatch_rate": rewatch_rate(record.get("explored") or []),
        "ended_by": record.get("ended_by"),
        "error": record.get("error"),
        **evidence_sighting(sample, record),
    }


def evidence_sighting(sample: VideoQA, record: dict[str, Any]) -> dict[str, bool | None]:
    """Whether the episode's windows met the question's evidence (the study's privilege).

    ``evidence_shown``: some window the env showed overlaps one of the sample's
    ground-truth evidence windows for some time; ``answered_in_view``: the window on screen when the
    policy answered does (``None`` for an episode that did not end by answering, both
    ``None`` for a question without evidence windows). Read
    from the annotation by the study only, never by a policy: it tells a student that
    reads the wrong frames from one that answers before the fact is on screen.
    """
    shown = [Interval(float(w[0]), float(w[1])) for w in record.get("explored") or []]
    evidence = sample.gt_intervals

    def meets(window: Interval) -> bool:  # a shared instant is not an overlap
        return any((o := window.intersection(gt)) is not None and o.length > 0 for gt in evidence)

    if not evidence:  # nothing to meet: neither shown nor missed
        return {"evidence_shown": None, "answered_in_view": None}
    answered = record.get("ended_by") == "answer" and bool(shown)
    return {
        "evidence_shown": any(meets(w) for w in shown),
        "answered_in_view": meets(shown[-1]) if answered else None,
    }


def episode_row(model: str, sample: VideoQA, run: EpisodeRun) -> dict[str, Any]:
    """One VideoScout episode's values (the table's columns) with its replies."""
    replies = [t.reply for t in run.turns]
    valid = [format_valid(r) for r in replies]
    return {
        **record_values(model, sample, run.record),
        "format_valid": sum(valid) / len(valid) if valid else 0.0,
        "replies": replies,
    }


def baseline_row(name: str, sample: VideoQA, record: dict[str, Any]) -> dict[str, Any]:
    """One fixed-schedule (or SB3) episode's values; it writes no replies, so no format."""
    return {**record_values(name, sample, record), "format_valid": None}


def run_baseline(
    name: str,
    samples: Sequence[VideoQA],
    rules_name: str = "pixel-vlm",
    perception: Any = None,
    max_turns: int = 64,
    log: Any = print,
) -> list[dict[str, Any]]:
    """Every sample's episode with the registered pacing policy ``name`` (``pacing-1x``...).

    The policy reads the env's VLM sensor: the pixel VLM's answer and confidence on each
    window (``Perception.pixel_vlm()`` unless ``perception`` is given), so its rows share
    the VideoScout policy's perception, rules and videos.
    """
    from policies.registry import make
    from video_env.envs.perception import Perception

    policy = make(name)
    env_kwargs = {  # the study's rules and perception for every baseline
        **policy.env_kwargs.get("pacing", {}),
        "rules": RULES[rules_name](),
        "perception": perception or Perception.pixel_vlm(),
    }
    row = partial(baseline_row, name)
    return play_episodes(policy, samples, env_kwargs, row, max_turns=max_turns, log=log)


def play_episodes(
    policy: Any,
    samples: Sequence[VideoQA],
    env_kwargs: dict[str, Any],
    row: Callable[[VideoQA, dict[str, Any]], dict[str, Any]],
    *,
    max_turns: int,
    log: Any = print,
) -> list[dict[str, Any]]:
    """``row(sample, record)`` of ``policy``'s episode on each sample, in a fresh Pacing env.

    Every policy of the study plays each question under the same seed.
    """
    from policies.runner import run_episode
    from video_env.envs.pacing import PacingEnv

    rows = []
    for i, sample in enumerate(samples, start=1):
        env = PacingEnv([sample], **env_kwargs)
        try:
            record = run_episode(
                env,
                policy,
                seed=stable_seed("videoscout-pixel", sample.id) % 2**31,
                options={"sample": sample},
                max_steps=max_turns,
            )
        finally:
            env.close()
        rows.append(row(sample, record))
        if i % 10 == 0 or i == len(samples):
            log(f"{policy.name}: {i}/{len(samples)} episodes")
    return rows


def model_settings(
    settings: dict[str, Any], layout: PromptLayout, guided: bool, format_guided: bool = False
) -> dict[str, Any]:
    """A checkpoint's cache key: the study's settings, its prompt's layout and decoding.

    The place enters only when not ``window`` (``off`` as ``plain_prompt``, its earlier
    name), decoding only when guided and the question's place only when first, so the
    keys of blocks played before these settings existed stay valid.
    """
    keyed = dict(settings)
    if layout.end_note == "off":
        keyed["plain_prompt"] = True
    elif layout.end_note != "window":
        keyed["end_note"] = layout.end_note
    if guided:
        keyed["guided"] = True
    if format_guided:
        keyed["format_guided"] = pattern_id()  # the pattern's form, not just "on"
    if layout.question_first:
        keyed["question_first"] = True
    return keyed


def decoding(spec: str, guided: bool, format_guided: bool) -> tuple[str, bool, bool]:
    """A ``--models`` entry's checkpoint and decoding: ``(path, guided, format_guided)``.

    The study's flags, but an entry ending in :data:`FORMAT_GUIDED` is format-guided, and
    a format-guided one is not also keyed as guided (the format's guide holds the
    actions').
    """
    model = spec.removesuffix(FORMAT_GUIDED)
    format_guided = format_guided or model != spec
    return model, guided and not format_guided, format_guided


def run_model(
    model: str,
    samples: Sequence[VideoQA],
    rules_name: str = "pixel-vlm",
    max_turns: int = 16,
    max_new_tokens: int = 256,
    log: Any = print,
    layout: PromptLayout = DEFAULT_LAYOUT,
    guided: bool = False,
    format_guided: bool = False,
    name: str | None = None,
) -> list[dict[str, Any]]:
    """Every sample's episode with ``model`` as VideoScout's policy (greedy), named ``name``.

    ``layout`` is VideoScout's prompt layout: its ``end_note`` ``off`` plays the plain
    prompt, as every block generated before the note existed did; ``question_first`` puts
    the question before the frames. ``guided`` plays it with legal-action decoding
    (``VideoScoutPolicy(guided=True)``), ``format_guided`` with format-guided decoding.
    """
    from video_env.backends.transformers_vlm import TransformersVLM

    vlm = TransformersVLM(model, device="cpu")
    settings = EpisodeSettings(
        rules=RULES[rules_name](),
        layout=layout,
        max_turns=max_turns,
        max_new_tokens=max_new_tokens,
        guided=guided,
        format_guided=format_guided,
    )
    rows = []
    for i, sample in enumerate(samples, start=1):
        seed = stable_seed("videoscout-pixel", sample.id) % 2**31
        run = run_recorded_episode(vlm, sample, settings, seed=seed)
        rows.append(episode_row(name or model, sample, run))
        if i % 10 == 0 or i == len(samples):
            log(f"{name or model}: {i}/{len(samples)} episodes")
    return rows


def tool_episode_row(
    model: str, sample: VideoQA, record: dict[str, Any], replies: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """One tool-calling episode's values; a turn is format-valid when its first call parses."""
    valid = [format_valid_call(r) for r in replies]
    return {
        **record_values(model, sample, record),
        "format_valid": sum(valid) / len(valid) if valid else 0.0,
        "tool_replies": [
            {"content": r.get("content"), "tool_calls": r.get("tool_calls")} for r in replies
        ],
    }


def run_tool_model(
    model: str,
    samples: Sequence[VideoQA],
    rules_name: str = "pixel-vlm",
    max_turns: int = 16,
    max_new_tokens: int = 256,
    log: Any = print,
    layout: PromptLayout = DEFAULT_LAYOUT,
    name: str | None = None,
) -> list[dict[str, Any]]:
    """Every sample's episode with ``model``, a tool-calling checkpoint, in TRL's chat.

    ``model`` was trained by ``train trl`` or by ``train sft`` on tool chats
    (:func:`~policies.videoscout.tools.writes_tool_calls`); it plays
    :class:`~policies.videoscout.tools.VideoScoutToolPolicy`, greedy, under the same
    rules, videos and seeds as the Think-Act checkpoints.
    """
    from policies.videoscout.tools import VideoScoutToolPolicy
    from video_env.backends.transformers_tool_chat import TransformersToolChat

    label = name or model
    policy = VideoScoutToolPolicy(
        TransformersToolChat(model, device="cpu"),
        rules=RULES[rules_name](),
        layout=layout,
        max_new_tokens=max_new_tokens,
        name=label,
    )

    def row(sample: VideoQA, record: dict[str, Any]) -> dict[str, Any]:
        replies = policy.replies if record.get("llm_calls") else []  # none: reset failed
        return tool_episode_row(label, sample, record, replies)

    env_kwargs = dict(policy.env_kwargs["pacing"])
    return play_episodes(policy, samples, env_kwargs, row, max_turns=max_turns, log=log)


def policy_rows(
    out: Path,
    policy: str,
    samples: Sequence[VideoQA],
    run: Any,
    settings: dict[str, Any],
    log: Any = print,
) -> tuple[list[dict[str, Any]], bool]:
    """``policy``'s episodes: ``run(samples)``, kept in ``out`` and reused on a rerun.

    Each policy's rows are written to ``out/policies/<policy>.json`` (with the study's
    ``settings``) as soon as they are done; a later run with the same settings over the
    same questions reads them instead of playing them again (delete the file to replay),
    so a long study resumes where it stopped.

    Returns:
        The rows, and whether they were read from an earlier run.
    """
    path = out / "policies" / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', policy).strip('_')}.json"
    key = {"policy": policy, "settings": settings, "samples": [s.id for s in samples]}
    if path.is_file():
        kept = json.loads(path.read_text("utf-8"))
        if kept.get("key") == key:
            log(f"{policy}: {len(kept['rows'])} episodes reused from {path}")
            return list(kept["rows"]), True
    rows: list[dict[str, Any]] = run(samples)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"key": key, "rows": rows}) + "\n", "utf-8")
    return rows, False


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per model and column: the mean and its 95 % interval clustered by video."""
    out: dict[str, dict[str, Any]] = {}
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        videos = [r["video"] for r in mine]
        cells: dict[str, Any] = {"episodes": len(mine)}
        for column in COLUMNS:
            if any(r[column] is None for r in mine):  # not defined for this policy
                cells[column] = None
                continue
            values = [float(r[column]) for r in mine]
            low, high = cluster_bootstrap_ci(values, videos)
            cells[column] = [round(float(np.mean(values)), 3), round(low, 3), round(high, 3)]
        out[model] = cells
    return out


def paired_differences(
    rows: Sequence[dict[str, Any]], first: str, second: str
) -> dict[str, list[float]]:
    """Per column, ``second`` − ``first`` over the questions both played: mean and 95 % CI.

    The interval is clustered by video (questions of one video move together), the
    paired test the issue's targets ask for; columns either policy lacks are left out.

    Raises:
        ValueError: If the two policies share no question.
    """
    mine = {p: {r["sample_id"]: r for r in rows if r["model"] == p} for p in (first, second)}
    ids = [i for i in mine[first] if i in mine[second]]
    if not ids:
        raise ValueError(f"{first} and {second} share no question")
    videos = [mine[first][i]["video"] for i in ids]
    out: dict[str, list[float]] = {}
    for column in COLUMNS:
        pairs = [(mine[first][i].get(column), mine[second][i].get(column)) for i in ids]
        if any(a is None or b is None for a, b in pairs):
            continue  # a column either policy lacks (or a row type without it)
        diffs = [float(b) - float(a) for a, b in pairs]  # type: ignore[arg-type]
        low, high = cluster_bootstrap_ci(diffs, videos)
        out[column] = [round(float(np.mean(diffs)), 3), round(low, 3), round(high, 3)]
    return out


def format_interval(values: Sequence[float]) -> str:
    """A signed difference with its interval: ``+0.13 (+0.02 to +0.27)``.

    Args:
        values: The mean, the interval's low and its high end.
    """
    mean, low, high = values
    return f"{mean:+.2f} ({low:+.2f} to {high:+.2f})"


def format_paired(diffs: dict[str, list[float]], first: str, second: str) -> str:
    """One Markdown line of :func:`paired_differences`."""
    cells = ", ".join(
        f"{column.replace('_', ' ')} {format_interval(values)}" for column, values in diffs.items()
    )
    return f"Paired, {second} − {first} (95 % interval clustered by video): {cells}."


#: An answer call's opening, and its text as an option letter or as a word.
_ANSWER_OPENING = re.compile(r"answer\(")
_LETTER_ANSWER = re.compile(r'answer\(\s*"[A-Z]"')
_WORD_ANSWER = re.compile(r'answer\(\s*"[a-z][a-z \'-]*"')
#: A reply's action call after its notes: the name, and a speed's factor.
_ACTION_CALL = re.compile(r"</memory>\s*<action>\s*(speed|rewatch|answer)\s*\(\s*(\d+x)?", re.I)


def format_profile(rows: Sequence[dict[str, Any]], model: str, name: str) -> str:
    """One Markdown line: how ``model``'s episodes ended and its valid turns by turn index.

    The share of valid replies at each turn index (over the episodes that reached it)
    tells a policy that derails as its notes grow from one that fails at a particular
    state, e.g. the end of the video, where only an answer is legal. Then the valid
    replies and the right answers by question form (the pixel splits' ids end in it),
    the actions the replies wrote after their notes (``other``: none found), how many
    replies followed a malformed one (not format-valid) and how many of those were
    valid (a policy that never saw the env's message about a failed reply may not
    recover from it), and the evidence windows of their answer calls in order and
    reversed (start after end), and the answer calls on open questions by what they
    give: an option letter (an MCQ's form), a word, or neither (a broken call).
    Where the rows record it (:func:`evidence_sighting`), the answers given with the
    question's evidence on screen and elsewhere, with the right ones of each.
    """
    mine = [r for r in rows if r["model"] == model]
    endings, turns, by_form, right = _profile_counts(mine, "replies", format_valid)
    actions = Counter(_action_name(reply) for row in mine for reply in row.get("replies") or [])
    acts = ", ".join(f"{a} {n}" for a, n in sorted(actions.items()))
    spans = [_answer_window(reply) for row in mine for reply in row.get("replies") or []]
    after_slip = [
        format_valid(reply)
        for row in mine
        for earlier, reply in itertools.pairwise(row.get("replies") or [])
        if not format_valid(earlier)
    ]
    parts = (_open_answer_forms(mine), format_sighting(mine))
    extra = "".join(f"; {part}" for part in parts if part)
    return (
        f"{name}: episodes ended by {endings}; valid replies by turn ({turns}) and by "
        f"question form ({by_form}); right answers by question form ({right}); actions "
        f"written ({acts}); replies after a malformed one {len(after_slip)}, valid "
        f"{sum(after_slip)}; {_window_order(spans)}{extra}."
    )


def _window_order(spans: Sequence[tuple[float, float] | None]) -> str:
    """``answer windows in order N, reversed M`` (start after end) over the answer calls."""
    windows = [span for span in spans if span is not None]
    reversed_ = sum(start > end for start, end in windows)
    return f"answer windows in order {len(windows) - reversed_}, reversed {reversed_}"


def _profile_counts(
    mine: Sequence[dict[str, Any]], key: str, valid: Callable[[Any], bool]
) -> tuple[str, str, str, str]:
    """A profile's common parts over ``mine``'s replies under ``key``, judged by ``valid``.

    Returns:
        How the episodes ended, the valid replies by turn index and by question form, and
        the right answers by question form, each as the profile line writes it.
    """
    ended = Counter(str(r["ended_by"]) for r in mine)
    by_turn: dict[int, list[bool]] = {}
    by_form: dict[str, list[bool]] = {}
    right: dict[str, list[float]] = {}
    for row in mine:
        form = _question_form(row)
        right.setdefault(form, []).append(row["accuracy"])
        for i, reply in enumerate(row.get(key) or []):
            ok = valid(reply)
            by_turn.setdefault(i + 1, []).append(ok)
            by_form.setdefault(form, []).append(ok)
    return (
        ", ".join(f"{why} {n}" for why, n in ended.most_common()),
        ", ".join(f"{i}: {sum(v) / len(v):.2f}" for i, v in sorted(by_turn.items())),
        ", ".join(f"{form} {sum(v) / len(v):.2f}" for form, v in sorted(by_form.items()) if v),
        ", ".join(f"{form} {sum(v):.0f}/{len(v)}" for form, v in sorted(right.items())),
    )


def format_tool_profile(rows: Sequence[dict[str, Any]], model: str, name: str) -> str:
    """:func:`format_profile` for a tool-calling checkpoint's episodes.

    How its episodes ended, its well-formed turns (a first tool call that parses into a
    Pacing action) by turn index and by question form, its right answers by question
    form, the tools its turns called (``speed`` with its factor; ``none``: no call), the
    evidence windows of its ``answer`` calls in order and reversed (start after end; the
    env judges a reversed one invalid), and where the rows record it, the answers given
    with the evidence on screen and elsewhere.
    """
    mine = [r for r in rows if r["model"] == model]
    endings, turns, by_form, right = _profile_counts(mine, "tool_replies", format_valid_call)
    replies = [reply for row in mine for reply in row.get("tool_replies") or []]
    called = Counter(_tool_name(reply) for reply in replies)
    tools = ", ".join(f"{tool} {n}" for tool, n in sorted(called.items()))
    windows = _window_order([_tool_answer_window(reply) for reply in replies])
    sighting = format_sighting(mine)
    return (
        f"{name}: episodes ended by {endings}; well-formed tool calls by turn ({turns}) and "
        f"by question form ({by_form}); right answers by question form ({right}); tools "
        f"called ({tools}); {windows}{f'; {sighting}' if sighting else ''}."
    )


def _tool_answer_window(reply: dict[str, Any]) -> tuple[float, float] | None:
    """The start and end of the reply's first call when it is ``answer`` with numbers."""
    call = first_call(reply)
    if call is None or call[0] != "answer" or not isinstance(call[1], dict):
        return None
    try:
        return float(call[1]["start"]), float(call[1]["end"])
    except (KeyError, TypeError, ValueError, OverflowError):  # as answer_action reads them
        return None


def _tool_name(reply: dict[str, Any]) -> str:
    """``speed(2x)``, ``rewatch``, ``answer``, another name as called, or ``none``."""
    call = first_call(reply)
    if call is None:
        return "none"
    name, arguments = call
    if name == "speed" and isinstance(arguments, dict) and "factor" in arguments:
        return f"speed({arguments['factor']}x)"
    return name


def profile_line(rows: Sequence[dict[str, Any]], spec: str, name: str) -> str:
    """The profile line of a ``--models`` entry, by the form its rows' replies took."""
    tools = any("tool_replies" in r for r in rows if r["model"] == spec)
    return (format_tool_profile if tools else format_profile)(rows, spec, name)


def format_sighting(rows: Sequence[dict[str, Any]]) -> str:
    """``answers with the evidence on screen N (right k), elsewhere M (right j)...``.

    Empty for rows played before the study recorded the windows (delete a policy's
    kept file to replay it).
    """
    if not any("answered_in_view" in r for r in rows):
        return ""
    answered = [r for r in rows if r.get("answered_in_view") is not None]
    seen = [r for r in answered if r["answered_in_view"]]
    elsewhere = [r for r in answered if not r["answered_in_view"]]
    shown = sum(bool(r.get("evidence_shown")) for r in rows)
    return (
        f"answers with the evidence on screen {len(seen)} (right "
        f"{sum(r['accuracy'] for r in seen):.0f}), elsewhere {len(elsewhere)} (right "
        f"{sum(r['accuracy'] for r in elsewhere):.0f}); episodes that showed the evidence "
        f"at all {shown} of {len(rows)}"
    )


def _answer_window(reply: str) -> tuple[float, float] | None:
    """The start and end of the reply's last ``answer(text, window)`` call, as written."""
    calls = find_calls(reply, ("answer",))
    return window_bounds(", ".join(calls[-1].args[1:])) if calls else None


def _question_form(row: dict[str, Any]) -> str:
    """A row's question form: the pixel splits' ids end in it (``.../mcq``, ``.../open``)."""
    return str(row["sample_id"]).rsplit("/", 1)[-1]


def _open_answer_forms(rows: Sequence[dict[str, Any]]) -> str:
    """``open-question answer calls: letter N, word M, neither K`` over ``rows``' replies.

    Empty where no reply on an open question calls ``answer``.
    """
    calls = [
        reply
        for row in rows
        if _question_form(row) == "open"
        for reply in row.get("replies") or []
        if _ANSWER_OPENING.search(reply)
    ]
    if not calls:
        return ""
    letters = sum(bool(_LETTER_ANSWER.search(reply)) for reply in calls)
    words = sum(bool(_WORD_ANSWER.search(reply)) for reply in calls)
    return (
        f"open-question answer calls: letter {letters}, word {words}, "
        f"neither {len(calls) - letters - words}"
    )


def _action_name(reply: str) -> str:
    """``speed(2x)``, ``rewatch``, ``answer`` or ``other`` for a reply's action call."""
    match = _ACTION_CALL.search(reply)
    if match is None:
        return "other"
    name = match.group(1).lower()
    return f"speed({match.group(2)})" if name == "speed" and match.group(2) else name


def format_table(summary: dict[str, dict[str, Any]], names: dict[str, str]) -> list[str]:
    """Markdown rows: one per model, each cell the mean with its interval."""
    head = " | ".join(c.replace("_", " ") for c in COLUMNS)
    lines = [f"| policy | episodes | {head} |", "|---|---:|" + "---|" * len(COLUMNS)]
    for model, cells in summary.items():
        values = " | ".join(
            "—" if cells[c] is None else "{:.2f} ({:.2f}–{:.2f})".format(*cells[c]) for c in COLUMNS
        )
        lines.append(f"| {names.get(model, model)} | {cells['episodes']} | {values} |")
    return lines


def build_parser() -> argparse.ArgumentParser:
    """The study's command line (other studies parse their per-split runs with it)."""
    from video_env.pixel import PIXEL_VLM_DIR

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        nargs="*",
        default=[str(PIXEL_VLM_DIR)],
        help=f"checkpoints (one ending in {FORMAT_GUIDED} is played with format-guided decoding)",
    )
    parser.add_argument(
        "--baselines",
        nargs="*",
        default=[],
        help="pacing policies reading the pixel VLM's sensor (pacing-1x, pacing-threshold...)",
    )
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="POLICY=TEXT",
        help="the table's name for a checkpoint or baseline (repeatable)",
    )
    parser.add_argument("--split", choices=sorted(BLOCKS), default="calib")
    parser.add_argument("--videos", type=int, default=4)
    parser.add_argument("--limit", type=int, help="first N questions")
    parser.add_argument("--rules", choices=sorted(RULES), default="pixel-vlm")
    parser.add_argument("--max-turns", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--trajectories", help="a distill run's trajectories.jsonl (timing T)")
    placing = parser.add_mutually_exclusive_group()
    placing.add_argument(
        "--end-note",
        choices=END_NOTE_PLACES,
        help="where VideoScout's prompt says that a window ends the video (off: the plain "
        "prompt; default: the place each checkpoint records, else window)",
    )
    placing.add_argument(
        "--plain-prompt",
        action="store_true",
        help="the same as --end-note off (the name earlier blocks were generated with)",
    )
    parser.add_argument(
        "--guided",
        action="store_true",
        help="legal-action decoding: each reply's action is kept to the turn's legal actions",
    )
    parser.add_argument(
        "--format-guided",
        action="store_true",
        help="format-guided decoding: each whole reply is kept to the Think-Act format with a "
        "legal action (its format-valid turns are the decoder's)",
    )
    parser.add_argument(
        "--question-first",
        action=argparse.BooleanOptionalAction,
        help="the question and its options before the frames (default: as each checkpoint "
        "records, else after them, the paper's order)",
    )
    parser.add_argument("--out", default="runs/videoscout-pixel", help="results folder")
    parser.add_argument(
        "--update-docs", action="store_true", help="rewrite the marked block (in the docs or a log)"
    )
    parser.add_argument(
        "--paired",
        nargs=2,
        action="append",
        default=[],
        metavar=("A", "B"),
        help="print B − A per column over the shared questions, with a clustered CI",
    )
    parser.add_argument(
        "--block",
        help="the docs block's name (default: videoscout-pixel, -test for the test split)",
    )
    return parser


def play(
    args: argparse.Namespace, log: Any = print
) -> tuple[list[VideoQA], list[dict[str, Any]], int]:
    """The episodes of every policy ``args`` names, each kept in ``args.out`` and reused.

    Args:
        args: The study's parsed command line (:func:`build_parser`).
        log: Where progress lines go.

    Returns:
        The questions, every policy's rows, and how many policies' rows were reused.
    """
    samples = split_samples(args.split, args.videos, args.limit)
    if args.trajectories:
        samples = with_reference_chunks(samples, load_reference_chunks(args.trajectories))
    out = Path(args.out)
    keys = ("split", "videos", "limit", "rules", "max_turns", "max_new_tokens", "trajectories")
    settings = {k: getattr(args, k) for k in keys}
    runs: list[tuple[str, Any, dict[str, Any]]] = []
    for spec in args.models:
        model, guided, format_guided = decoding(spec, args.guided, args.format_guided)
        note = "off" if args.plain_prompt else args.end_note
        layout = trained_layout(model, end_note=note, question_first=args.question_first)
        if writes_tool_calls(model):
            if guided or format_guided:
                raise ConfigError(f"{model} writes tool calls: guided decoding is Think-Act's")
            run = partial(run_tool_model, model, rules_name=args.rules, max_turns=args.max_turns,
                          max_new_tokens=args.max_new_tokens, layout=layout, name=spec)  # fmt: skip
            keyed = {**model_settings(settings, layout, False), "tool_calls": True}
            runs.append((spec, run, keyed))
            continue
        run = partial(run_model, model, rules_name=args.rules, max_turns=args.max_turns,
                      max_new_tokens=args.max_new_tokens, layout=layout, guided=guided,
                      format_guided=format_guided, name=spec)  # fmt: skip
        runs.append((spec, run, model_settings(settings, layout, guided, format_guided)))
    for name in args.baselines:
        runs.append((name, partial(run_baseline, name, rules_name=args.rules), settings))
    rows, kept = [], 0
    for policy, run, keyed in runs:
        played, was_kept = policy_rows(out, policy, samples, run, keyed, log=log)
        rows += played
        kept += was_kept
    return samples, rows, kept


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    args = build_parser().parse_args(argv)
    start = time.monotonic()
    out = Path(args.out)
    samples, rows, kept = play(args)
    policies_kept = f"{kept} {'policy' if kept == 1 else 'policies'}"
    reused = (
        f"; the episodes of {policies_kept} kept from earlier runs with the same settings"
        if kept
        else ""
    )
    summary = summarise(rows)
    names = dict(x.split("=", 1) for x in args.label)
    profiles = [profile_line(rows, m, names.get(m, m)) for m in args.models]
    for name in args.baselines:
        sighting = format_sighting([r for r in rows if r["model"] == name])
        profiles += [f"{names.get(name, name)}: {sighting}."] if sighting else []
    paired = [
        format_paired(paired_differences(rows, a, b), names.get(a, a), names.get(b, b))
        for a, b in args.paired
    ]
    (out / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", "utf-8")
    given = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--update-docs"]
    command = shlex.join(["python", "-m", "experiments.videoscout_pixel.videoscout_pixel", *given])
    block = "\n".join(
        [
            f"Generated by `{command}` ({len(samples)} questions of {args.videos} "
            f"{args.split} videos, pacing rules `{args.rules}`, "
            f"{time.monotonic() - start:.0f} s for this run on this machine{reused}); "
            "each cell the mean over "
            "episodes with its 95 % interval clustered by video.",
            "",
            *format_table(summary, names),
            "",
            *(line for p in profiles for line in (p, "")),
            *(line for p in paired for line in (p, "")),
        ]
    )
    print(block)
    print(f"(episodes and summary in {out})")
    if args.update_docs:
        begin, end = (
            (f"<!-- {args.block} -->", f"<!-- /{args.block} -->")
            if args.block
            else BLOCKS[args.split]
        )
        print(f"updated {update_block(begin, end, block)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
