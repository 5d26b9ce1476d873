"""Binding targets: how stage 2 teaches the pixel VLM to read its answers off the evidence.

An MCQ's letter takes three hops through the 3-layer decoder: each option's word must
learn its letter (the letter comes first in ``"A. red"``), the visual tokens that show the
fact must find the option that names it (the options come before the frames in the
prompt, as FALCONEye sends them), and the position that writes the reply must read the
letter off those visual tokens. Trained on the reply alone, the decoder sits at chance:
the gradient of each hop is scaled by the (random, small) maps of the others, the
plateau before such a circuit forms lasts longer than a CPU run (probes in
``docs/pixel_vlm.md``).

So on the MCQ turns whose fact is in view, stage 2 adds auxiliary targets that name
each hop — the training data knows where every option, letter and needle token is:

- *attention*: head 0 of layer 0 attends from each option's first word token to its
  letter; head 0 of layer 1 from each visual token that shows the asked fact to the
  answer's word; head 0 of layer 2 from the reply's position to those visual tokens;
- *letters at the hops*, read through the model's own final norm and output layer:
  after layer 0 each option word names its letter, after layer 1 each evidence token
  names the answer's letter.

An open question whose fact is in view is the last hop alone: head 0 of layer 2 attends
from the reply's position to the evidence, and after layer 1 the evidence tokens name
the reply's first token (the fact's word) — the same copy that writes an MCQ's letter.
A caption that names a needle is that hop too, from the position before the carrier's
word to the carrier's tokens, which name that word.

A text-only probe of the same circuit (the fact written after the options) stayed at
chance for 300 steps with either kind of target alone and reached 0.72 at step 300 with
both. With pixels the middle hop is a match of unlike things — a visual token's fact
features against a word's embedding — so :func:`init_match_head` starts that head's
query and key maps equal (its scores begin as dot products of the two vectors, which
:func:`~experiments.pixel_models.vlm_train.align_fact_words` makes large for a fact and its word).

The targets only shape training: the checkpoint is a plain Qwen2.5-VL and inference is
the backend's, unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from video_env.types import OPTION_LETTERS

__all__ = [
    "BindingTarget",
    "EvidenceRow",
    "binding_loss",
    "binding_targets",
    "evidence_mask",
    "init_match_head",
]

#: The attention head of each layer that the targets shape.
HEAD = 0
_EPS = 1e-6
#: The layer whose head matches the evidence with the answer's word.
MATCH_LAYER = 1


@dataclass(frozen=True)
class EvidenceRow:
    """A turn of a collated batch whose reply is read off visual tokens it shows.

    Attributes:
        row: The turn's row in the batch.
        grids: Per frame, the class of each merged token (facts, or carriers for a caption).
        label: The class whose tokens are the evidence.
        answer: The answer's option index of an MCQ; ``None`` otherwise.
        prefix: The reply's text before the token read off the evidence (a caption's
            scene before the carrier's word, VideoScout's ``<think>`` before the letter
            its thought opens with); empty where the reply's first token is read.
    """

    row: int
    grids: Sequence[npt.NDArray[np.int16]]
    label: int
    answer: int | None = None
    prefix: str = ""


@dataclass(frozen=True)
class BindingTarget:
    """Where one row's letters, words, evidence and reply are (token positions).

    ``reply`` is the position that writes the token read off the evidence (``reads``):
    the reply's first for a question (the one after the row's prefix where it has one:
    a VideoScout thought's letter), the carrier's word for a caption. An open question
    or a caption has no letters or words (empty tuples, ``answer`` -1).
    """

    row: int
    letters: tuple[int, ...]
    words: tuple[int, ...]
    letter_ids: tuple[int, ...]
    answer: int
    evidence: tuple[int, ...]
    reply: int
    reads: int

    @property
    def is_mcq(self) -> bool:
        """Whether the row is an MCQ (it has option letters)."""
        return bool(self.letters)


def evidence_mask(facts: Sequence[npt.NDArray[np.int16]], fact: int) -> npt.NDArray[np.bool_]:
    """Which merged visual tokens of a window show ``fact``, in the processor's order.

    One frame is an image (one token grid); more frames are a video whose tokens each
    cover two consecutive frames (Qwen2.5-VL's temporal patch; an odd last frame is
    repeated, as the processor pads), row-major per pair.
    """
    shown: list[npt.NDArray[np.bool_]] = [np.asarray(grid == fact) for grid in facts]
    if len(shown) == 1:
        return shown[0].reshape(-1)
    pairs = [shown[t] | shown[min(t + 1, len(shown) - 1)] for t in range(0, len(shown), 2)]
    return np.concatenate([p.reshape(-1) for p in pairs])


def binding_targets(
    tokenizer: Any,
    config: Any,
    input_ids: Any,
    labels: Any,
    rows: Sequence[EvidenceRow],
) -> list[BindingTarget]:
    """The targets of ``rows`` of a collated batch.

    Args:
        tokenizer: The processor's tokenizer.
        config: The model's config (its image and video token ids).
        input_ids: The batch's ``input_ids`` ``[B, T]``.
        labels: The batch's labels (-100 outside replies).
        rows: The turns whose evidence is in view.

    Rows whose option lines, visual tokens or prefix cannot be located are left out (a
    tokenizer that merges across an option line's tokens, say), never guessed.
    """
    newline = tokenizer.convert_tokens_to_ids("Ċ")
    dot = tokenizer.convert_tokens_to_ids(".")
    visual_ids = {int(config.image_token_id), int(config.video_token_id)}
    option_ids = [tokenizer.convert_tokens_to_ids(letter) for letter in OPTION_LETTERS]
    out: list[BindingTarget] = []
    for asked in rows:
        row, answer = asked.row, asked.answer
        ids = input_ids[row].tolist()
        visual = [i for i, t in enumerate(ids) if t in visual_ids]
        mask = evidence_mask(asked.grids, asked.label)
        if not visual or len(mask) != len(visual) or not mask.any():
            continue
        start = int((labels[row] != -100).nonzero()[0]) - 1
        evidence = tuple(int(p) for p in np.asarray(visual)[mask])
        before = tokenizer(asked.prefix, add_special_tokens=False)["input_ids"]
        if ids[start + 1 : start + 1 + len(before)] != before:
            continue
        reply = start + len(before)
        if answer is None:
            out.append(BindingTarget(row, (), (), (), -1, evidence, reply, int(ids[reply + 1])))
            continue
        letters, letter_ids = [], []
        for letter_id in option_ids:
            at = _find(ids[: visual[0]], [newline, letter_id, dot])
            if at is None:
                break
            letters.append(at + 1)
            letter_ids.append(letter_id)
        if answer >= len(letters) or (before and ids[reply + 1] != letter_ids[answer]):
            continue
        out.append(
            BindingTarget(
                row=row,
                letters=tuple(letters),
                words=tuple(p + 2 for p in letters),
                letter_ids=tuple(letter_ids),
                answer=answer,
                evidence=evidence,
                reply=reply,
                reads=letter_ids[answer],
            )
        )
    return out


def _find(ids: list[int], pattern: list[int]) -> int | None:
    n = len(pattern)
    for i in range(len(ids) - n + 1):
        if ids[i : i + n] == pattern:
            return i
    return None


def binding_loss(
    torch: Any,
    model: Any,
    outputs: Any,
    targets: Sequence[BindingTarget],
    attention: bool = True,
    letters: bool = True,
) -> Any:
    """The attention and letter targets' loss, from a forward pass with attentions and states.

    The mean negative log attention weight of the three heads' targets (``attention``),
    plus the cross-entropy of the letters read at the hops (``letters``; module
    docstring). Stage 2 uses both; the probe of ``experiments.pixel_models.binding_probe``
    switches each off.
    """
    attentions, states = outputs.attentions, outputs.hidden_states
    norm = model.model.language_model.norm
    f = torch.nn.functional
    attention_terms: list[Any] = []
    word_states: list[Any] = []
    evidence_states: list[Any] = []
    word_letters: list[int] = []
    evidence_letters: list[int] = []
    for t in targets:
        evidence = list(t.evidence)
        third = attentions[2][t.row, HEAD]
        attention_terms.append(-torch.log(third[t.reply, evidence].sum() + _EPS).reshape(1))
        evidence_states.append(states[2][t.row, evidence])
        evidence_letters += [t.reads] * len(evidence)
        if not t.is_mcq:
            continue
        words, letter_at = list(t.words), list(t.letters)
        first, second = (attentions[k][t.row, HEAD] for k in (0, MATCH_LAYER))
        attention_terms.append(-torch.log(first[words, letter_at] + _EPS))
        attention_terms.append(-torch.log(second[evidence, t.words[t.answer]] + _EPS))
        word_states.append(states[1][t.row, words])
        word_letters += t.letter_ids
    read = model.lm_head

    def readout(at: list[Any], wanted: list[int]) -> Any:
        if not at:
            return 0.0
        logits = read(norm(torch.cat(at))).float()
        return f.cross_entropy(logits, torch.tensor(wanted, device=logits.device))

    total = torch.cat(attention_terms).mean() if attention else 0.0
    if letters:
        total = total + readout(word_states, word_letters)
        total = total + readout(evidence_states, evidence_letters)
    return total


def init_match_head(torch: Any, model: Any, seed: int, scale: float = 1.5) -> None:
    """Start the matching head's query and key maps as one scaled orthonormal projection.

    Head :data:`HEAD` of layer :data:`MATCH_LAYER` (and the key/value head it shares)
    then scores a query token against a key token by the dot product of their normed
    vectors in a random 64-dimensional projection (times ``scale`` squared), biases zero.
    A start, not a constraint: training moves both maps freely.
    """
    attention = model.model.language_model.layers[MATCH_LAYER].self_attn
    width = attention.head_dim
    generator = torch.Generator().manual_seed(seed)
    hidden = attention.q_proj.weight.shape[1]
    basis = torch.linalg.qr(torch.randn(hidden, width, generator=generator))[0].T * scale
    rows = slice(HEAD * width, (HEAD + 1) * width)
    with torch.no_grad():
        for projection in (attention.q_proj, attention.k_proj):
            projection.weight[rows] = basis
            projection.bias[rows] = 0.0
