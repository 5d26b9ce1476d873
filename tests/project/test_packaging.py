"""The core package imports and its CLI works without any optional extra."""

import json
import subprocess
import sys
from pathlib import Path

from video_env.cli import main

OPTIONAL = [
    "torch",
    "torchvision",
    "transformers",
    "open_clip",
    "sentence_transformers",
    "openai",
    "stable_baselines3",
    "sb3_contrib",
    "ray",
    "matplotlib",
    "hypothesis",
    "skvideo",
]

BLOCKER = f"""
import sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {OPTIONAL!r}:
            raise ImportError("blocked optional module " + name)
sys.meta_path.insert(0, Blocker())
"""


def run_without_extras(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + code], capture_output=True, text=True, timeout=120
    )


def test_core_imports_without_extras() -> None:
    result = run_without_extras(
        "import video_env, video_env.video, video_env.cli.info\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{OPTIONAL!r}))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_missing_extra_error_names_the_extra() -> None:
    result = run_without_extras(
        "from video_env._optional import require\n"
        "try:\n    require('torch', 'models', 'the Qwen2.5-VL backend')\n"
        "except ImportError as e:\n    print(type(e).__name__, e)\n"
    )
    assert "BackendNotInstalled" in result.stdout
    assert "pip install 'video-env[models]'" in result.stdout


def test_info_json_reports_backends(capsys: object) -> None:
    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)  # type: ignore[attr-defined]
    assert info["decoder"] in ("torchcodec", "decord", "pyav")
    assert info["backends"]["pyav"]["installed"] is True
    assert info["backends"]["torch"]["extra"] == "models"
    assert info["backends"]["diskcache"]["extra"] == "models, llm"  # the model-output cache
    assert info["backends"]["matplotlib"]["extra"] == "bench"  # the benchmark's plots


def test_console_script_help_and_info() -> None:
    script = Path(sys.executable).with_name("video-env")
    out = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "info" in out
    result = subprocess.run(
        [sys.executable, "-m", "video_env.cli", "info"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and "decoder in use" in result.stdout
