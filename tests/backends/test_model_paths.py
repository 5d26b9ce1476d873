"""A model path that does not exist is named in one line, before any Hub lookup (issue 62).

``HF_HUB_OFFLINE`` is unset, as in a researcher's shell; every socket connection and every
``huggingface_hub`` cache lookup is refused and recorded, so the check must come first.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from shared_fixtures import refused_connections

from video_env.backends.llm import make_llm
from video_env.backends.model_paths import looks_like_path, missing_model_path
from video_env.backends.registry import (
    BackendSpec,
    check_local_weights,
    make_backend,
    parse_spec,
    validate_spec,
)
from video_env.cli import main
from video_env.errors import BackendError, ConfigError

MISSING = "/nonexistent/Qwen2.5-VL-7B-Instruct"


@pytest.fixture
def no_hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Online as far as the libraries know; connections and Hub cache lookups recorded."""
    attempts = refused_connections(monkeypatch)
    hub = pytest.importorskip("huggingface_hub")

    def lookup(repo_id: str, *_: Any, **__: Any) -> None:
        attempts.append(repo_id)
        raise AssertionError(f"{repo_id!r} was looked up on the Hub")

    monkeypatch.setattr(hub, "try_to_load_from_cache", lookup)
    yield attempts
    assert attempts == []


def one_line(exc: BaseException, *names: str) -> None:
    text = str(exc)
    assert "\n" not in text and "Repo id" not in text
    assert all(name in text for name in names), text


@pytest.mark.parametrize(
    ("role", "spec"),
    [
        ("vlm", f"qwen2.5-vl:{MISSING}"),
        ("captioner", "transformers:./no/such/model"),
        ("vlm", "qwen2.5-vl:models/qwen/7b"),  # two slashes: a relative path, not an id
        ("vlm", "qwen2.5-vl:~/no-such-folder-62/model"),
        ("vlm", "pixel-vlm:/nonexistent/pixel_vlm"),
        ("clip", "pixel-real:/nonexistent/pixel_models"),
        ("clip", "open_clip:local-dir:/nonexistent/clip"),
        ("clip", "open_clip:ViT-B-32:/nonexistent/clip/open_clip_model.pt"),
    ],
)
def test_a_missing_model_path_in_a_spec_is_named_before_any_hub_lookup(
    no_hub: list[Any], role: str, spec: str
) -> None:
    for check in (validate_spec, make_backend):
        with pytest.raises(ConfigError, match="no such folder") as info:
            check(role, spec)
        one_line(info.value, spec)


@pytest.mark.parametrize(
    ("load", "message"),
    [
        (lambda: make_llm("local:models/qwen/0.5b"), "no such folder"),
        (lambda: check_local_weights(MISSING), "no model directory"),
    ],
)
def test_llm_specs_and_the_weights_check_name_a_missing_path(
    no_hub: list[Any], load: Callable[[], Any], message: str
) -> None:
    with pytest.raises((ConfigError, BackendError), match=message) as info:
        load()
    one_line(info.value)


def test_a_malformed_hub_id_is_one_line_too(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("huggingface_hub")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(BackendError, match="neither a model folder nor a Hub id") as info:
        check_local_weights("not a repo id")
    assert "\n" not in str(info.value) and "'not a repo id'" in str(info.value)


def test_the_loaders_themselves_refuse_a_missing_path_before_the_hub(no_hub: list[Any]) -> None:
    pytest.importorskip("transformers")
    from video_env.backends.llm.transformers_local import TransformersLLM
    from video_env.backends.transformers_vlm import TransformersVLM

    loaders: list[Callable[[], Any]] = [
        lambda: TransformersVLM(MISSING, device="cpu"),
        lambda: TransformersLLM(MISSING),
    ]
    if importlib.util.find_spec("open_clip") is not None:
        from video_env.backends.openclip import OpenCLIP

        loaders += [
            lambda: OpenCLIP(MISSING, device="cpu"),
            lambda: OpenCLIP("ViT-B-32", pretrained="./no/such/checkpoint.pt", device="cpu"),
        ]
    for load in loaders:
        with pytest.raises(
            BackendError,
            match=r"no model directory|no open_clip model folder|nor an existing checkpoint",
        ) as info:
            load()
        one_line(info.value)


def test_the_bench_stops_on_a_missing_model_path_with_one_line(
    no_hub: list[Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = f"qwen2.5-vl:{MISSING}"
    args = ["bench", "--suite", "synth-tiny", "--quiet", "--no-plots", "--out", str(tmp_path)]
    assert main([*args, "--vlm", spec]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"'{spec}': no such folder" in err, err


def test_hub_ids_and_names_are_not_paths(tmp_path: Path) -> None:
    for name in ("Qwen/Qwen2.5-VL-7B-Instruct", "ViT-B-32", "hf-hub:org/repo"):
        assert not looks_like_path(name) and missing_model_path(name) is None
    for path in ("/abs/model", "./model", "../model", "~/model", "a/b/c"):
        assert looks_like_path(path)
    assert missing_model_path(str(tmp_path)) is None  # it exists
    hub = parse_spec("vlm", "qwen2.5-vl:Qwen/Qwen2.5-VL-7B-Instruct")
    assert hub == BackendSpec("transformers", "Qwen/Qwen2.5-VL-7B-Instruct")
