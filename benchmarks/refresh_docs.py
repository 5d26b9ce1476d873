"""``scripts/refresh-docs``: regenerate every number of the README and ``docs/example-run``.

It runs, with ``--fresh`` and the default set-up (what ``scripts/run-main`` runs):

1. ``video-env bench`` (synth-quick, every env, every offline policy, seed 0), whose tables
   and plots are copied into ``docs/example-run/``;
2. ``video-env bench --suite synth-hour --policies falconeye sequential --envs zoom --seeds
   0 1 2``, whose ``summary.csv`` is copied to ``docs/example-run/synth-hour.csv``;

then rewrites the README's regions between ``<!-- refresh-docs:NAME -->`` and
``<!-- /refresh-docs:NAME -->`` from those two tables. Idempotent: a second run on the same
commit changes nothing (plots aside where matplotlib differs). ``tests/project/test_docs.py`` checks
that the README's regions match the committed tables.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "example-run"
RUNS = ROOT / "runs" / "refresh-docs"
HOUR_ARGS = ["--suite", "synth-hour", "--policies", "falconeye", "sequential", "--envs", "zoom",
             "--seeds", "0", "1", "2", "--no-plots"]  # fmt: skip
COPIED = ("summary.md", "summary.csv", "categories.csv", "frontier.png", "categories.png",
          "timeline.png", "reliability.png")  # fmt: skip
_ENV_ORDER = {"zoom": 0, "pacing": 1, "clip_query": 2}

Row = dict[str, str]


def read_csv(text: str) -> list[Row]:
    """Rows of a summary CSV."""
    return list(csv.DictReader(io.StringIO(text)))


def _num(row: Row, key: str) -> float:
    return float(row[key]) if row.get(key) else float("nan")


def _tokens(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.2f} M"
    if value >= 1e3:
        return f"{value / 1e3:.0f} k"
    return f"{value:.0f}"


def _calls(value: float) -> str:
    return "0" if value == 0 else f"{value:.1f}"


def readme_table(rows: Sequence[Row]) -> str:
    """The README's results table (Markdown) from the default run's ``summary.csv``.

    The seed envs' rows; the Tools env's are in ``docs/example-run`` and ``docs/tools.md``.
    """
    lines = [
        "| env | policy | accuracy (95 % CI) | mean GToU | VLM calls | model tokens | frames |",
        "|---|---|---|---|---|---|---|",
    ]
    seeds = [r for r in rows if r["env"] in _ENV_ORDER]  # the Tools rows: docs/tools.md
    for r in sorted(seeds, key=lambda r: (_ENV_ORDER[r["env"]], r["env"], r["policy"])):
        acc = (
            f"{_num(r, 'accuracy'):.2f} ({_num(r, 'acc_ci_low'):.2f}–{_num(r, 'acc_ci_high'):.2f})"
        )
        lines.append(
            f"| {r['env']} | {r['policy']} | {acc} | {_num(r, 'mean_gtou'):.2f} | "
            f"{_calls(_num(r, 'mean_vlm_calls'))} | {_tokens(_num(r, 'mean_model_tokens'))} | "
            f"{_num(r, 'mean_frames'):.0f} |"
        )
    return "\n".join(lines) + "\n"


def _pick(rows: Sequence[Row], env: str, policy: str) -> Row:
    return next(r for r in rows if r["env"] == env and r["policy"] == policy)


def findings(quick: Sequence[Row], hour: Sequence[Row]) -> str:
    """The README's sentences about FALCONEye, every comparison computed from the tables."""
    fe, sq = _pick(quick, "zoom", "falconeye[offline]"), _pick(quick, "zoom", "sequential")
    so, un = _pick(quick, "zoom", "socratic[offline]"), _pick(quick, "zoom", "uniform")
    hfe, hsq = _pick(hour, "zoom", "falconeye[offline]"), _pick(hour, "zoom", "sequential")
    a, b = _num(hfe, "accuracy"), _num(hsq, "accuracy")
    verb = "beats" if a > b else "trails" if a < b else "ties with"
    overlap = _num(hfe, "acc_ci_low") <= _num(hsq, "acc_ci_high") and _num(
        hsq, "acc_ci_low"
    ) <= _num(hfe, "acc_ci_high")
    episodes = int(_num(hfe, "episodes"))
    return (
        f"On `synth-quick`, FALCONEye[offline] answers {_num(fe, 'accuracy'):.2f} of the "
        f"questions right against {_num(so, 'accuracy'):.2f} for Socratic[offline] and "
        f"{_num(un, 'accuracy'):.2f} for the plain VLM (`uniform`), with "
        f"{_num(fe, 'mean_vlm_calls'):.1f} VLM calls per question against Sequential's "
        f"{_num(sq, 'mean_vlm_calls'):.1f} (accuracy {_num(sq, 'accuracy'):.2f}). On the "
        f"{episodes // 3} questions of `synth-hour` over seeds 0 1 2 ({episodes} episodes per "
        f"policy) it {verb} Sequential in accuracy: {a:.3f} "
        f"({_num(hfe, 'acc_ci_low'):.3f}–{_num(hfe, 'acc_ci_high'):.3f}) with "
        f"{_num(hfe, 'mean_vlm_calls'):.0f} VLM calls against {b:.3f} "
        f"({_num(hsq, 'acc_ci_low'):.3f}–{_num(hsq, 'acc_ci_high'):.3f}) with "
        f"{_num(hsq, 'mean_vlm_calls'):.0f}"
        + ("; the 95 % CIs overlap." if overlap else "; the 95 % CIs do not overlap.")
        + "\n"
    )


