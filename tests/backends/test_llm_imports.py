"""The LLM backends import without their extras, and say which extra to install."""

import subprocess
import sys

BLOCKED = ["openai", "tenacity", "json_repair", "torch", "transformers", "tokenizers"]

BLOCKER = f"""
import sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ImportError("blocked optional module " + name)
sys.meta_path.insert(0, Blocker())
"""

CODE = """
import video_env.backends.llm as llm
from video_env.errors import BackendNotInstalled
assert llm.make_llm(None) is None
assert llm.parse_json_reply('{"a": 1}') == {"a": 1}  # clean JSON needs no repair library
for build in (
    lambda: llm.OpenAICompatibleLLM("m", "http://127.0.0.1:9/v1"),
    lambda: llm.TransformersLLM("."),  # a folder that exists: the missing extra fails first
    lambda: llm.parse_json_reply('{"a": 1,'),
):
    try:
        build()
    except BackendNotInstalled as e:
        print(e.extra)
print(sorted(m for m in sys.modules if m.split('.')[0] in BLOCKED_NAMES))
"""


def test_llm_package_imports_without_extras() -> None:
    code = BLOCKER + f"BLOCKED_NAMES = {BLOCKED!r}\n" + CODE
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["llm", "models", "llm", "[]"]
