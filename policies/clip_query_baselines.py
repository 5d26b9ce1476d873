"""VideoAgent's comparison on the ClipQuery env: uniform sampling of N frames.

VideoAgent's headline is accuracy per frame against uniform sampling (the paper's
EgoSchema comparison: 54.1 % with 8.4 frames on average against uniformly sampled frames).
``uniform-N`` captions N frames placed as the env's initial frames (the released
``np.linspace`` over the 1 fps grid, both ends included) and answers at once, through the
LLM with VideoAgent's predict prompt or, offline, through the documented reasoner. No
self-reflection, no retrieval: the frames seen are exactly N.
"""

from __future__ import annotations

from typing import Any

from policies.observations import frame_captions, parse_options
from policies.videoagent import VideoAgentPolicy
from video_env.actions import AnswerAction
from video_env.backends.llm.base import LLM
from video_env.errors import ConfigError

#: Frames of the registered ``uniform-N`` (about VideoAgent's 8.4 frames on EgoSchema).
DEFAULT_UNIFORM_FRAMES = 8


class UniformFramesPolicy(VideoAgentPolicy):
    """N uniformly placed frames, captioned, then one answer (VideoAgent's baseline).

    Args:
        n_frames: Frames captioned (the env's ``initial_frames``).
        llm: The LLM (``None``: the offline reasoner).
        **settings: Passed to :class:`~policies.videoagent.VideoAgentPolicy` (``fps``,
            ``margin_s``, ``on_unusable``, ``reask``, ``seed``).

    Raises:
        ConfigError: If ``n_frames < 1``.
    """

    def __init__(
        self, n_frames: int = DEFAULT_UNIFORM_FRAMES, llm: LLM | None = None, **settings: Any
    ) -> None:
        if n_frames < 1:
            raise ConfigError(f"n_frames must be >= 1, got {n_frames}")
        super().__init__(llm, **settings)
        self.n_frames = n_frames
        self.env_kwargs = {
            "clip_query": {
                "initial_frames": n_frames,
                "max_frames": max(32, n_frames),
                "max_rounds": 0,
            }
        }
        base = f"uniform-{n_frames}"
        self.name = base if llm is not None else f"{base}[offline]"

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Answer from the N captions at once."""
        question, options = observation["question"], parse_options(observation["options"])
        duration = float(observation["duration"][0])
        captions = frame_captions(observation)
        answer, support, _, _ = self._predict(question, options, captions, duration)
        if answer is None:  # unparsable, as VideoAgent's released -1: a random option
            answer = self._random_answer(options)
        return AnswerAction(answer, self._window(captions, support, duration))


def make_uniform_frames(arg: str, llm: LLM | None = None, **settings: Any) -> UniformFramesPolicy:
    """``uniform-frames:N`` from the registry.

    Raises:
        ConfigError: If ``N`` is not a positive integer.
    """
    try:
        n = int(arg)
    except ValueError:
        raise ConfigError(f"uniform-frames:N needs an integer N, got {arg!r}") from None
    return UniformFramesPolicy(n, llm, **settings)
