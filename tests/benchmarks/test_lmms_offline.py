"""``python -m benchmarks.lmms.offline``: a command runs against the local fake model."""

import sys
from pathlib import Path

import pytest

from benchmarks.lmms.offline import main

#: A client of the fake server: what it replies, and what the command's environment holds.
CLIENT = """
import json, os, sys, urllib.request
base = os.environ["OPENAI_API_BASE"]
assert base == os.environ["VIDEO_ENV_VLM_BASE_URL"] == os.environ["VIDEO_ENV_LLM_BASE_URL"]
body = json.dumps({"model": "fake", "messages": [{"role": "user", "content": "hi"}]}).encode()
for _ in range(3):
    request = urllib.request.Request(base + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        print(json.loads(reply.read())["choices"][0]["message"]["content"])
print(os.environ["HF_HUB_OFFLINE"], os.environ["HF_DATASETS_OFFLINE"], os.environ["WANDB_MODE"])
sys.exit(3)
"""


def test_the_command_gets_the_scripted_replies_and_its_status_is_returned(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "client.py").write_text(CLIENT)
    client = str(tmp_path / "client.py")
    argv = ["--reply", "first", "--reply", "then", "--", sys.executable, client]
    assert main(argv) == 3
    out, err = capfd.readouterr()
    assert out.splitlines() == ["first", "then", "then", "1 1 disabled"]
    assert "fake OpenAI-compatible model at http://127.0.0.1:" in err


def test_a_missing_command_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--reply", "x"])
    assert "give the command to run after --" in capsys.readouterr().err
    assert main(["--", "no-such-command-here"]) == 127
