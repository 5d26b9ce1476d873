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

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
#: Seconds one notebook may take at the small size before the test fails (it takes far less).
CELL_TIMEOUT_S = 300


def _ids() -> list[str]:
    return [path.stem for path in NOTEBOOKS]


def test_the_notebooks_exist() -> None:
    names = {path.name for path in NOTEBOOKS}
    for name in (
        "01_quickstart.ipynb",
        "02_custom_policy.ipynb",
        "03_learn_pacing.ipynb",
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
