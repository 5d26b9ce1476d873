"""The library's test fixtures: those shared with the laboratory (``shared_fixtures``).

And a hook that names a test still running after a minute (``still_running``).
"""

from shared_fixtures import (  # noqa: F401 (fixtures are found by their names here)
    CODED_FPS,
    CODED_FRAMES,
    RuleLLM,
    _model_output_cache,
    bench_records,
    checker_warnings,
    coded_video,
    smoke_turns,
    tiny_clip_dir,
    tiny_qwen_dir,
)
from still_running import pytest_runtest_protocol  # noqa: F401 (a hook: names a long test)
