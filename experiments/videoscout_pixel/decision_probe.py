"""When a VideoScout student answers: a teacher-forced probe of the answer decision.

``python -m experiments.videoscout_pixel.decision_probe --turns TURNS --models M [M ...]``
takes the multiple-choice turns of a ``lead`` frame teacher's ``turns.jsonl``
(the lab's ``distill --teacher scripted-frames:lead``), whose thought opens with the answer on
the turn it answers (``<think>C (pink): I see …``) and with the scene's name on a turn it
watches on (``<think>Beach. No balloon. Skim.``). On each turn's own prompt (the teacher's
frames and notes), the probe lets each model write the first three tokens of its thought
greedily, as the policy decodes, and reads whether it answers there: an option letter,
then `` (``. In the pixel VLM's tokenizer every scene name opens with its capital as one
token, the same token as an option letter for ``Beach`` (B) and ``Classroom`` (C), so the
decision to answer falls on the second token there. Four kinds of turn:

- ``in view``: the teacher answers, the asked needle on screen (its script knows where
  the needle is; the turn's frames show it);
- ``not in view, lettered scene``: the teacher watches on (a speed or rewatch) in a scene
  whose name opens with one of the question's option letters;
- ``not in view, other scene``: the teacher watches on in any other scene;
- ``end``: the teacher guesses at the end of the video (the needle never seen).

A student that reads the frames answers ``in view`` and not elsewhere. The teacher is a
script with privileged pacing: its turns only choose the prompts. Shares over turns, each
with a 95 % interval clustered by video. Deterministic; about a second a turn per model.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from experiments.videoscout_pixel.letter_probe import (
    docs_block,
    probe_command,
    probe_parser,
    publish,
)
from video_env._optional import require
from video_env.metrics.bootstrap import cluster_bootstrap_ci

__all__ = ["KINDS", "DecisionTurn", "decision_turns", "main", "probe", "table"]

BLOCK = "videoscout-decision-probe"
_PURPOSE = "the VideoScout decision probe"
KINDS = ("in view", "not in view, lettered scene", "not in view, other scene", "end")
_SIGHTED = re.compile(r"<think>[A-Z] \([^)]*\): I see ")
_GUESS = re.compile(r"<think>[A-Z] \([^)]*\)\? ")
_WATCH = re.compile(r"<action>\s*(speed|rewatch)\(")
_OPTIONS = re.compile(r"\nOptions:\n((?:[A-Z]\. [^\n]*\n?)+)")
_DECISION = re.compile(r"(?P<letter>[A-Z]) \(")


@dataclass(frozen=True)
class DecisionTurn:
    """A multiple-choice turn of a ``lead`` teacher.

    Attributes:
        row: The dataset row (prompt with its frames, the teacher's reply).
        video: The video's id (the cluster of the intervals).
        kind: One of :data:`KINDS`.
        letters: The question's option letters.
        first: The first character of the teacher's thought (the answer's letter, or the
            scene name's capital).
    """

    row: dict[str, Any]
    video: str
    kind: str
    letters: str
    first: str


def decision_turns(path: str | Path) -> list[DecisionTurn]:
    """The multiple-choice turns of a ``lead`` teacher's ``turns.jsonl``, by kind.

    Turns in another teacher's style (an answer whose thought does not open with its
    letter) are passed over.
    """
    turns = []
    for line in Path(path).read_text("utf-8").splitlines():
        row = json.loads(line)
        completion = row["completion"]
        reply = completion if isinstance(completion, str) else completion[-1]["content"]
        texts = "".join(
            p["text"] for m in row["prompt"] if isinstance(m["content"], list)
            for p in m["content"] if p["type"] == "text"
        )  # fmt: skip
        options = _OPTIONS.search(texts)
        if options is None or not reply.startswith("<think>") or len(reply) < 8:
            continue  # an open question, or no thought
        letters = "".join(option[0] for option in options.group(1).strip().splitlines())
        first = reply[len("<think>")]
        if _SIGHTED.match(reply):
            kind = "in view"
        elif _GUESS.match(reply):
            kind = "end"
        elif _WATCH.search(reply):
            lettered = first in letters
            kind = f"not in view, {'lettered' if lettered else 'other'} scene"
        else:
            continue
        turns.append(DecisionTurn(row, row["sample_id"].split("/")[0], kind, letters, first))
    return turns


def probe(model_path: str, turns: Sequence[DecisionTurn]) -> list[str | None]:
    """Per turn: the letter the model answers with at the thought's start, or ``None``.

    Args:
        model_path: A VideoScout student's folder (local files only).
        turns: The teacher's turns (:func:`decision_turns`).

    Returns:
        Per turn, the option letter when the model's first three greedy tokens after
        ``<think>`` open an answer (the letter, then `` (``), else ``None``.
    """
    import torch

    from policies.training.turn_inputs import conversation_from_row
    from video_env.backends.hf_generation import encode, prepare_conversations

    transformers = require("transformers", "models", _PURPOSE)
    processor = transformers.AutoProcessor.from_pretrained(model_path, local_files_only=True)
    load = transformers.AutoModelForImageTextToText.from_pretrained
    model = load(model_path, local_files_only=True).eval()
    out: list[str | None] = []
    for turn in turns:
        conversation = conversation_from_row(turn.row).conversation
        texts, images, videos, metas, _ = prepare_conversations(processor, [conversation])
        batch = encode(processor, [texts[0] + "<think>"], images, videos, metas)
        with torch.no_grad():
            ids = model.generate(**batch, max_new_tokens=3, do_sample=False)
        written = processor.tokenizer.decode(ids[0, batch["input_ids"].shape[1] :])
        decision = _DECISION.match(written)
        out.append(decision["letter"] if decision and decision["letter"] in turn.letters else None)
    return out


def table(
    results: dict[str, list[str | None]], turns: Sequence[DecisionTurn]
) -> tuple[str, dict[str, int]]:
    """A markdown table per model, and the turns of each kind.

    Columns: the share of turns of each kind the model answers on; the share of ``in
    view`` turns it answers right; the share of lettered-scene turns it answers with the
    scene's capital. Each with its 95 % interval clustered by the videos of its turns.
    """
    kinds = [k for k in KINDS if any(t.kind == k for t in turns)]
    columns: list[tuple[str, str, Any]] = [
        (f"answers, {k}", k, lambda read, turn: read is not None) for k in kinds
    ]
    columns.append(("right, in view", "in view", lambda read, turn: read == _letter(turn)))
    if "not in view, lettered scene" in kinds:
        columns.append(
            ("the scene's capital, lettered scene", "not in view, lettered scene",
             lambda read, turn: read == turn.first)
        )  # fmt: skip
    lines = ["| model | " + " | ".join(c for c, _, _ in columns) + " |"]
    lines.append("|---|" + "---|" * len(columns))
    for model, reads in results.items():
        cells = []
        for _, kind, judge in columns:
            mine = [(float(judge(r, t)), t.video) for r, t in zip(reads, turns, strict=True)
                    if t.kind == kind]  # fmt: skip
            values, videos = [v for v, _ in mine], [v for _, v in mine]
            low, high = cluster_bootstrap_ci(values, videos)
            cells.append(f"{float(np.mean(values)):.2f} ({low:.2f}–{high:.2f})")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines), {k: sum(t.kind == k for t in turns) for k in kinds}


def _letter(turn: DecisionTurn) -> str | None:
    """The teacher's answer letter on an answer turn."""
    return turn.first if turn.kind in ("in view", "end") else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the probe and print (and with ``--update-docs`` write) its table."""
    parser = probe_parser(__doc__.splitlines()[0], "a lead teacher's turns.jsonl", BLOCK)
    args = parser.parse_args(argv)
    docs_block(parser, args)
    require("torch", "models", _PURPOSE).set_num_threads(2)
    start = time.monotonic()
    turns = decision_turns(args.turns)
    if not any(t.kind == "in view" for t in turns):
        parser.error(f"no sighted MCQ answer turns of a lead teacher in {args.turns}")
    results = {model: probe(model, turns) for model in args.models}
    text, counts = table(results, turns)
    command = probe_command("decision_probe", args)
    kinds = ", ".join(f"{n} {k}" for k, n in counts.items())
    header = (
        f"Generated by `{command}` ({len(turns)} MCQ turns of "
        f"{len({t.video for t in turns})} videos: {kinds}; "
        f"{time.monotonic() - start:.0f} s on this machine): the share of turns on which "
        "the student's greedy thought opens with an answer (an option letter, then ` (`), "
        "each with its 95 % interval clustered by video; the teacher answers on every "
        "`in view` and `end` turn and on no other."
    )
    publish(args, header, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
