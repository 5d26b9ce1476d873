"""Binding targets in VideoScout's SFT: point an answer's letter at the frames that show it.

The pixel VLM reads an MCQ's letter through a three-hop circuit that its own training
shaped with auxiliary targets (:mod:`experiments.pixel_models.vlm_binding`): option words take
their letters, the visual tokens that show the fact attend to the option naming it, and
the reply's first position reads the letter off those tokens. A VideoScout reply puts the
letter later — the ``lead`` teacher's thought opens with it, ``<think>C (pink): …`` — and
SFT on the reply alone did not teach the model to read it there (the letter probe stays at
chance, ``docs/training.md``). the lab's ``sft --binding W`` adds the same targets to each
sighted MCQ answer turn of the pixel-real world, with the read moved to the position
before the thought's letter.

A turn gets targets when its reply opens with a letter that is right (a guess is left
out), its question is about a needle the pixel VLM is taught to read, and its frames show
that needle's fact (token labels from the renderer's needle boxes, as the pixel VLM's
own training data). With open answers bound too (the lab's ``sft --binding-open``), an open
question's answer turn whose thought opens with the right fact word, ``<think>violin: …``,
gets the last hop's targets, as the pixel VLM's own open answers did: the position before
the word attends to the evidence, whose tokens name the word's first token. The labels
come from the synthetic world and shape training only: the policy sees frames and text,
and the checkpoint is a plain Qwen2.5-VL.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from experiments.pixel_models.vlm_binding import (
    BindingTarget,
    EvidenceRow,
    binding_loss,
    binding_targets,
)
from experiments.videoscout_pixel.option_orders import prompt_options
from video_env.synth.world import SynthVideo
from video_env.types import OPTION_LETTERS
from video_env.video.base import Size

__all__ = ["THOUGHT_OPENING", "AnswerEvidence", "binding_trainer"]

#: What a lead-style answer's reply writes before its letter.
THOUGHT_OPENING = "<think>"
_LEAD_ANSWER = re.compile(re.escape(THOUGHT_OPENING) + r"([A-Z]) \(([^)]*)\):")
_OPEN_ANSWER = re.compile(re.escape(THOUGHT_OPENING) + r"([^:?<\n]+):")
_VIDEO_ID = re.compile(r"^pixel-(train|calib|test)-(\d+)$")


class AnswerEvidence:
    """Which turns of a ``turns.jsonl`` are sighted answers, with their token labels.

    Videos are rebuilt from their ids (``pixel-SPLIT-I``) once and kept, and so is each
    turn's evidence (by its id and reply: a turn's labels are found once, not every
    epoch); a turn of any other world has no evidence (``None``).

    Args:
        open_answers: Whether sighted open answers get evidence too (else MCQs alone).
    """

    def __init__(self, open_answers: bool = False) -> None:
        self.open_answers = open_answers
        self._videos: dict[str, SynthVideo | None] = {}
        self._found: dict[tuple[str, str], EvidenceRow | None] = {}

    def row(self, turn: dict[str, Any], index: int) -> EvidenceRow | None:
        """The evidence of ``turn`` as row ``index`` of a batch, or ``None``."""
        completion = turn["completion"]
        reply = completion if isinstance(completion, str) else str(completion[-1]["content"])
        key = (str(turn.get("id", "")), reply)
        if key not in self._found:
            self._found[key] = self._evidence(turn, reply)
        found = self._found[key]
        return dataclasses.replace(found, row=index) if found is not None else None

    def _evidence(self, turn: dict[str, Any], reply: str) -> EvidenceRow | None:
        """The evidence of ``turn`` (whose reply is ``reply``) as row 0, or ``None``."""
        from experiments.pixel_models.vlm_data import fact_index, readable, token_labels

        video_id, _, rest = str(turn.get("sample_id", "")).partition("/")
        needle_id, _, form = rest.partition("/")
        opening = self._opening(form, reply)
        if opening is None:
            return None
        video = self._video(video_id)
        if video is None:
            return None
        needle = next((n for n in video.needles if n.id == needle_id), None)
        if needle is None or not readable(needle):
            return None
        answer = None
        if form == "mcq":
            answer = OPTION_LETTERS.index(opening.group(1))
            options = prompt_options(turn)
            if answer >= len(options) or options[answer] != needle.fact:
                return None  # a wrong guess: nothing in view names its letter
        elif opening.group(1) != needle.fact:
            return None  # a wrong open answer
        sizes = _frame_sizes(turn["images"])
        times = [float(t) for t in turn["frame_times"]]
        facts = [token_labels(video, t, s, s)[1] for t, s in zip(times, sizes, strict=True)]
        label = fact_index(needle.fact)
        if not any((grid == label).any() for grid in facts):
            return None  # a guess that happens to be right, the fact out of view
        return EvidenceRow(0, facts, label, answer, prefix=THOUGHT_OPENING)

    def _opening(self, form: str, reply: str) -> re.Match[str] | None:
        """The answer ``reply`` opens its thought with, for a question of ``form``."""
        if form == "mcq":
            return _LEAD_ANSWER.match(reply)
        return _OPEN_ANSWER.match(reply) if form == "open" and self.open_answers else None

    def rows(self, turns: Sequence[dict[str, Any]]) -> list[EvidenceRow]:
        """The evidence rows of a batch's turns (those that have one)."""
        found = (self.row(turn, i) for i, turn in enumerate(turns))
        return [row for row in found if row is not None]

    def _video(self, video_id: str) -> SynthVideo | None:
        if video_id not in self._videos:
            from video_env.pixel.splits import split_video

            match = _VIDEO_ID.match(video_id)
            self._videos[video_id] = (
                split_video(match.group(1), int(match.group(2))) if match else None
            )
        return self._videos[video_id]


