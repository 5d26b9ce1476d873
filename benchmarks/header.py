"""What ``video-env bench`` prints around a run: the header before it, the notes after it.

The header says what will run, decided from the config and its policies as
:func:`~benchmarks.jobs.validate` resolved them, before anything runs: the policies by the
names the tables will show (:meth:`~policies.resolved.ResolvedPolicy.shown_name`),
each one's perception (:func:`~benchmarks.provenance.policy_perceptions`: a policy that
brings its own model, such as ``videoscout:pixel-dapo``, says that model's), the executor
and the episodes it runs at once. ``run.json`` keeps the same words
(:func:`perception_text`), and the table after the run has a perception column read from
the records, so the two can be compared.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.config import BenchConfig
from benchmarks.provenance import policy_perceptions
from video_env.backends.random_weights import LABEL as RANDOM_LABEL
from video_env.provenance import (
    PIXEL_VLM,
    SIMULATED,
    perception_label,
    perception_notes,
    record_labels,
)

if TYPE_CHECKING:
    from policies.resolved import ResolvedPolicy

__all__ = ["footer_notes", "header", "perception_text", "running_envs", "unread_note"]


def perception_text(
    config: BenchConfig, resolved: Sequence[ResolvedPolicy], upper: bool = False
) -> str:
    """Each policy's perception, grouped: ``simulated``, or ``simulated for a; pixel-vlm for b``.

    The env's perception names its roles when they are not all of one kind (``real (vlm
    SPEC, captioner SPEC, clip simulated)``). ``upper`` writes the labels in capitals, as
    the run header does.
    """
    by_label: dict[str, list[str]] = defaultdict(list)
    for name, label in policy_perceptions(config, resolved).items():
        by_label[label].append(name)
    env = config.perception_label
    simulated = config.simulated_roles()
    specs = config.perception_specs()
    mixed = env not in ("pixel-real", "pixel-vlm") and 0 < len(simulated) < len(specs)
    parts = []
    for label, names in by_label.items():
        text = label.upper() if upper and not label.startswith("per policy") else label
        if mixed and label.startswith(env):
            roles = ", ".join(
                f"{role} {'simulated' if role in simulated else spec}"
                for role, spec in specs.items()
            )
            text += f" ({roles})"
        parts.append(text if len(by_label) == 1 else f"{text} for {', '.join(names)}")
    return "; ".join(parts)


def unread_note(config: BenchConfig, resolved: Sequence[ResolvedPolicy]) -> str | None:
    """The label of a pixel-VLM run on a source the pixel VLM is not known to read, or None.

    The pixel VLM reads the needles of :data:`~video_env.pixel.splits.READ_SUITES` only
    (measured on their held-out videos; docs/pixel_vlm.md); elsewhere its answers do not
    say what a policy's looking showed it.
    """
    from video_env.pixel.splits import READ_SUITES

    perceptions = policy_perceptions(config, resolved)
    users = [name for name, label in perceptions.items() if label == PIXEL_VLM]
    source = config.dataset or config.suite
    if not users or (config.dataset is None and source in READ_SUITES):
        return None
    return (
        f"PIXEL-VLM OUTSIDE WHAT IT READS: the pixel VLM ({', '.join(users)}) reads the "
        f"needles of {' and '.join(READ_SUITES)} only, not {source}'s (docs/pixel_vlm.md): "
        "these numbers do not say what looking shows"
    )


def header(
    config: BenchConfig,
    resolved: Sequence[ResolvedPolicy],
    out: Path,
    executor: str,
    workers: int,
) -> str:
    """The run header: what runs, with which perception, executor and text embedder, where."""
    source = config.dataset or config.suite
    seeds = " ".join(str(s) for s in config.seeds)
    names = " ".join(policy_perceptions(config, resolved))
    text = (
        f"video-env bench: {source} | envs {' '.join(running_envs(config, resolved))} | "
        f"policies {names} | seeds {seeds}\n"
        f"  perception {perception_text(config, resolved, upper=True)} | text embedder "
        f"{config.text_embedder} | LLM {config.llm or 'none (offline reasoners)'} | "
        f"{executor} executor, {workers} worker{'s' if workers > 1 else ''} | results -> {out}"
    )
    random = config.random_weight_sources()
    if random:
        text += (
            f"\n  {RANDOM_LABEL.upper()}: {', '.join(random)} loaded a checkpoint the tiny "
            "test builders made; the results test the plumbing, not a model"
        )
    unread = unread_note(config, resolved)
    if unread:
        text += f"\n  {unread}"
    return text


def running_envs(config: BenchConfig, resolved: Sequence[ResolvedPolicy]) -> list[str]:
    """The config's envs on which at least one of the run's policies acts, in order."""
    kinds = {kind for policy in resolved for kind in policy.env_kinds}
    return [env for env in config.envs if env in kinds]


def footer_notes(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The perception notes after a run: once, or per perception when the rows differ.

    A run that mixes a simulated policy with one that brings its own model gets each
    perception's note, followed by the policies it is about.
    """
    from benchmarks.summary import policy_label

    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:  # simulated on the synthetic world, real files or stand-ins: one
        simulated = SIMULATED in record_labels(record)
        groups[SIMULATED if simulated else perception_label([record]).split(" (")[0]].append(record)
    if len(groups) <= 1:
        return perception_notes(records)
    lines = []
    for group in groups.values():
        names = sorted({policy_label(dict(r)) for r in group})
        lines += [f"{note} (Rows of {', '.join(names)}.)" for note in perception_notes(group)]
    return lines
