"""A video-env agent as an lmms-eval model: ``--model video_env`` (imports lmms_eval).

Each ``generate_until`` request becomes a :class:`~video_env.types.VideoQA`
(:func:`~benchmarks.lmms.requests.request_sample`), the policy plays one episode in its
environment (:func:`policies.run_episode`), and the answer text goes back to the task's
scorer. The episode's summary (:func:`~benchmarks.lmms.episodes.summarise`) travels as the
reply's reasoning, ``<think>{"video_env": {...}}</think>ANSWER``: lmms-eval's CLI strips
reasoning tags before scoring (``--reasoning_tags``, on by default) and ``--log_samples`` keeps
the raw reply as the sample's ``resps``, the answer as its ``filtered_resps``
(``episode_log=none`` sends the bare answer). Its model tokens are the sample's
``token_counts``. A request that cannot be played (no video, a bad doc, an episode that
raises) answers ``""`` and logs the error; the evaluation goes on.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import gymnasium as gym
from lmms_eval.api.instance import GenerationResult, Instance, TokenCounts  # type: ignore[import-untyped, import-not-found, unused-ignore]
from lmms_eval.api.model import lmms  # type: ignore[import-untyped, import-not-found, unused-ignore]
from loguru import logger  # type: ignore[import-untyped, import-not-found, unused-ignore]

import policies
from benchmarks.config import BenchConfig
from benchmarks.lmms.episodes import model_tokens, summarise
from benchmarks.lmms.requests import request_sample
from policies.resolved import resolve
from video_env.backends.llm import make_llm
from video_env.backends.text import use_text_embedder
from video_env.envs import ENV_CLASSES
from video_env.errors import ConfigError
from video_env.provenance import VideoProvenanceWarning

__all__ = ["LOG_KEY", "VideoEnvModel"]

#: The key of the episode summary in the logged reasoning block.
LOG_KEY = "video_env"
#: Where the summary goes: a reasoning block of the reply, or nowhere.
EPISODE_LOGS = ("think", "none")
#: The arguments lmms-eval itself adds to ``--model_args`` (ignored).
LMMS_EVAL_ARGS = ("batch_size", "device", "max_batch_size")


class VideoEnvModel(lmms):  # type: ignore[misc]  # lmms_eval ships no type information
    """A video-env policy answering lmms-eval's video requests.

    Args (``--model_args``, the spec strings of ``video-env bench``):
        policy: A registered policy name (``falconeye``, ``videoagent``...).
        llm: LLM spec of prompted policies (``openai:MODEL``...); none: offline reasoners.
        vlm: VLM spec (``openai:MODEL`` with ``$VIDEO_ENV_VLM_BASE_URL``, ``qwen2.5-vl:PATH``,
            ``simulated``...).
        captioner: Captioner spec (default: the VLM when real).
        clip: CLIP spec.
        perception: Default of the roles left simulated (``simulated``, ``pixel-real``...).
        env: Environment kind (default: the policy's first).
        seed: Seed of every episode's reset.
        max_steps: Steps after which an episode is abandoned.
        options_field: Doc field of the options (default: read from the prompt).
        gt_field: Doc field of evidence intervals, for GToU.
        answer_field: Doc field of the answer, for the env's own grade and simulated
            perception (never shown to the policy).
        text_embedder: ``lexical`` or ``minilm`` (offline reasoner, simulated CLIP).
        episode_log: ``think`` (the summary as the reply's reasoning block) or ``none``.
        **kwargs: lmms-eval's own (:data:`LMMS_EVAL_ARGS`), ignored.

    Raises:
        ConfigError: For an unknown argument, a bad number, policy, env or backend spec.
    """

    is_simple = True

    def __init__(
        self,
        policy: str = "falconeye",
        llm: str | None = None,
        vlm: str = "simulated",
        captioner: str | None = None,
        clip: str = "simulated",
        perception: str = "simulated",
        env: str | None = None,
        seed: int = 0,
        max_steps: int = 200,
        options_field: str | None = None,
        gt_field: str | None = "gt_intervals",
        answer_field: str | None = None,
        text_embedder: str = "lexical",
        episode_log: str = "think",
        **kwargs: Any,
    ) -> None:
        super().__init__()
        unknown = sorted(set(kwargs) - set(LMMS_EVAL_ARGS))
        if unknown:  # a typo must not run the defaults under the name meant
            raise ConfigError(f"unknown model_args {unknown} of the video_env model")
        self.config = BenchConfig(
            policies=(policy,),
            llm=llm or None,
            vlm=vlm,
            captioner=captioner,
            clip=clip,
            perception=perception,
            text_embedder=text_embedder,
            max_steps=_whole("max_steps", max_steps, 1),
        )
        resolved = resolve(policy)  # the name enters here, resolved once
        self.env_kind = env or resolved.env_kinds[0]
        if self.env_kind not in resolved.env_kinds:
            raise ConfigError(f"policy {policy!r} does not play the {self.env_kind} env")
        self.llm = make_llm(llm) if llm and resolved.entry.uses_llm else None
        self.policy = resolved.make(self.llm)
        self.backend_specs = self.config.backend_specs()
        if episode_log not in EPISODE_LOGS:
            raise ConfigError(f"episode_log must be one of {list(EPISODE_LOGS)}")
        self.episode_log = episode_log
        self.seed = _whole("seed", seed, 0)
        self.fields = {"options_field": options_field, "gt_field": gt_field}
        self.fields["answer_field"] = answer_field

    def generate_until(self, requests: list[Instance]) -> list[GenerationResult]:
        """One episode per request; the answer text for the task's scorer."""
        return [self._answer(request) for request in requests]

    def _answer(self, request: Instance) -> GenerationResult:
        context, _, doc_to_visual, doc_id, task, split = request.args[:6]
        summary: dict[str, Any]
        try:
            doc = self.task_dict[task][split][doc_id]
            sample = request_sample(
                f"{task}/{split}/{doc_id}", context, doc_to_visual(doc), doc, **self.fields
            )
            record = self._play(sample)
            summary = summarise(record, has_ground_truth=bool(sample.gt_intervals))
        except Exception as exc:  # a bad request is recorded, never the end of the run
            error = f"{type(exc).__name__}: {exc}"
            summary = {"sample_id": f"{task}/{split}/{doc_id}", "answer": None, "error": error}
            record = {}
        if summary.get("error"):
            logger.warning(f"video_env model: {task} doc {doc_id}: {summary['error']}")
        tokens = model_tokens(record)
        counts = TokenCounts(input_tokens=tokens["input"], output_tokens=tokens["output"])
        return GenerationResult(text=self._reply(summary), token_counts=counts)

    def _reply(self, summary: dict[str, Any]) -> str:
        answer = str(summary.get("answer") or "")
        if self.episode_log == "none":
            return answer
        # no "<" in the block, so that no text of the episode can close it early
        block = json.dumps({LOG_KEY: summary}).replace("<", "\\u003c")
        return f"<think>{block}</think>{answer}"

    def _play(self, sample: Any) -> dict[str, Any]:
        env = self._env(sample)
        try:
            with use_text_embedder(self.config.text_embedder), warnings.catch_warnings():
                warnings.simplefilter("ignore", VideoProvenanceWarning)
                return policies.run_episode(
                    env, self.policy, self.seed, options={"index": 0},
                    max_steps=self.config.max_steps,
                )  # fmt: skip
        finally:
            env.close()

    def _env(self, sample: Any) -> gym.Env[Any, Any]:
        kwargs = dict(self.policy.env_kwargs.get(self.env_kind, {}))
        env: gym.Env[Any, Any] = ENV_CLASSES[self.env_kind](
            [sample], **self.backend_specs, **kwargs
        )
        return env

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        """Not supported: an agent answers, it does not score continuations."""
        raise NotImplementedError("the video_env model only generates (generate_until)")

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        """Not supported: one episode answers one question."""
        raise NotImplementedError("the video_env model answers single-round video requests")


def _whole(name: str, value: Any, minimum: int) -> int:
    """A ``--model_args`` number as an ``int`` (lmms-eval passes ``5``, ``5.0`` or text).

    Raises:
        ConfigError: If ``value`` is not a whole number ``>= minimum``.
    """
    if isinstance(value, str) and value.strip().isdecimal():  # from Python, not the CLI
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return value
