"""Summary tables: one row per (env, policy), a per-category breakdown, bootstrap CIs."""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from policies.registry import OFFLINE_SUFFIX
from video_env.metrics.bootstrap import cluster_bootstrap_ci
from video_env.provenance import perception_label

COLUMNS = (
    "env", "policy", "presets", "rules", "perception", "episodes", "failures", "accuracy",
    "acc_ci_low", "acc_ci_high", "score", "mean_gtou", "mean_iou", "mean_reward", "mean_turns",
    "mean_frames", "mean_vlm_calls", "mean_llm_calls", "mean_llm_tokens", "mean_visual_tokens",
    "mean_model_tokens", "llm_reply_failures", "mean_tool_calls", "mean_frames_shown",
    "mean_visual_tokens_shown", "mean_tool_iou", "index_model_tokens",
)  # fmt: skip
#: Wall time depends on the machine and its load: kept out of ``summary.csv`` (which is
#: byte-identical across machines for one set-up) in ``timing.csv``.
TIMING_COLUMNS = ("env", "policy", "presets", "rules", "episodes", "mean_wall_s")
CATEGORY_COLUMNS = ("env", "policy", "presets", "rules", "category", "episodes", "accuracy",
                    "acc_ci_low", "acc_ci_high", "mean_gtou")  # fmt: skip


def _mean(values: Iterable[float | None]) -> float:
    """Mean of the numbers among ``values`` (``None`` and hand-edited non-numbers skipped)."""
    kept = [float(v) for v in values if isinstance(v, (int, float))]
    return float(np.mean(kept)) if kept else float("nan")


def model_tokens(record: dict[str, Any]) -> int:
    """The unified cost of an episode: tokens processed by any model.

    Visual tokens of the VLM, the captioner and CLIP (each at its own input size and
    patching: Qwen2.5-VL's 28-pixel merged patches, CLIP ViT-B/32's 32-pixel patches plus a
    class token) plus the LLM's prompt and completion tokens. A count of model inputs and
    outputs, not of compute: a CLIP token costs far less than a 7B VLM's.
    """
    return sum(
        _count(record.get(k)) for k in ("visual_tokens", "prompt_tokens", "completion_tokens")
    )


#: Suffix of the policy name of episodes in which no LLM reply was used although the
#: policy asked (their decisions all came from the policy's offline fallback).
FALLBACK_SUFFIX = " (offline fallback)"


def policy_label(record: dict[str, Any]) -> str:
    """The policy name a record is shown under: the name the run was given.

    That is the name typed on the command line (or the registry's, for ``all``), read
    from the record's job key, so ``videoscout:pixel-dapo`` stays ``videoscout:pixel-dapo``
    whatever the policy calls itself; what the policy adds to it goes to other columns
    (:func:`presets`, :func:`rules_of`). Two markers stay on the name, as they say which
    reasoner answered: ``[offline]`` for a policy that ran its offline reasoner, and
    :data:`FALLBACK_SUFFIX` for an LLM policy that used no LLM reply in the episode
    (``llm_reply_failures`` but no ``llm_replies_used``; a call that succeeded but whose
    reply was rejected is no used reply; records written before ``llm_replies_used``
    existed fall back on ``llm_calls``). Records without a job key keep their own name.
    """
    typed, built = typed_name(record), str(record["policy"])
    policy = typed + (
        OFFLINE_SUFFIX if OFFLINE_SUFFIX in built and OFFLINE_SUFFIX not in typed else ""
    )
    if not _count(record.get("llm_reply_failures")):
        return policy
    used = record.get("llm_replies_used")
    none_used = not _count(used) if used is not None else not _count(record.get("llm_calls"))
    return policy + FALLBACK_SUFFIX if none_used else policy


def typed_name(record: dict[str, Any]) -> str:
    """The policy's name as the run was given it (its job key's), else the record's own."""
    _, sep, rest = str(record.get("job") or "").partition("|")
    return (rest.partition("|")[0] if sep else "") or str(record["policy"])


def presets(record: dict[str, Any]) -> str:
    """What the policy's own name adds to the name it was given (``question-first+guided``).

    A checkpoint's recorded prompt layout or a decoding setting makes the policy call
    itself ``<name>+question-first``; the table keeps ``<name>`` and shows the presets in
    their own column. Empty when the policy adds nothing (or names itself otherwise).
    """
    typed = typed_name(record).partition("?")[0].replace(OFFLINE_SUFFIX, "")
    built = str(record["policy"]).partition("?")[0].replace(OFFLINE_SUFFIX, "")
    return built[len(typed) + 1 :] if built.startswith(typed + "+") else ""


def rules_of(record: dict[str, Any]) -> str:
    """The rules an episode was played under: Pacing's, or the Tools preset; else empty.

    Pacing's rules are named ``paper``, ``pixel-vlm``...; a Tools preset ``longvt``...

    Any difference in the rules (frames, sizes, chunk table, memory budget, reward
    weights) gives them another name (``pacing_rules``, from
    :func:`video_env.envs.pacing_rules.rules_name`), so a run that mixes a checkpoint
    trained on the pixel VLM's 16:9 frames with a hub model on the paper's never averages
    or ranks them as one setting: the rules are part of a row's key.
    """
    rules = record.get("pacing_rules", record.get("tools_preset"))
    return rules if isinstance(rules, str) else ""


