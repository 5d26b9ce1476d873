"""Which hop of the pixel VLM's letter circuit a VideoScout student keeps, at its answer's place.

``python -m benchmarks.studies.videoscout_circuit_probe --turns TURNS --models M [M ...]``
takes the sighted MCQ answer turns of a ``lead`` teacher's ``turns.jsonl`` (those that
``train sft --binding`` gives targets: the thought opens with the right letter, the frames
show the asked fact; :class:`~policies.training.answer_binding.AnswerEvidence`), runs each
model on the turn with the teacher's reply forced, and reads the circuit that
:mod:`video_env.pixel.vlm_binding` taught the pixel VLM, hop by hop:

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

Shares and weights are means over turns, with 95 % intervals clustered by video. The
token labels (where the fact is) come from the synthetic world's renderer, for this
diagnosis only. Deterministic; about a second a turn per model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.studies.videoscout_letter_probe import (
    ci_table,
    docs_block,
    probe_command,
    probe_parser,
    publish,
)
from video_env._optional import require

__all__ = ["MEASURES", "circuit", "main", "sighted_turns"]

BLOCK = "videoscout-circuit-probe"
_PURPOSE = "the VideoScout circuit probe"
MEASURES = (
    "words name letters",
    "evidence → answer word",
    "evidence names the letter",
    "reply → evidence",
    "letter",
)


def sighted_turns(path: str | Path) -> list[dict[str, Any]]:
    """The rows of ``path`` that have binding targets (sighted, right lead answers)."""
    from policies.training.answer_binding import AnswerEvidence

    evidence = AnswerEvidence()
    rows = [json.loads(line) for line in Path(path).read_text("utf-8").splitlines()]
    return [row for row in rows if evidence.row(row, 0) is not None]


def circuit(model_path: str, rows: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """Each of :data:`MEASURES` per turn of ``rows`` (see the module docstring)."""
    import torch

    from policies.training.answer_binding import AnswerEvidence
    from policies.training.turn_inputs import collate_turns, conversation_from_row
    from video_env.pixel.vlm_binding import HEAD, MATCH_LAYER, binding_targets

    transformers = require("transformers", "models", _PURPOSE)
    processor = transformers.AutoProcessor.from_pretrained(model_path, local_files_only=True)
    load = transformers.AutoModelForImageTextToText.from_pretrained
    model = load(model_path, local_files_only=True).eval()
    model.set_attn_implementation({"text_config": "eager"})
    norm, head = model.model.language_model.norm, model.lm_head
    evidence = AnswerEvidence()

    def named(states: Any, letters: list[int]) -> Any:
        """The most likely of ``letters`` that each state names (index into ``letters``)."""
        return head(norm(states))[:, letters].argmax(-1)

    out: dict[str, list[float]] = {m: [] for m in MEASURES}
    for row in rows:
        batch = collate_turns(processor, [conversation_from_row(row)])
        labels = batch.pop("labels")
        found = evidence.rows([row])
        targets = binding_targets(
            processor.tokenizer, model.config, batch["input_ids"], labels, found
        )
        if not targets:
            raise ValueError(f"{row['id']}: its binding targets cannot be located")
        (t,) = targets
        with torch.no_grad():
            result = model(**batch, output_attentions=True, output_hidden_states=True)
        letters = list(t.letter_ids)
        shown = list(t.evidence)

        states = result.hidden_states
        words = named(states[1][0, list(t.words)], letters)
        out["words name letters"].append(
            float((words == torch.arange(len(letters))).float().mean())
        )
        match = result.attentions[MATCH_LAYER][0, HEAD]
        out["evidence → answer word"].append(float(match[shown, t.words[t.answer]].mean()))
        out["evidence names the letter"].append(
            float((named(states[2][0, shown], letters) == t.answer).float().mean())
        )
        reply = result.attentions[2][0, HEAD]
        out["reply → evidence"].append(float(reply[t.reply, shown].sum()))
        out["letter"].append(float(int(result.logits[0, t.reply, letters].argmax()) == t.answer))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the probe and print (and with ``--update-docs`` write) its table."""
    parser = probe_parser(__doc__.splitlines()[0], "a lead teacher's turns.jsonl", BLOCK)
    args = parser.parse_args(argv)
    docs_block(parser, args)
    require("torch", "models", _PURPOSE).set_num_threads(2)
    start = time.monotonic()
    rows = sighted_turns(args.turns)
    if not rows:
        parser.error(f"no sighted lead MCQ answer turns in {args.turns}")
    results = {model: circuit(model, rows) for model in args.models}
    videos = [str(row["sample_id"]).split("/")[0] for row in rows]
    command = probe_command("videoscout_circuit_probe", args)
    header = (
        f"Generated by `{command}` ({len(rows)} sighted MCQ answer turns of "
        f"{len(set(videos))} videos, {time.monotonic() - start:.0f} s on this machine): each "
        "hop of the letter circuit at the lead answer's place, the mean over turns with its "
        "95 % interval clustered by video; chance for the letters 0.25."
    )
    publish(args, header, ci_table(results, MEASURES, videos))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
