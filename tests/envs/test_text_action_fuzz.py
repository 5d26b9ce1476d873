"""Random and malformed LLM text through TextActions: never a crash, invariants hold."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from video_env.backends import LexicalEmbedder
from video_env.backends.simulated import SimulatedCaptioner, SimulatedCLIP, SimulatedVLM
from video_env.envs import ClipQueryEnv, PacingEnv, Perception, ZoomEnv
from video_env.wrappers import TextActions

VALID = {
    "pacing": ["speed(1x)", "speed(2x)", "speed(4x)", "rewatch(2)", 'answer("A", [0, 30])',
               "<think>t</think><memory>m</memory><action>speed(2x)</action>"],
    "zoom": ["evaluate([0, 60])", "evaluate([10, 15], [100, 120])", 'answer("B", [60, 120])',
             "evaluate(01:00-02:00)"],
    "clip_query": ['query(1, "a clock")', 'query(2, "a sign") query(3, "a car")',
                   'answer("C", [10, 20])'],
}  # fmt: skip
NOISE = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


def perception() -> Perception:
    return Perception(
        SimulatedVLM(), SimulatedCaptioner(), SimulatedCLIP(embedder=LexicalEmbedder())
    )


def mutate(draw: st.DrawFn, kind: str) -> str:
    base = draw(st.sampled_from(VALID[kind]))
    choice = draw(st.integers(0, 4))
    if choice == 0:
        return base
    if choice == 1:  # cut anywhere
        return base[: draw(st.integers(0, len(base)))]
    if choice == 2:  # prose and fences around
        return f"{draw(NOISE)}\n```\n{base}\n```{draw(NOISE)}"
    if choice == 3:  # a character replaced
        i = draw(st.integers(0, len(base) - 1))
        return base[:i] + draw(st.characters(codec="utf-8")) + base[i + 1 :]
    return draw(NOISE)


ENVS = {
    "pacing": lambda: PacingEnv("synth-tiny", perception=perception(), max_invalid_actions=50),
    "zoom": lambda: ZoomEnv(
        "synth-tiny", perception=perception(), budget=8, max_invalid_actions=50
    ),
    "clip_query": lambda: ClipQueryEnv(
        "synth-tiny", perception=perception(), max_invalid_actions=50
    ),
}


@pytest.mark.parametrize("kind", sorted(ENVS))
@settings(max_examples=150)
@given(data=st.data())
def test_text_fuzz(kind: str, data: st.DataObject) -> None:
    env = TextActions(ENVS[kind]())
    obs, _ = env.reset(seed=data.draw(st.integers(0, 100)))
    for _ in range(data.draw(st.integers(5, 25))):
        text = data.draw(st.composite(lambda d: mutate(d, kind))())
        obs, reward, terminated, truncated, info = env.step(text)
        assert env.observation_space.contains(obs)
        base = env.unwrapped
        if kind == "zoom":
            assert base.budget_left >= 0
        if kind == "clip_query":
            assert base.rounds_left >= 0
            assert base.frames_left >= 0
        if terminated or truncated:
            assert 0.0 <= info["episode"]["gtou"] <= 1.0
            obs, _ = env.reset()
