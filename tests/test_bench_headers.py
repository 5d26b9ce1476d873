"""The run header, the footer, run.json, summary.csv and the plots say the same thing."""

import csv
import json
import re
from pathlib import Path

import pytest

from benchmarks.config import BenchConfig
from benchmarks.header import perception_text
from benchmarks.provenance import policy_perceptions
from video_env.cli import main

#: A policy that brings its own perception (the shipped pixel VLM) and presets, and one
#: that perceives through the env's (simulated) roles.
TYPED = ["videoscout:pixel-dapo", "random"]


def _table(lines: list[str]) -> list[dict[str, str]]:
    """The Markdown table among ``lines`` as dicts."""
    rows = [
        [c.strip() for c in line.strip("|").split("|")] for line in lines if line.startswith("|")
    ]
    return [dict(zip(rows[0], r, strict=True)) for r in rows[2:]]


@pytest.mark.slow
def test_header_footer_run_json_and_summary_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "run"
    args = ["bench", "--envs", "pacing", "--policies", *TYPED, "--limit", "1", "--quiet",
            "--executor", "serial", "--workers", "2", "--no-plots", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    policies = re.search(r"\| policies (.+?) \| seeds", lines[0])
    assert policies is not None and policies.group(1).split() == TYPED  # as typed
    second = lines[1]
    assert "| serial executor, 1 worker |" in second  # what ran, not --workers
    perception = re.search(r"perception (.+?) \| text embedder", second)
    assert perception is not None
    said = perception.group(1)
    assert said == "PIXEL-VLM for videoscout:pixel-dapo; SIMULATED for random"

    meta = json.loads((out / "run.json").read_text())
    assert (meta["executor"], meta["workers"]) == ("serial", 1)
    assert meta["perception"] == said.replace("PIXEL-VLM", "pixel-vlm").replace(
        "SIMULATED", "simulated"
    )
    assert meta["policy_perception"] == {
        "videoscout:pixel-dapo": "pixel-vlm",
        "random": "simulated",
    }
    with (out / "summary.csv").open() as handle:
        csv_rows = {r["policy"]: r for r in csv.DictReader(handle)}
    assert set(csv_rows) == set(TYPED)  # the names typed, not the policies' own names
    scout = csv_rows["videoscout:pixel-dapo"]
    assert (scout["presets"], scout["rules"]) == ("question-first", "pixel-vlm")
    footer = _table(lines)
    assert (
        {r["policy"]: r["perception"] for r in footer}
        == {name: row["perception"] for name, row in csv_rows.items()}
        == meta["policy_perception"]
    )
    assert {r["policy"]: (r["presets"], r["rules"]) for r in footer} == {
        name: (row["presets"], row["rules"]) for name, row in csv_rows.items()
    }
    notes = [line for line in lines if line.startswith("Perception:")]
    assert any("PIXEL-VLM" in n and "videoscout:pixel-dapo" in n for n in notes)
    assert any("SIMULATED" in n and "(Rows of random.)" in n for n in notes)


def test_the_header_knows_a_policy_s_own_perception_before_running() -> None:
    pytest.importorskip("torch")
    config = BenchConfig(suite="synth-tiny", envs=("pacing", "zoom"),
                         policies=("videoscout:pixel", "falconeye"))  # fmt: skip
    assert policy_perceptions(config) == {
        "videoscout:pixel": "pixel-vlm",
        "falconeye[offline]": "simulated",  # the name the tables will show
    }
    one = BenchConfig(suite="synth-tiny", envs=("pacing",), policies=("videoscout:pixel",))
    assert perception_text(one, upper=True) == "PIXEL-VLM"


def test_summary_rows_keep_the_typed_name_and_move_presets_and_rules() -> None:
    from benchmarks.summary import brief_columns, record_label, summarize

    base = {"env": "pacing", "correct": True, "pacing_rules": "pixel-vlm"}
    scout = {**base, "job": "pacing|videoscout:pixel-dapo|q0|0",
             "policy": "videoscout:pixel-dapo+question-first"}  # fmt: skip
    guided = {**base, "job": "pacing|videoscout:pixel?guided=true|q0|0",
              "policy": "videoscout:pixel+question-first+guided?guided=true"}  # fmt: skip
    offline = {"env": "zoom", "correct": False, "job": "zoom|falconeye|q0|0",
               "policy": "falconeye[offline]"}  # fmt: skip
    rows = {r["policy"]: r for r in summarize([scout, guided, offline])}
    assert set(rows) == {"videoscout:pixel-dapo", "videoscout:pixel?guided=true",
                         "falconeye[offline]"}  # fmt: skip
    assert rows["videoscout:pixel?guided=true"]["presets"] == "question-first+guided"
    assert (rows["falconeye[offline]"]["presets"], rows["falconeye[offline]"]["rules"]) == ("", "")
    assert record_label(scout) == "videoscout:pixel-dapo (question-first, pixel-vlm rules)"
    assert "presets" in brief_columns(list(rows.values()))
    assert "presets" not in brief_columns([rows["falconeye[offline]"]])
