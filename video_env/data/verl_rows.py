"""video-env questions as verl's training rows (parquet), and the questions back from a row.

verl trains on parquet files of prompt rows (its ``RLHFDataset``): ``prompt`` (chat
messages), ``data_source``, ``ability``, ``reward_model`` (``style``, ``ground_truth``),
``extra_info`` (``index`` and free fields) and, for an agent loop, ``agent_name``.
:func:`verl_rows` makes one row per question; the agent loop that plays it
(``video_env_agent``) renders the episode's own prompt from the env's observations, so the
row's ``prompt`` is only the question (what verl's prompt-length filter measures). A row
names its question by ``extra_info["sample_id"]`` and where the question comes from by
``extra_info["video_env_source"]`` (a :class:`SampleSource` as JSON: a synthetic suite, or
a registered dataset with its annotations and videos), so a rollout worker loads the same
questions from the row alone (:func:`samples_of`, once per process and source).
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from video_env._optional import require
from video_env.errors import ConfigError
from video_env.types import VideoQA

__all__ = [
    "AGENT_NAME",
    "SampleSource",
    "export_verl",
    "sample_of",
    "samples_of",
    "verl_rows",
    "write_parquet",
]

#: The agent loop's registered name (``policies.training.verl_loop``), each row's ``agent_name``.
AGENT_NAME = "video_env_agent"
_PURPOSE = "verl's parquet rows"


@dataclass(frozen=True)
class SampleSource:
    """Where a row's questions come from: a synthetic suite, or a registered dataset.

    Attributes:
        suite: A synthetic suite's name (``synth-tiny``, ``synth-quick``, ...).
        dataset: A registered dataset's name instead (``video-env data list``).
        annotations: The dataset's annotation file or folder.
        video_root: The dataset's video folder.
        limit: The first ``limit`` questions only.

    Raises:
        ConfigError: Unless exactly one of ``suite`` and ``dataset`` is given, or if a
            dataset has no annotations.
    """

    suite: str | None = None
    dataset: str | None = None
    annotations: str | None = None
    video_root: str | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        if (self.suite is None) == (self.dataset is None):
            raise ConfigError("name either a suite or a dataset (with its annotations)")
        if self.dataset is not None and not self.annotations:
            raise ConfigError(f"the dataset {self.dataset!r} needs its annotations")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"limit must be at least 1, got {self.limit}")

    def to_json(self) -> str:
        """The source as the compact JSON a row carries (keys sorted: one text per source)."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> SampleSource:
        """The source a row's ``video_env_source`` names.

        Raises:
            ConfigError: If the text is not a source's JSON.
        """
        try:
            fields = json.loads(text)
            return cls(**fields)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"not a video-env sample source: {text[:200]!r} ({exc})") from exc

    def load(self) -> list[VideoQA]:
        """The source's questions, in order."""
        if self.suite is not None:
            from video_env.synth.suites import load_suite

            return load_suite(self.suite, limit=self.limit)
        from video_env.data import load

        return list(load(str(self.dataset), self.annotations, self.video_root, limit=self.limit))


_LOADING = threading.Lock()


def samples_of(source_json: str) -> dict[str, VideoQA]:
    """The questions of a row's source by id (loaded once per process and source).

    A rollout worker's episodes start together on its threads: one loads, the others wait.

    Raises:
        ConfigError: If the text is not a source, or two questions share an id.
    """
    with _LOADING:
        return _load(source_json)


@functools.lru_cache(maxsize=8)
def _load(source_json: str) -> dict[str, VideoQA]:
    samples = SampleSource.from_json(source_json).load()
    by_id = {sample.id: sample for sample in samples}
    if len(by_id) != len(samples):
        raise ConfigError("the source's sample ids are not unique")
    return by_id


def sample_of(extra_info: Any) -> VideoQA:
    """The question a row's ``extra_info`` names (``sample_id`` in ``video_env_source``).

    Raises:
        ConfigError: If the row does not name a question of its source.
    """
    if not isinstance(extra_info, dict) or "video_env_source" not in extra_info:
        raise ConfigError(
            "the row's extra_info names no video_env_source: write the rows with "
            "`video-env data export --format verl`"
        )
    samples = samples_of(str(extra_info["video_env_source"]))
    sample_id = str(extra_info.get("sample_id", ""))
    if sample_id not in samples:
        raise ConfigError(f"unknown sample_id {sample_id!r} in the row's source")
    return samples[sample_id]


def _question_text(sample: VideoQA) -> str:
    lines = [sample.question]
    if sample.options:
        pairs = zip(sample.option_letters, sample.options, strict=True)
        lines += [f"{letter}. {text}" for letter, text in pairs]
    return "\n".join(lines)


def verl_rows(
    samples: Sequence[VideoQA], source: SampleSource, agent_name: str = AGENT_NAME
) -> list[dict[str, Any]]:
    """One verl row per question of ``source`` (see the module docstring).

    ``reward_model["ground_truth"]`` is the answer ("" where unknown) for verl's reward
    managers; the agent loop never shows it to the model, and the env grades the episode.
    """
    source_json = source.to_json()
    return [
        {
            "data_source": f"video-env/{sample.source}",
            "prompt": [{"role": "user", "content": _question_text(sample)}],
            "ability": "video_qa",
            "reward_model": {"style": "rule", "ground_truth": sample.answer or ""},
            "extra_info": {
                "index": index,
                "sample_id": sample.id,
                "video_env_source": source_json,
            },
            "agent_name": agent_name,
        }
        for index, sample in enumerate(samples)
    ]


def write_parquet(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write ``rows`` as one parquet file (its folder made); the path.

    Raises:
        ConfigError: If there are no rows.
        BackendNotInstalled: Without pyarrow (the ``verl`` extra installs it).
    """
    if not rows:
        raise ConfigError("no rows to write: the source has no questions")
    pa = require("pyarrow", "verl", _PURPOSE)
    parquet = require("pyarrow.parquet", "verl", _PURPOSE)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    parquet.write_table(pa.Table.from_pylist(list(rows)), str(out))
    return out


def export_verl(source: SampleSource, path: str | Path, agent_name: str = AGENT_NAME) -> int:
    """Write ``source``'s questions as verl's rows at ``path``; the number of rows."""
    rows = verl_rows(source.load(), source, agent_name)
    write_parquet(rows, path)
    return len(rows)