def row_key(record: dict[str, Any]) -> tuple[str, str, str, str]:
    """The (env, policy, presets, rules) a record is counted under."""
    return str(record["env"]), policy_label(record), presets(record), rules_of(record)


def row_label(row: dict[str, Any]) -> str:
    """A row's name in plots: its policy, then its presets and other-than-paper rules."""
    extra = [str(row["presets"])] if row.get("presets") else []
    if row.get("rules") not in (None, "", "paper"):
        extra.append(f"{row['rules']} rules")
    return str(row["policy"]) + (f" ({', '.join(extra)})" if extra else "")


def record_label(record: dict[str, Any]) -> str:
    """A record's row name in plots (:func:`row_label` of its :func:`row_key`)."""
    _, policy, preset, rules = row_key(record)
    return row_label({"policy": policy, "presets": preset, "rules": rules})


def with_known_rules(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records``, where one lacks its rules, given those of its (env, typed policy).

    A job lost with its worker has a record made without its env or policy: no
    ``pacing_rules`` or ``tools_preset``, and the typed name where the others carry
    the built one (``videoseek[offline]``). When every other record of that env and
    policy names one set of rules, it ran under them too, and is counted (as a failure)
    in their row, under their built name; when they name several, it gets ``unknown``
    (its own row), never a guess.
    """
    known: dict[tuple[Any, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for r in records:
        found = known[(r.get("env"), typed_name(r))]
        for name in _RULE_FIELDS:
            if isinstance(r.get(name), str):
                found[name].add(r[name])
        if not r.get("lost"):
            found["policy"].add(str(r["policy"]))
    out = []
    for r in records:
        found = known[(r.get("env"), typed_name(r))]
        fill = {
            name: next(iter(found[name])) if len(found[name]) == 1 else "unknown"
            for name in _RULE_FIELDS
            if name not in r and found[name]
        }
        if r.get("lost") and len(found["policy"]) == 1:
            fill["policy"] = next(iter(found["policy"]))
        out.append({**r, **fill} if fill else r)
    return out


#: The record fields that name the rules an episode was played under.
_RULE_FIELDS = ("pacing_rules", "tools_preset")


def _count(value: Any) -> int:
    """An integer count from a record field (anything else: 0)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return int(value) if ok else 0


def summarize(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (env, policy) with the columns of :data:`COLUMNS`.

    Accuracy is over episodes whose answer is known (``correct`` not None); failed
    episodes count as wrong and are also counted in ``failures``. A row whose every
    episode failed measured nothing: its accuracy, score, GToU, IoU and reward are NaN
    (empty in CSV, ``–`` in Markdown), not 0. ``mean_reward`` is the
    mean episode return (every step's reward, invalid-action penalties included); ``score``
    is the judge's 0-5 score; ``mean_model_tokens`` the unified cost of
    :func:`model_tokens`. ``llm_reply_failures`` sums the LLM replies the policy
    could not use (failed calls, unusable text); episodes that ran wholly on an offline
    fallback get their own row (see :func:`policy_label`).
    """
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in with_known_rules(records):
        groups[row_key(r)].append(r)
    rows = []
    for (env, policy, preset, rules), rs in sorted(groups.items()):
        rows.append({
            "env": env,
            "policy": policy,
            "presets": preset,
            "rules": rules,
            "perception": perception_label(rs),
            "episodes": len(rs),
            "failures": sum(1 for r in rs if r.get("error")),
            **_accuracy(rs),
            "score": _mean(r.get("score") for r in rs if r.get("correct") is not None),
            "mean_gtou": _mean(r.get("gtou") for r in rs),
            "mean_iou": _mean(r.get("iou") for r in rs),
            "mean_reward": _mean(r.get("return", r.get("reward")) for r in rs),
            "mean_turns": _mean(r.get("turns") for r in rs),
            "mean_frames": _mean(r.get("frames") for r in rs),
            "mean_vlm_calls": _mean(r.get("vlm_calls") for r in rs),
            "mean_llm_calls": _mean(r.get("llm_calls") for r in rs),
            "mean_llm_tokens": _mean(
                _count(r.get("prompt_tokens")) + _count(r.get("completion_tokens")) for r in rs
            ),
            "mean_visual_tokens": _mean(r.get("visual_tokens") for r in rs),
            "mean_model_tokens": _mean(model_tokens(r) for r in rs),
            "mean_wall_s": _mean(r.get("wall_s") for r in rs),
            "llm_reply_failures": sum(_count(r.get("llm_reply_failures")) for r in rs),
            **_tool_costs(rs),
        })  # fmt: skip
        if all(r.get("error") for r in rs):  # nothing was measured: n/a, not 0.000
            rows[-1].update(dict.fromkeys(NOT_MEASURED, float("nan")))
    return rows


def _tool_costs(records: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The Tools env's cost axis (NaN for other envs, which record none of it).

    Tool calls, the frames and visual tokens delivered to the policy, the temporal IoU of
    the last span chosen, and the caption index's model tokens summed over the row's
    videos (an index is counted once per video, apart from the episodes).
    """
    tools = [r for r in records if isinstance(r.get("tool_calls"), dict)]
    if not tools:
        return dict.fromkeys(TOOL_COLUMNS, float("nan"))
    indexes = {  # one per video: built once, whichever episode (or row) built it
        str(r.get("video_id")): r["index"] for r in tools if isinstance(r.get("index"), dict)
    }
    return {
        "mean_tool_calls": _mean(sum(map(_count, r["tool_calls"].values())) for r in tools),
        "mean_frames_shown": _mean(r.get("frames_shown") for r in tools),
        "mean_visual_tokens_shown": _mean(r.get("visual_tokens_shown") for r in tools),
        "mean_tool_iou": _mean(r.get("tool_iou") for r in tools),
        "index_model_tokens": float(sum(model_tokens(i) for i in indexes.values()))
        if indexes else float("nan"),
    }  # fmt: skip


#: The Tools env's columns (:func:`_tool_costs`).
TOOL_COLUMNS = ("mean_tool_calls", "mean_frames_shown", "mean_visual_tokens_shown",
                "mean_tool_iou", "index_model_tokens")  # fmt: skip
#: Columns left empty (n/a) for a row whose every episode failed.
NOT_MEASURED = ("accuracy", "acc_ci_low", "acc_ci_high", "score", "mean_gtou", "mean_iou",
                "mean_reward")  # fmt: skip


def by_category(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Accuracy (with its clustered bootstrap CI) and GToU per (env, policy, category)."""
    groups: dict[tuple[str, str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in with_known_rules(records):
        key = (*row_key(r), str(r.get("category") or "(none)"))
        groups[key].append(r)
    rows = []
    for (env, policy, preset, rules, category), rs in sorted(groups.items()):
        rows.append({
            "env": env,
            "policy": policy,
            "presets": preset,
            "rules": rules,
            "category": category,
            "episodes": len(rs),
            **_accuracy(rs),
            "mean_gtou": _mean(r.get("gtou") for r in rs),
        })  # fmt: skip
    return rows


def _accuracy(records: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Accuracy over the graded records, with its bootstrap CI clustered by video."""
    graded = [r for r in records if r.get("correct") is not None]
    correct = [bool(r["correct"]) for r in graded]
    low, high = cluster_bootstrap_ci(correct, [str(r.get("video_id")) for r in graded])
    return {"accuracy": _mean(correct), "acc_ci_low": low, "acc_ci_high": high}


def to_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """CSV text."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _fmt(row[k], csv_mode=True) for k in columns})
    return out.getvalue()


#: Decimals of the Markdown tables per column, one precision a column (as the README's
#: table): fractions 3, counts per episode 1, frames and tokens whole.
MARKDOWN_DECIMALS = {
    **dict.fromkeys(("accuracy", "acc_ci_low", "acc_ci_high", "mean_gtou", "mean_iou",
                     "mean_reward", "score"), 3),
    **dict.fromkeys(("mean_turns", "mean_vlm_calls", "mean_llm_calls", "mean_wall_s"), 1),
    **dict.fromkeys(("mean_frames", "mean_llm_tokens", "mean_visual_tokens",
                     "mean_model_tokens"), 0),
}  # fmt: skip


def to_markdown(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A Markdown table, each column at one precision (:data:`MARKDOWN_DECIMALS`)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += [
        "| " + " | ".join(_fmt(row[k], decimals=MARKDOWN_DECIMALS.get(k)) for k in columns) + " |"
        for row in rows
    ]
    return "\n".join(lines) + "\n"


def _fmt(value: Any, csv_mode: bool = False, decimals: int | None = None) -> str:
    if isinstance(value, float):
        if value != value:  # nan
            return "" if csv_mode else "–"
        if csv_mode:
            return f"{value:.4f}"
        if decimals is not None:
            return f"{value:.{decimals}f}"
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


#: Columns of the compact table printed after a run (:func:`brief_columns` adds the
#: presets and rules where a row has any).
BRIEF = ("env", "policy", "perception", "episodes", "failures", "accuracy", "acc_ci_low",
         "acc_ci_high", "mean_gtou", "mean_vlm_calls", "mean_llm_calls", "mean_frames",
         "mean_model_tokens")  # fmt: skip


def brief_columns(rows: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """:data:`BRIEF`, with ``presets`` and ``rules`` after the policy where they tell rows apart."""
    extra = tuple(
        key for key, plain in (("presets", ("",)), ("rules", ("", "paper")))
        if any(row.get(key) not in plain for row in rows)
    )  # fmt: skip
    at = BRIEF.index("policy") + 1
    return BRIEF[:at] + extra + BRIEF[at:]
