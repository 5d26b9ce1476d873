"""The bench command's progress bar: episodes done, time left, the current policy's accuracy.

Episodes of different (env, policy) pairs take very different times (a random policy
answers at once, a model-driven one may take seconds), and jobs run grouped by policy, so a
rate measured on the first groups says nothing of the last ones. The time left is therefore
summed per pair: each pair's remaining episodes times its own mean episode time (the mean
over every finished episode for a pair with none finished yet), divided by the episodes in
flight (the workers, or fewer when fewer episodes are left). The accuracy shown is the
running accuracy of the pair the latest episode belongs to, never pooled across policies.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from benchmarks.jobs import Job

__all__ = ["ESTIMATE_AFTER", "TTY_PROGRESS_INTERVAL_S", "ProgressBar"]

#: Episodes that must finish before the bar shows a time estimate: the first ones include
#: worker start-up, and an estimate from them can be hours off.
ESTIMATE_AFTER = 10
#: Seconds between two redraws on a terminal (tqdm's own default).
TTY_PROGRESS_INTERVAL_S = 0.1
_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"


class ProgressBar:
    """A tqdm progress bar fed with the run's plan and its records.

    Args:
        tqdm: The ``tqdm`` class (injected, so tests can silence it).
        workers: Episodes the executor runs at once.
        mininterval: Seconds between two redraws at least (tqdm's ``mininterval``).
    """

    def __init__(
        self, tqdm: Any, workers: int = 1, mininterval: float = TTY_PROGRESS_INTERVAL_S
    ) -> None:
        self.tqdm = tqdm
        self.workers = max(1, workers)
        self.bar = tqdm(
            desc="episodes",
            unit="ep",
            dynamic_ncols=True,
            bar_format=_FORMAT,
            mininterval=mininterval,
        )
        self.failed = 0
        self.estimate_after = ESTIMATE_AFTER
        self.remaining: Counter[tuple[str, str]] = Counter()
        self.seconds: defaultdict[tuple[str, str], float] = defaultdict(float)  # summed
        self.finished: Counter[tuple[str, str]] = Counter()
        self.graded: Counter[tuple[str, str]] = Counter()
        self.correct: Counter[tuple[str, str]] = Counter()
        self.warm: int | None = None  # episodes finished when the estimate starts

    def plan(self, jobs: Sequence[Job], done: int) -> None:
        """The jobs left to run (and how many were already done)."""
        self.bar.total = len(jobs)
        self.remaining = Counter((job.env, job.policy) for job in jobs)
        self.estimate_after = max(1, min(ESTIMATE_AFTER, len(jobs) // 10))
        self.bar.refresh()

    def left(self) -> str:
        """The time left, or ``estimating`` before enough episodes have finished."""
        n = self.bar.n
        if self.warm is None and n >= self.estimate_after:
            self.warm = n
        if self.warm is None or n == self.warm:
            return "estimating"
        overall = sum(self.seconds.values()) / sum(self.finished.values())
        work = 0.0
        for group, count in self.remaining.items():
            done = self.finished[group]
            work += count * (self.seconds[group] / done if done else overall)
        in_flight = max(1, min(self.workers, sum(self.remaining.values())))
        return f"~{self.tqdm.format_interval(work / in_flight)} left"

    def update(self, record: dict[str, Any]) -> None:
        """One finished episode (its record)."""
        env, policy = _group(record)
        self.remaining[(env, policy)] = max(0, self.remaining[(env, policy)] - 1)
        self.seconds[(env, policy)] += float(record.get("wall_s") or 0.0)
        self.finished[(env, policy)] += 1
        if record.get("correct") is not None:
            self.graded[(env, policy)] += 1
            self.correct[(env, policy)] += bool(record["correct"])
        self.failed += bool(record.get("error"))
        graded = self.graded[(env, policy)]
        acc = f"{self.correct[(env, policy)] / graded:.3f}" if graded else "n/a"
        self.bar.update(1)
        self.bar.set_postfix_str(
            f"{self.left()}, {env}/{policy} acc={acc}, failed={self.failed}", refresh=False
        )

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()


def _group(record: dict[str, Any]) -> tuple[str, str]:
    """The record's (env, policy) as the plan names them (from its job key)."""
    env, _, rest = str(record.get("job") or "").partition("|")
    policy = rest.partition("|")[0]
    return env or str(record.get("env", "")), policy or str(record.get("policy", ""))
