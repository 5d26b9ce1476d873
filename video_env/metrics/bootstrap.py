"""A 95 % confidence interval of a mean by a bootstrap over clusters (videos).

Questions about one video are correlated (same scenes, same renderer draws, often the
same policy mistakes); resampling whole videos rather than questions keeps that, so the
interval is not too narrow. Used by the bench summary, ``bench compare``, the
simulator-validation report and the pixel-real evaluation table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

#: Bootstrap resamples.
BOOTSTRAP_SAMPLES = 1000


def cluster_bootstrap_ci(
    values: Sequence[float],
    clusters: Sequence[str],
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the mean of ``values`` over cluster resamples.

    Args:
        values: Per-question values: correctness (an accuracy's interval) or paired
            differences (a comparison's).
        clusters: The cluster (video) of each value.
        samples: Resamples of the clusters, with replacement.
        seed: Seed of the resampling.

    Returns:
        ``(low, high)``; ``(nan, nan)`` for no values.
    """
    if not values:
        return float("nan"), float("nan")
    groups: dict[str, list[float]] = defaultdict(list)
    for value, cluster in zip(values, clusters, strict=True):
        groups[cluster].append(float(value))
    sums = np.array([sum(g) for g in groups.values()], dtype=float)
    sizes = np.array([len(g) for g in groups.values()], dtype=float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(sums), size=(samples, len(sums)))
    means = sums[picks].sum(axis=1) / sizes[picks].sum(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)
