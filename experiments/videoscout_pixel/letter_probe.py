"""Where a VideoScout student's MCQ letter comes from: a teacher-forced probe at the evidence.

``python -m experiments.videoscout_pixel.letter_probe --turns TURNS --models M [M ...]``
takes the answer turns of a ``scenes``- or ``lead``-style frame teacher's ``turns.jsonl``
(the lab's ``distill --teacher scripted-frames:scenes``): turns whose frames show the asked
needle, where the teacher answers a multiple-choice question. For each model it reads the
letter the model puts first at the answer's place (the most likely of the question's
option letters) under six conditions, all on the turn's own frames:

- ``MCQ prompt``: the pixel VLM's own task — FALCON-Bench's MCQ prompt, then the same
  frames, the reply's first token (what the base model was trained on);
- ``first token``: the turn's VideoScout prompt, the letter as the reply's first token
  (no format: where the base model's letter circuit fires, in a foreign prompt);
- ``after <think>``: the reply forced up to ``<think>`` (where a ``lead`` teacher writes
  its letter: five tokens past the first);
- ``thought names it``: the turn's VideoScout prompt (in the layout the distill wrote:
  the paper's, or ``--question-first``), the reply teacher-forced up to ``… I see a
  yellow balloon. Answer: `` (the letter is then a text hop from the fact word written
  in the thought);
- ``thought without it``: the reply forced up to ``<think>Park. Answer: `` (the letter
  from the pixels alone);
- ``action``: the reply forced up to ``<action>answer("`` after a thought and notes that
  do not name the needle (where a guided student writes its letter).

The teacher is a script with privileged pacing; its turns only choose *which* frames the
probe looks at. Chance is one over the options (0.25). Accuracy is over questions, with a
95 % interval clustered by video. Deterministic; about a second a turn per model.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from experiments._docs import block_file, update_block
from video_env._optional import require
from video_env.backends.vlm_prompts import SYSTEM_PROMPT, question_prompt
from video_env.metrics.bootstrap import cluster_bootstrap_ci
from video_env.types import OPTION_LETTERS

__all__ = [
    "CONDITIONS",
    "AnswerTurn",
    "answer_turns",
    "ci_table",
    "docs_block",
    "main",
    "probe_command",
    "probe_parser",
    "publish",
]

BLOCK = "videoscout-letter-probe"
_PURPOSE = "the VideoScout letter probe"
CONDITIONS = (
    "MCQ prompt",
    "first token",
    "after <think>",
    "thought names it",
    "thought without it",
    "action",
)
_QUESTION = re.compile(r"Question: ([^\n]*)\nOptions:\n(.*?)\nAnswer with the letter", re.S)
_ANSWER = re.compile(
    r"<think>(?P<scenes>.*?) I see (?P<statement>.*?)\. Answer: .*?</think>"
    r'<memory>(?P<memory>.*?)</memory><action>answer\("(?P<letter>[A-Z])"'
)
_LEAD_ANSWER = re.compile(
    r"<think>[A-Z] \(.*?\): I see (?P<statement>.*?)\. (?P<scenes>.*?)</think>"
    r'<memory>(?P<memory>.*?)</memory><action>answer\("(?P<letter>[A-Z])"'
)


@dataclass(frozen=True)
class AnswerTurn:
    """A teacher's sighted MCQ answer turn, parsed from ``turns.jsonl``.

    Attributes:
        row: The dataset row (prompt with its frames, the teacher's reply).
        video: The video's id (the cluster of the intervals).
        question: The question.
        options: Its options, in order.
        letter: The right option's letter (the teacher's answer).
        scenes: The thought's scene names (``"Park."``).
        statement: What the thought says it sees (``"a yellow balloon"``).
        memory: The teacher's notes (scene names only).
    """

    row: dict[str, Any]
    video: str
    question: str
    options: tuple[str, ...]
    letter: str
    scenes: str
    statement: str
    memory: str


def answer_turns(path: str | Path) -> list[AnswerTurn]:
    """The sighted MCQ answer turns of a ``scenes`` or ``lead`` teacher's ``turns.jsonl``.

    Turns of other styles are passed over: a ``terse`` teacher names every needle in view
    (its thought's sight is not the asked needle alone, its notes name needles).
    """
    turns = []
    for line in Path(path).read_text("utf-8").splitlines():
        row = json.loads(line)
        completion = row["completion"]
        reply = completion if isinstance(completion, str) else completion[-1]["content"]
        answer = _ANSWER.search(reply) or _LEAD_ANSWER.search(reply)
        texts = [p["text"] for p in row["prompt"][-1]["content"] if p["type"] == "text"]
        question = _QUESTION.search("".join(texts))
        if answer is None or question is None:
            continue
        options = tuple(o.split(". ", 1)[1] for o in question.group(2).splitlines())
        scenes, statement, memory, letter = answer.group("scenes", "statement", "memory", "letter")
        if "I see" in scenes + statement or not memory.startswith("Seen: "):
            continue  # not a scenes-style teacher
        video = row["sample_id"].split("/")[0]
        turns.append(
            AnswerTurn(row, video, question.group(1), options, letter, scenes, statement, memory)
        )
    return turns


def _prefixes(turn: AnswerTurn) -> dict[str, tuple[str, str]]:
    """Each VideoScout condition's reply prefix and how a letter follows it there.

    The teacher writes ``Answer: B (yellow)``: a byte-level tokenizer reads `` B`` after
    the colon (one token, its space in it), and ``B`` after ``answer("``.
    """
    action = f'<think>{turn.scenes}</think><memory>{turn.memory}</memory><action>answer("'
    return {
        "first token": ("", "{}"),
        "after <think>": ("<think>", "{}"),
        "thought names it": (f"<think>{turn.scenes} I see {turn.statement}. Answer:", " {}"),
        "thought without it": (f"<think>{turn.scenes} Answer:", " {}"),
        "action": (action, "{}"),
    }


def letter_ids(tokenizer: Any, prefix: str, spelled: str, letters: Sequence[str]) -> list[int]:
    """The token id of each letter as the tokenizer reads it right after ``prefix``.

    Raises:
        ValueError: If a letter is not one token there (it merges with the prefix, or
            spans several tokens).
    """
    head = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    ids = []
    for letter in letters:
        full = tokenizer(prefix + spelled.format(letter), add_special_tokens=False)["input_ids"]
        if len(full) != len(head) + 1 or full[: len(head)] != head:
            raise ValueError(f"{spelled.format(letter)!r} is not one token after {prefix[-12:]!r}")
        ids.append(int(full[-1]))
    return ids


def _letter(
    model: Any,
    processor: Any,
    conversation: list[dict[str, Any]],
    prefix: str,
    spelled: str,
    options: int,
) -> int:
    """The index of the most likely option letter after ``prefix`` (spelled ``spelled``)."""
    import torch

    from video_env.backends.hf_generation import encode, prepare_conversations

    texts, images, videos, metas, _ = prepare_conversations(processor, [conversation])
    batch = encode(processor, [texts[0] + prefix], images, videos, metas)
    with torch.no_grad():
        logits = model(**batch).logits[0, -1]
    ids = letter_ids(processor.tokenizer, prefix, spelled, OPTION_LETTERS[:options])
    return int(torch.stack([logits[i] for i in ids]).argmax())


def _mcq_conversation(videoscout: list[dict[str, Any]], turn: AnswerTurn) -> list[dict[str, Any]]:
    """The pixel VLM's own MCQ prompt over the frames of a VideoScout turn.

    The question first, then the frames, as the backend asks (``TransformersVLM.answer``).
    """
    frames = [p for m in videoscout for p in m["content"] if "frames" in p]
    text = question_prompt(turn.question, list(turn.options))
    return [
        {"role": "system", "content": [{"type": "text", "text": SYSTEM_PROMPT}]},
        {"role": "user", "content": [{"type": "text", "text": text}, *frames]},
    ]


def probe(model_path: str, turns: Sequence[AnswerTurn]) -> dict[str, list[bool]]:
    """Whether the model's letter is right, per condition and turn.

    Args:
        model_path: A chat VLM's folder (local files only).
        turns: The teacher's answer turns (:func:`answer_turns`).

    Returns:
        For each of :data:`CONDITIONS`, one bool per turn.
    """
    from policies.training.turn_inputs import conversation_from_row

    transformers = require("transformers", "models", _PURPOSE)
    processor = transformers.AutoProcessor.from_pretrained(model_path, local_files_only=True)
    load = transformers.AutoModelForImageTextToText.from_pretrained
    model = load(model_path, local_files_only=True).eval()
    right: dict[str, list[bool]] = {c: [] for c in CONDITIONS}
    for turn in turns:
        conversation = conversation_from_row(turn.row).conversation
        answer = OPTION_LETTERS.index(turn.letter)
        n = len(turn.options)
        mcq = _mcq_conversation(conversation, turn)
        right["MCQ prompt"].append(_letter(model, processor, mcq, "", "{}", n) == answer)
        for condition, (prefix, spelled) in _prefixes(turn).items():
            read = _letter(model, processor, conversation, prefix, spelled, n)
            right[condition].append(read == answer)
    return right


def table(results: dict[str, dict[str, list[bool]]], turns: Sequence[AnswerTurn]) -> str:
    """A markdown table: each model's letter accuracy per condition, with clustered CIs."""
    shares = {
        model: {c: [float(r) for r in right[c]] for c in CONDITIONS}
        for model, right in results.items()
    }
    return ci_table(shares, CONDITIONS, [t.video for t in turns])


def ci_table(
    results: dict[str, dict[str, list[float]]], columns: Sequence[str], videos: Sequence[str]
) -> str:
    """A markdown table: per model, each column's mean with its 95 % interval by video."""
    lines = ["| model | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for model, values in results.items():
        cells = []
        for column in columns:
            low, high = cluster_bootstrap_ci(values[column], list(videos))
            cells.append(f"{float(np.mean(values[column])):.2f} ({low:.2f}–{high:.2f})")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def probe_parser(description: str, turns_help: str, block: str) -> argparse.ArgumentParser:
    """The probes' command line: ``--turns``, ``--models``, ``--update-docs``, ``--block``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--turns", required=True, help=turns_help)
    parser.add_argument("--models", nargs="+", required=True)
    parser.add_argument("--update-docs", action="store_true", help="rewrite the docs block")
    parser.add_argument("--block", default=block, help=f"its name in the docs or a log ({block})")
    return parser


def docs_block(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[str, str]:
    """The begin and end markers of ``args.block``; an error if it must be written but is absent."""
    begin, end = f"<!-- {args.block} -->", f"<!-- /{args.block} -->"
    if args.update_docs:
        try:
            block_file(begin, end)
        except ValueError as exc:
            parser.error(str(exc))
    return begin, end


def probe_command(module: str, args: argparse.Namespace) -> str:
    """The command line that regenerates a probe's block (its turns and models)."""
    return f"python -m experiments.videoscout_pixel.{module} " + " ".join(
        [f"--turns {args.turns}", "--models", *args.models]
    )


def publish(args: argparse.Namespace, header: str, table: str) -> None:
    """Print a probe's block and, with ``--update-docs``, write it where its block is."""
    text = f"{header}\n\n{table}"
    print(text)
    if args.update_docs:
        update_block(f"<!-- {args.block} -->", f"<!-- /{args.block} -->", text + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the probe and print (and with ``--update-docs`` write) its table."""
    parser = probe_parser(__doc__.splitlines()[0], "a scenes teacher's turns.jsonl", BLOCK)
    args = parser.parse_args(argv)
    docs_block(parser, args)
    require("torch", "models", _PURPOSE).set_num_threads(2)
    start = time.monotonic()
    turns = answer_turns(args.turns)
    if not turns:
        parser.error(f"no sighted MCQ answer turns of a scenes teacher in {args.turns}")
    results = {model: probe(model, turns) for model in args.models}
    command = probe_command("letter_probe", args)
    chance = float(np.mean([1 / len(t.options) for t in turns]))
    header = (
        f"Generated by `{command}` ({len(turns)} sighted MCQ answer turns of "
        f"{len({t.video for t in turns})} videos, {time.monotonic() - start:.0f} s on "
        "this machine): the share of questions whose most likely option letter is right, "
        f"with its 95 % interval clustered by video; chance {chance:.2f}."
    )
    publish(args, header, table(results, turns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
