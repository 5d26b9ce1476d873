"""The task class of the env tasks: its docs come from video-env, not from a hub dataset."""

from __future__ import annotations

from typing import Any

from datasets import Dataset, DatasetDict  # type: ignore[import-untyped, import-not-found, unused-ignore]
from lmms_eval.api.task import ConfigurableTask  # type: ignore[import-untyped, import-not-found, unused-ignore]
from loguru import logger  # type: ignore[import-untyped, import-not-found, unused-ignore]

from benchmarks.lmms.task_docs import docs_for

__all__ = ["VideoEnvTask"]


class VideoEnvTask(ConfigurableTask):  # type: ignore[misc]  # lmms_eval is untyped
    """A ``ConfigurableTask`` whose docs are video-env samples (``dataset_kwargs``).

    Args:
        config: The task's YAML config (its ``class`` key is dropped).
        **kwargs: ``ConfigurableTask``'s own.
    """

    def __init__(self, *args: Any, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if config is not None:
            config = {k: v for k, v in config.items() if k != "class"}
        super().__init__(*args, config=config, **kwargs)

    def download(self, dataset_kwargs: dict[str, Any] | None = None) -> None:
        """Build the docs from video-env's samples (no download)."""
        docs = docs_for(dataset_kwargs)
        split = self.config.test_split
        self.dataset = DatasetDict({split: Dataset.from_list(docs)})
        self.dataset_no_image = self.dataset
        logger.info(f"video-env task {self.config.task}: {len(docs)} docs")