def binding_trainer(base: type[Any], weight: float, letters: bool = True) -> type[Any]:
    """A subclass of TRL's ``SFTTrainer`` class ``base`` that adds the binding targets.

    A batch with ``"evidence"`` (:class:`AnswerEvidence` rows, from the collator) is run
    with attention weights (by the eager kernel, for that batch alone) and hidden states;
    ``weight`` times :func:`~experiments.pixel_models.vlm_binding.binding_loss` of its targets
    joins the reply's loss, scaled as the trainer scales that loss over gradient
    accumulation, and the mean target loss is logged as ``binding``. With ``letters``
    False the targets are the attention's alone (no letters read through the output layer).
    """

    class BindingSFTTrainer(base):  # type: ignore[misc]
        def compute_loss(
            self,
            model: Any,
            inputs: dict[str, Any],
            return_outputs: bool = False,
            num_items_in_batch: Any = None,
        ) -> Any:
            """TRL's loss, or with the batch's evidence the reply's and the targets' loss."""
            evidence = inputs.pop("evidence", [])
            core = self.accelerator.unwrap_model(model)
            tokenizer = self.processing_class.tokenizer
            targets = (
                binding_targets(
                    tokenizer, core.config, inputs["input_ids"], inputs["labels"], evidence
                )
                if evidence
                else []
            )
            if not targets:
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            found = self._bound_loss(model, core, inputs, targets, num_items_in_batch)
            loss, outputs, bound = found
            mode = "train" if model.training else "eval"
            self._metrics[mode]["binding"].append(float(bound.detach()))
            return (loss, outputs) if return_outputs else loss

        def _bound_loss(
            self,
            model: Any,
            core: Any,
            inputs: dict[str, Any],
            targets: list[BindingTarget],
            num_items_in_batch: Any,
        ) -> tuple[Any, Any, Any]:
            """The reply's loss plus the weighted targets' loss, from one forward pass.

            The forward is this method's own (TRL's returns its outputs from a second,
            gradient-free pass): the eager kernel for attention weights, the reply's
            token loss normalised as TRL normalises it, the targets' term divided over
            gradient accumulation exactly when the trainer leaves that to the loss.
            """
            import torch

            labels = inputs["labels"]
            forward = {k: v for k, v in inputs.items() if k != "labels"}
            kernel = core.config.text_config._attn_implementation
            core.set_attn_implementation({"text_config": "eager"})  # it alone returns weights
            try:
                outputs = model(
                    **forward, use_cache=False, output_attentions=True, output_hidden_states=True
                )
            finally:
                core.set_attn_implementation({"text_config": kernel})
            logits, wanted = outputs.logits[:, :-1].float(), labels[:, 1:]
            summed = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]),
                wanted.reshape(-1),
                ignore_index=-100,
                reduction="sum",
            )
            scaled = self._scaled(num_items_in_batch)
            tokens = num_items_in_batch if scaled else (wanted != -100).sum()
            loss = summed / torch.as_tensor(tokens, device=summed.device).clamp(min=1)
            if scaled and self.args.average_tokens_across_devices:
                loss = loss * self.accelerator.num_processes
            bound = binding_loss(torch, core, outputs, targets, letters=letters)
            steps = self.current_gradient_accumulation_steps if scaled else 1
            return loss + weight * bound / steps, outputs, bound

        def _scaled(self, num_items_in_batch: Any) -> bool:
            """Whether the trainer leaves gradient accumulation's average to the loss."""
            scaled = getattr(self, "loss_is_scaled_for_ga", None)
            if scaled is not None:
                return bool(scaled)
            return bool(
                (self.model_accepts_loss_kwargs and num_items_in_batch is not None)
                or self.compute_loss_func is not None
            )

    return BindingSFTTrainer


def _frame_sizes(paths: Sequence[str]) -> list[Size]:
    from PIL import Image

    sizes = []
    for path in paths:
        with Image.open(path) as image:
            sizes.append(Size(*image.size))
    return sizes
