"""Which hop of the pixel VLM's letter circuit a VideoScout student keeps, at its answer's place.

``python -m experiments.videoscout_pixel.circuit_probe --turns TURNS --models M [M ...]``
takes the sighted MCQ answer turns of a ``lead`` teacher's ``turns.jsonl`` (those that
the lab's ``sft --binding`` gives targets: the thought opens with the right letter, the frames
show the asked fact;
:class:`~experiments.videoscout_pixel.answer_binding.AnswerEvidence`), runs each
model on the turn with the teacher's reply forced, and reads the circuit that
:mod:`experiments.pixel_models.vlm_binding` taught the pixel VLM, hop by hop:

- ``words name letters``: after layer 0, each option word's state read through the final
  norm and output layer names its own letter (the most likely of the option letters);
- ``evidence → answer word``: head 0 of layer 1's attention from the visual tokens that
  show the fact to the right option's word (mean weight);
- ``evidence names the letter``: after layer 1, those visual tokens name the right letter
  (the share of them whose most likely option letter is right);
- ``reply → evidence``: head 0 of layer 2's attention from the position before the
  thought's letter (``<think>``'s last token) to those visual tokens (summed weight);
- ``letter``: the model's most likely option letter at that position (the letter probe's
  ``after <think>``).

With ``--open`` it takes the sighted open answer turns instead (the lab's ``sft --binding
--binding-open`` targets: the thought opens with the right fact word, ``<think>violin:``),
whose reply is the circuit's last hop alone, and reads (of the whole vocabulary, as an
open reply is written):

- ``evidence names the word``: after layer 1, the share of the visual tokens that show
  the fact whose most likely token is the fact word's first;
- ``reply → evidence``: as above, from the position before the word;
- ``word``: whether the model's most likely token at that position is the word's first.

Shares and weights are means over turns, with 95 % intervals clustered by video. The
token labels (where the fact is) come from the synthetic world's renderer, for this
diagnosis only. Deterministic; about a second a turn per model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from experiments.videoscout_pixel.letter_probe import (
    ci_table,
    docs_block,
    probe_command,
    probe_parser,
    publish,
)
from video_env._optional import require

__all__ = ["MEASURES", "OPEN_MEASURES", "circuit", "main", "open_circuit", "sighted_turns"]

BLOCK = "videoscout-circuit-probe"
_PURPOSE = "the VideoScout circuit probe"
MEASURES = (
    "words name letters",
    "evidence → answer word",
    "evidence names the letter",
    "reply → evidence",
    "letter",
)
OPEN_MEASURES = ("evidence names the word", "reply → evidence", "word")


def sighted_turns(path: str | Path, open_answers: bool = False) -> list[dict[str, Any]]:
    """The rows of ``path`` with binding targets: sighted, right lead MCQ (or open) answers."""
    from experiments.videoscout_pixel.answer_binding import AnswerEvidence

    evidence = AnswerEvidence(open_answers=open_answers)
    rows = [json.loads(line) for line in Path(path).read_text("utf-8").splitlines()]
    found = ((row, evidence.row(row, 0)) for row in rows)
    return [row for row, e in found if e is not None and (e.answer is None) == open_answers]


def _forwards(
    model_path: str, rows: Sequence[dict[str, Any]], open_answers: bool = False
) -> Iterator[tuple[Any, Any, Any]]:
    """Per row, its binding target, the teacher-forced forward's outputs and the readout.

    The readout maps hidden states to logits through the model's final norm and output
    layer; the forward runs with the eager kernel, for its attention weights.
    """
    import torch

    from experiments.pixel_models.vlm_binding import binding_targets
    from experiments.videoscout_pixel.answer_binding import AnswerEvidence
    from policies.training.turn_inputs import collate_turns, conversation_from_row

    transformers = require("transformers", "models", _PURPOSE)
    processor = transformers.AutoProcessor.from_pretrained(model_path, local_files_only=True)
    load = transformers.AutoModelForImageTextToText.from_pretrained
    model = load(model_path, local_files_only=True).eval()
    model.set_attn_implementation({"text_config": "eager"})
    norm, head = model.model.language_model.norm, model.lm_head
    evidence = AnswerEvidence(open_answers=open_answers)

    def readout(states: Any) -> Any:
        return head(norm(states))

    for row in rows:
        batch = collate_turns(processor, [conversation_from_row(row)])
        labels = batch.pop("labels")
        found = evidence.rows([row])
        targets = binding_targets(
            processor.tokenizer, model.config, batch["input_ids"], labels, found
        )
        if not targets:
            raise ValueError(f"{row['id']}: its binding targets cannot be located")
        with torch.no_grad():
            result = model(**batch, output_attentions=True, output_hidden_states=True)
        yield targets[0], result, readout


def circuit(model_path: str, rows: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """Each of :data:`MEASURES` per sighted MCQ turn of ``rows`` (the module docstring)."""
    import torch

    from experiments.pixel_models.vlm_binding import HEAD, MATCH_LAYER

    out: dict[str, list[float]] = {m: [] for m in MEASURES}
    for t, result, readout in _forwards(model_path, rows):
        letters = list(t.letter_ids)
        shown = list(t.evidence)
        states = result.hidden_states
        words = _named(readout, states[1][0, list(t.words)], letters)
        out["words name letters"].append(
            float((words == torch.arange(len(letters))).float().mean())
        )
        match = result.attentions[MATCH_LAYER][0, HEAD]
        out["evidence → answer word"].append(float(match[shown, t.words[t.answer]].mean()))
        out["evidence names the letter"].append(
            float((_named(readout, states[2][0, shown], letters) == t.answer).float().mean())
        )
        reply = result.attentions[2][0, HEAD]
        out["reply → evidence"].append(float(reply[t.reply, shown].sum()))
        out["letter"].append(float(int(result.logits[0, t.reply, letters].argmax()) == t.answer))
    return out


def _named(readout: Any, states: Any, letters: list[int]) -> Any:
    """The most likely of ``letters`` that each state names (an index into them)."""
    return readout(states)[:, letters].argmax(-1)


def open_circuit(model_path: str, rows: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """Each of :data:`OPEN_MEASURES` per sighted open turn of ``rows`` (the module docstring)."""
    from experiments.pixel_models.vlm_binding import HEAD

    out: dict[str, list[float]] = {m: [] for m in OPEN_MEASURES}
    for t, result, readout in _forwards(model_path, rows, open_answers=True):
        shown = list(t.evidence)
        named = readout(result.hidden_states[2][0, shown]).argmax(-1)
        out["evidence names the word"].append(float((named == t.reads).float().mean()))
        out["reply → evidence"].append(float(result.attentions[2][0, HEAD][t.reply, shown].sum()))
        out["word"].append(float(int(result.logits[0, t.reply].argmax()) == t.reads))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the probe and print (and with ``--update-docs`` write) its table."""
    parser = probe_parser(__doc__.splitlines()[0], "a lead teacher's turns.jsonl", BLOCK)
    parser.add_argument(
        "--open", action="store_true", help="the sighted open answer turns' last hop instead"
    )
    args = parser.parse_args(argv)
    docs_block(parser, args)
    require("torch", "models", _PURPOSE).set_num_threads(2)
    start = time.monotonic()
    form = "open" if args.open else "MCQ"
    rows = sighted_turns(args.turns, open_answers=args.open)
    if not rows:
        parser.error(f"no sighted lead {form} answer turns in {args.turns}")
    probe = open_circuit if args.open else circuit
    results = {model: probe(model, rows) for model in args.models}
    videos = [str(row["sample_id"]).split("/")[0] for row in rows]
    command = probe_command("circuit_probe", args) + (" --open" if args.open else "")
    what = (
        "the last hop at the open answer's place (the fact word's first token, of the "
        "whole vocabulary)"
        if args.open
        else "each hop of the letter circuit at the lead answer's place"
    )
    chance = "" if args.open else "; chance for the letters 0.25"
    header = (
        f"Generated by `{command}` ({len(rows)} sighted {form} answer turns of "
        f"{len(set(videos))} videos, {time.monotonic() - start:.0f} s on this machine): "
        f"{what}, the mean over turns with its 95 % interval clustered by video{chance}."
    )
    measures = OPEN_MEASURES if args.open else MEASURES
    publish(args, header, ci_table(results, measures, videos))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