def replace_region(text: str, name: str, content: str) -> str:
    """``text`` with the region ``name`` holding ``content``.

    Raises:
        ValueError: If the region's markers are missing.
    """
    pattern = re.compile(
        rf"(<!-- refresh-docs:{name} -->\n)(.*?)(<!-- /refresh-docs:{name} -->)", re.DOTALL
    )
    if not pattern.search(text):
        raise ValueError(f"no <!-- refresh-docs:{name} --> region")
    return pattern.sub(lambda m: m.group(1) + content + m.group(3), text, count=1)


def region(text: str, name: str) -> str:
    """The content of region ``name``."""
    match = re.search(
        rf"<!-- refresh-docs:{name} -->\n(.*?)<!-- /refresh-docs:{name} -->", text, re.DOTALL
    )
    if match is None:
        raise ValueError(f"no <!-- refresh-docs:{name} --> region")
    return match.group(1)


def update_readme(readme: str, quick: Sequence[Row], hour: Sequence[Row]) -> str:
    """The README with its generated regions rewritten."""
    readme = replace_region(readme, "table", readme_table(quick))
    return replace_region(readme, "findings", findings(quick, hour))


def main(argv: Sequence[str] = ()) -> int:
    """Run both benchmarks, copy their outputs, rewrite the README; returns 0."""
    from video_env.cli import main as cli

    quick, hour = RUNS / "synth-quick", RUNS / "synth-hour"
    for out, extra in ((quick, []), (hour, HOUR_ARGS)):
        code = cli(["bench", *extra, "--fresh", "--quiet", "--out", str(out), *argv])
        if code:
            return code
    EXAMPLE.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        if (quick / name).exists():
            shutil.copyfile(quick / name, EXAMPLE / name)
    shutil.copyfile(hour / "summary.csv", EXAMPLE / "synth-hour.csv")
    readme_path = ROOT / "README.md"
    readme = update_readme(
        readme_path.read_text(encoding="utf-8"),
        read_csv((quick / "summary.csv").read_text(encoding="utf-8")),
        read_csv((hour / "summary.csv").read_text(encoding="utf-8")),
    )
    readme_path.write_text(readme, encoding="utf-8")
    print(f"refreshed README.md and {EXAMPLE.relative_to(ROOT)}/ from {RUNS.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
