"""What an environment is given: its dataset, the arguments every env takes, a sample index."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import TypedDict

from video_env.backends.base import CLIP, VLM, Captioner
from video_env.envs.perception import Perception
from video_env.errors import ConfigError
from video_env.metrics.judges import Judge
from video_env.synth.suites import load_suite
from video_env.types import VideoQA

#: Suite drawn from when no dataset is given.
DEFAULT_SUITE = "synth-quick"


def resolve_dataset(dataset: Sequence[VideoQA] | str | None) -> list[VideoQA]:
    """A list of samples from a suite name, a sequence of samples, or the default suite.

    Raises:
        ConfigError: If the dataset is empty.
    """
    samples = (
        load_suite(dataset or DEFAULT_SUITE)
        if dataset is None or isinstance(dataset, str)
        else list(dataset)
    )
    if not samples:
        raise ConfigError("the dataset has no samples")
    return samples


#: The observation layout of the latest env ids (``-v1``): ``option_list`` beside
#: ``options``, and the video's ``duration`` in every env. ``-v0`` ids pass 0.
OBSERVATION_VERSION = 1


class EnvArguments(TypedDict, total=False):
    """The arguments every env takes (see :class:`VideoQAEnv`).

    Env classes take them as ``**common`` and pass them on, so they are declared once.
    """

    perception: Perception | str | None
    vlm: VLM | str | None
    captioner: Captioner | str | None
    clip: CLIP | str | None
    judge: Judge | str | None
    max_invalid_actions: int
    invalid_action_penalty: float
    standin_missing_videos: bool
    render_mode: str | None
    observation_version: int


def checked_index(index: object, n_samples: int) -> int:
    """``options["index"]`` as a valid sample index.

    Raises:
        TypeError: If it is not an integer.
        IndexError: If it is outside ``[0, n_samples)`` (negative indices are refused:
            ``-1`` silently meaning "the last sample" hides caller bugs).
    """
    if isinstance(index, bool) or not hasattr(index, "__index__"):
        raise TypeError(f"options['index'] must be an int, got {type(index).__name__}")
    value = operator.index(index)
    if not 0 <= value < n_samples:
        raise IndexError(f"options['index'] must be in [0, {n_samples}), got {value}")
    return value
