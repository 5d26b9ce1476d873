"""Every registered env kind has a wire action model: its own, or text actions."""

from __future__ import annotations

import pytest

pytest.importorskip("openenv")

from video_env.envs import ENV_CLASSES
from video_env.envs.registration import ENTRY_POINTS
from video_env.errors import ConfigError
from video_env.serving.wire import TextWireAction, ZoomWireAction, action_model


@pytest.mark.parametrize("kind", sorted(ENV_CLASSES))
def test_every_kind_takes_text_and_abandon_on_the_wire(kind: str) -> None:
    model = action_model(ENV_CLASSES[kind].__name__)
    assert model(kind="text", text="answer(A)").text == "answer(A)"
    assert model(kind="abandon", reason="max_turns").reason == "max_turns"


def test_a_registered_class_without_its_own_model_takes_text_actions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(ENTRY_POINTS, "Probe", "video_env.envs.probe:ProbeEnv")
    assert action_model("ProbeEnv") is TextWireAction
    assert action_model("ZoomEnv") is ZoomWireAction
    with pytest.raises(ValueError, match="kind"):  # pydantic: only text and abandon
        TextWireAction(kind="answer", answer="A")
    with pytest.raises(ConfigError, match="no wire action model for NoEnv"):
        action_model("NoEnv")
