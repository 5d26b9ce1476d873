"""The offline answer of the tool agents: votes of the result texts for the options.

Each content result (:func:`~policies.tool_agents.calls.content_texts`) carries a weight
by the tool that gave it (a sub-model's close look counts more than a caption). A text
votes for an option when it is that option's letter, or when it names exactly one option
as whole words (several named: the weight is shared); refusals ("I cannot tell") do not
vote. A sub-model's answer that states its confidence (``"B (confidence 0.83)"``, the
Tools env's ``ask`` results) votes its weight times that confidence, and an option's votes
are then its best single reading, not their sum: many unsure looks at stretches without
the answer must not outvote the one sure look at the evidence (FALCONEye's rule). The
option with the most weight wins, ties to the earlier letter. With no vote at
all the :class:`~policies.reasoning.OfflineReasoner` picks the option best supported by
the texts (its lexical or embedding cosines). Open questions take the answer given with
the most weight, else the reasoner's most relevant clause.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence

from policies.reasoning import OfflineReasoner, is_non_answer
from video_env.metrics.answers import normalize_text
from video_env.types import OPTION_LETTERS

_LETTER = re.compile(r"^\(?([A-Z])[).:]?$")
_CONFIDENCE = re.compile(r"\s*\(confidence ([01](?:\.\d+)?)\)\s*$")


def stated_confidence(text: str) -> tuple[str, float | None]:
    """``text`` without a trailing ``(confidence x)``, and ``x`` (``None``: none stated)."""
    match = _CONFIDENCE.search(text)
    if match is None:
        return text, None
    return text[: match.start()], float(match.group(1))


def option_votes(
    texts: Sequence[tuple[str, str]], options: Sequence[str], weights: Mapping[str, float]
) -> list[float]:
    """The weight of the texts voting for each option (see the module docstring)."""
    votes = [0.0] * len(options)
    sure = [0.0] * len(options)  # the best confidence-weighted reading of each option
    letters = OPTION_LETTERS[: len(options)]
    needles = [f" {normalize_text(o)} " for o in options]
    for tool, raw in texts:
        text, confidence = stated_confidence(raw)
        weight = weights.get(tool, 1.0)
        if is_non_answer(text):
            continue
        letter = _LETTER.match(text.strip().rstrip("."))
        if letter is not None and letter.group(1) in letters:
            named = [letters.index(letter.group(1))]
        else:
            padded = f" {normalize_text(text)} "
            named = [i for i, n in enumerate(needles) if n.strip() and n in padded]
        for i in named:
            if confidence is None:
                votes[i] += weight / len(named)
            else:
                sure[i] = max(sure[i], weight * confidence / len(named))
    return sure if any(sure) else votes


def offline_answer(
    question: str,
    options: Sequence[str],
    texts: Sequence[tuple[str, str]],
    weights: Mapping[str, float],
    reasoner: OfflineReasoner,
) -> tuple[str, bool]:
    """``(answer, supported)``: the voted answer, or the reasoner's when nothing voted."""
    if options:
        votes = option_votes(texts, options, weights)
        best = max(range(len(options)), key=lambda i: (votes[i], -i))
        if votes[best] > 0:
            return OPTION_LETTERS[best], True
        answer, _, _ = reasoner.answer(question, options, [t for _, t in texts])
        return answer, False
    given: dict[str, float] = defaultdict(float)
    sure: dict[str, float] = defaultdict(float)
    for tool, raw in texts:
        text, confidence = stated_confidence(raw)
        if not is_non_answer(text) and len(text.split()) <= 12:
            key = text.strip().rstrip(".")
            if confidence is None:
                given[key] += weights.get(tool, 1.0)
            else:
                sure[key] = max(sure[key], weights.get(tool, 1.0) * confidence)
    given = sure or given
    if given:
        return max(given, key=lambda t: (given[t], -len(t))), True
    answer, _, _ = reasoner.answer(question, (), [stated_confidence(t)[0] for _, t in texts])
    return answer, False
