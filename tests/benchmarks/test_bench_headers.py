"""The run header, the footer, run.json, summary.csv and the plots say the same thing."""

import csv
import json
import re
from pathlib import Path

import pytest

from benchmarks.config import BenchConfig
from benchmarks.header import perception_text
from benchmarks.jobs import resolve_policies
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
    # synth-quick is no suite the pixel VLM reads: said before, after, in run.json and summary
    unread = "PIXEL-VLM OUTSIDE WHAT IT READS: the pixel VLM (videoscout:pixel-dapo) reads"
    assert lines[2].strip().startswith(unread)
    assert sum(line.startswith(unread) for line in lines) == 1  # once after the run
    assert meta["pixel_vlm_unread_note"].startswith(unread)
    assert unread.split(":")[1].strip() in (out / "summary.md").read_text()


def test_the_header_knows_a_policy_s_own_perception_before_running() -> None:
    pytest.importorskip("torch")
    config = BenchConfig(suite="synth-tiny", envs=("pacing", "zoom"),
                         policies=("videoscout:pixel", "falconeye"))  # fmt: skip
    assert policy_perceptions(config, resolve_policies(config)) == {
        "videoscout:pixel": "pixel-vlm",
        "falconeye[offline]": "simulated",  # the name the tables will show
    }
    one = BenchConfig(suite="synth-tiny", envs=("pacing",), policies=("videoscout:pixel",))
    assert perception_text(one, resolve_policies(one), upper=True) == "PIXEL-VLM"


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


def test_a_pixel_vlm_run_is_labelled_unless_its_suite_is_one_the_model_reads() -> None:
    pytest.importorskip("torch")
    from benchmarks.header import unread_note
    from video_env.pixel.splits import READ_SUITES

    def note(**fields: object) -> str | None:
        config = BenchConfig(envs=("pacing",), **fields)  # type: ignore[arg-type]
        return unread_note(config, resolve_policies(config))

    assert "synth-glimpse" in READ_SUITES
    assert note(suite="synth-glimpse", perception="pixel-vlm", policies=("pacing-1x",)) is None
    assert note(suite="synth-tiny", policies=("pacing-1x",)) is None  # simulated: its own note
    off = note(suite="synth-hour", perception="pixel-vlm", policies=("pacing-1x", "random"))
    assert off is not None and "(pacing-1x, random)" in off and "not synth-hour's" in off
    own = note(suite="synth-tiny", policies=("videoscout:pixel-dapo", "random"))
    assert own is not None and "(videoscout:pixel-dapo)" in own  # random perceives simulated
