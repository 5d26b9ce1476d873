"""The library never contacts the Hub: a model that is not local fails at once (issue 25).

``HF_HUB_OFFLINE`` is removed from the environment and huggingface_hub's flag cleared, as
in a researcher's shell; every socket connection is refused and recorded, so any attempt
to reach the Hub shows up.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shared_fixtures import refused_connections

transformers = pytest.importorskip("transformers")
hub_constants = pytest.importorskip("huggingface_hub.constants")

from video_env.backends.registry import check_local_weights  # noqa: E402
from video_env.errors import BackendError  # noqa: E402

HUB_ID = "Qwen/Qwen2.5-VL-7B-Instruct"


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Online as far as the libraries know; every connection attempt recorded and refused."""
    attempts = refused_connections(monkeypatch)
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    yield attempts
    assert hub_constants.HF_HUB_OFFLINE is False  # the flag is restored after each load


def test_a_hub_id_without_local_files_fails_at_once(connections: list[Any]) -> None:
    from video_env.backends.transformers_vlm import TransformersVLM

    _ = transformers.AutoProcessor, transformers.AutoModelForImageTextToText  # imports first
    started = time.perf_counter()
    with pytest.raises(BackendError, match="never downloads"):
        TransformersVLM(HUB_ID, device="cpu")
    with pytest.raises(BackendError, match="never downloads"):
        check_local_weights(HUB_ID)
    assert time.perf_counter() - started < 5
    assert connections == []


def test_a_local_llm_is_loaded_from_local_files_only(connections: list[Any]) -> None:
    from video_env.backends.llm.transformers_local import TransformersLLM

    with pytest.raises(BackendError):
        TransformersLLM("Qwen/Qwen2.5-0.5B-Instruct")
    assert connections == []


def test_open_clip_pretrained_weights_are_never_downloaded(
    connections: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("open_clip")
    import open_clip.pretrained  # noqa: F401 - imported before timing

    from video_env.backends.openclip import OpenCLIP

    monkeypatch.setenv("HOME", str(tmp_path))  # an empty ~/.cache/clip
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty Hub cache
    started = time.perf_counter()
    with pytest.raises(BackendError, match="never downloads"):
        OpenCLIP("RN50", pretrained="openai", device="cpu")
    with pytest.raises(BackendError, match="never downloads"):
        OpenCLIP("ViT-B-32", pretrained="laion2b_s34b_b79k", device="cpu")
    assert time.perf_counter() - started < 20
    assert connections == []
