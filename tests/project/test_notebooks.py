"""The notebooks run top to bottom (small size), open with what they show, and carry no outputs.

Each notebook is executed with nbclient in a fresh kernel, with
``VIDEO_ENV_NOTEBOOK_SIZE=small`` so that all of them together stay within the CI budget
(and the lexical text embedder); a failing cell fails the test with the cell's traceback.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the dev extra installs nbformat")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
#: Seconds one notebook may take at the small size before the test fails (it takes far less).
CELL_TIMEOUT_S = 300
#: Modules a notebook needs beyond the ``notebooks`` extra (skipped without them).
NEEDS = {"04_real_models": ("transformers", "open_clip", "openai")}
#: Text a notebook's outputs must contain when run as the test runs it (no weights, no server).
SAYS = {
    "04_real_models": (
        "TINY RANDOM MODELS",  # the loud label of the random weights
        "MEAN NOTHING",
        "FAKE server at http://127.0.0.1:",  # the OpenAI-compatible path, labelled fake
        "perception: real, random weights (plumbing test) | simulated roles: []",  # not simulated
        "simulated=True (True: a stand-in",  # real annotations on a stand-in video
    )
}


def _ids() -> list[str]:
    return [path.stem for path in NOTEBOOKS]


def test_the_notebooks_exist() -> None:
    names = {path.name for path in NOTEBOOKS}
    for name in (
        "01_quickstart.ipynb",
        "02_custom_policy.ipynb",
        "03_learn_pacing.ipynb",
        "04_real_models.ipynb",
        "05_calibration.ipynb",
    ):
        assert name in names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids())
def test_outputs_are_stripped(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        assert cell.outputs == [], f"{path.name} cell {index} has outputs: run nbstripout {path}"
        assert cell.execution_count is None, f"{path.name} cell {index}: run nbstripout {path}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids())
def test_opens_with_what_it_shows_and_how_long_it_takes(path: Path) -> None:
    first = nbformat.read(path, as_version=4).cells[0]
    assert first.cell_type == "markdown"
    assert "**What this shows.**" in first.source
    assert re.search(r"\*\*How long it takes\.\*\* .*\d+ (s|min)", first.source)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids())
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbclient = pytest.importorskip("nbclient", reason="the dev extra installs nbclient")
    for module in NEEDS.get(path.stem, ()):
        pytest.importorskip(module, reason=f"{path.name} runs the real backends' code")
    monkeypatch.setenv("VIDEO_ENV_NOTEBOOK_SIZE", "small")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # The lexical embedder (the default from the reproducibility work on): importing
    # sentence-transformers alone would take most of the CI budget on a loaded 2-core machine.
    monkeypatch.setenv("VIDEO_ENV_TEXT_EMBEDDER", "lexical")
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},  # the notebook's working folder
    )
    client.execute()  # raises CellExecutionError (with the traceback) if a cell fails
    outputs = [
        output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs
    ]
    assert not [output for output in outputs if output.output_type == "error"]
    figures = [output for output in outputs if "image/png" in output.get("data", {})]
    assert figures, f"{path.name} drew no figure"
    printed = "".join(output.get("text", "") for output in outputs)
    for text in SAYS.get(path.stem, ()):
        assert text in printed, f"{path.name} did not print {text!r}"
