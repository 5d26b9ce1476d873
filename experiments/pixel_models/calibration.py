"""Calibration of the pixel-real VLM: the prior weight, "not in view" margin and temperature.

:func:`fit_calibration` chooses them together by minimum negative log-likelihood over MCQ
rows of the evaluation (:mod:`experiments.pixel_models.evaluate`), the target being the true option
where the frames show the needle and the "not in view" answer where they do not.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from video_env.pixel.vlm import logits_with_null, prior_corrected

#: Conditions whose frames do not show the asked needle (the calibration's target there is
#: the "not in view" answer).
NO_EVIDENCE = frozenset({"none", "other"})
#: Prior weights the calibration chooses among (0: the best tile's similarity alone).
PRIOR_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def option_scores(row: dict[str, object], prior_weight: float, pool: bool = False) -> Any:
    """A row's option (or, with ``pool``, fact-pool) scores for ``prior_weight``."""
    prefix = "pool_" if pool else ""
    best = np.asarray(row[f"{prefix}best"], np.float64)
    mean = np.asarray(row[f"{prefix}mean"], np.float64)
    return prior_corrected(best, mean, prior_weight)


#: "Not in view" margins the calibration chooses among (similarity units).
NULL_MARGINS = tuple(round(float(m), 2) for m in np.arange(-0.1, 0.61, 0.05))


def answer_logits(
    row: dict[str, object], prior_weight: float, null_margin: float, scale: float
) -> npt.NDArray[np.float64]:
    """A row's option scores and, last, the "not in view" answer's (as ``PixelScorer``)."""
    return logits_with_null(
        np.asarray(row["best"], np.float64),
        np.asarray(row["mean"], np.float64),
        float(row["scene_best"]),  # type: ignore[arg-type]
        prior_weight,
        null_margin * scale,
    )


def _nll(
    logits: npt.NDArray[np.float64], targets: npt.NDArray[np.int_], grid: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Summed NLL of ``targets`` under ``softmax(logits / t)`` for every ``t`` of ``grid``."""
    z = logits[None, :, :] / grid[:, None, None]
    top = z.max(axis=2, keepdims=True)
    log_norm = np.log(np.exp(z - top).sum(axis=2)) + top[..., 0]
    picked = np.take_along_axis(z, targets[None, :, None].repeat(len(grid), 0), 2)[..., 0]
    total: npt.NDArray[np.float64] = (log_norm - picked).sum(axis=1)
    return total


def fit_calibration(
    rows: list[dict[str, object]],
    scale: float,
    prior_weights: tuple[float, ...] = PRIOR_WEIGHTS,
    null_margins: tuple[float, ...] = NULL_MARGINS,
) -> tuple[float, float, float]:
    """``(prior_weight, null_margin, temperature)`` minimising the NLL on ``rows``.

    The target is the true option where the frames show the needle and the "not in view"
    answer where they do not (:data:`NO_EVIDENCE`).
    """
    grid = np.exp(np.linspace(math.log(0.05), math.log(200.0), 300))
    targets = np.array(
        [
            len(np.asarray(r["best"])) if r["condition"] in NO_EVIDENCE else int(r["truth"])  # type: ignore[call-overload]
            for r in rows
        ]
    )
    best: tuple[float, float, float, float] = (math.inf, 0.0, 0.0, 1.0)
    for weight in prior_weights:
        for margin in null_margins:
            logits = np.stack([answer_logits(r, weight, margin, scale) for r in rows])
            losses = _nll(logits, targets, grid)
            k = int(np.argmin(losses))
            if losses[k] < best[0]:
                best = (losses[k], weight, margin, float(grid[k]))
    return best[1], best[2], best[3]
