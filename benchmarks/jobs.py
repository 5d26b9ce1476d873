"""Episodes to run (jobs) and running one of them in a worker process."""

from __future__ import annotations

import os
import traceback
import warnings
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

import policies
from benchmarks.config import BenchConfig
from policies.resolved import ResolvedPolicy, resolve
from video_env.backends.llm import LLM, LLMCallError, make_llm
from video_env.backends.llm.factory import check_local_path
from video_env.backends.text import resolve_text_embedder, use_text_embedder
from video_env.envs import ENV_CLASSES
from video_env.errors import ConfigError
from video_env.provenance import SENSORS_ON_REAL, STANDIN, VideoProvenanceWarning
from video_env.synth.world import SynthVideo
from video_env.types import VideoQA


@dataclass(frozen=True)
class Job:
    """One episode: a policy on a sample in an env, with a seed."""

    env: str
    policy: str
    index: int
    sample_id: str
    seed: int

    @property
    def key(self) -> str:
        """Unique id of the episode within a run (used to resume)."""
        return f"{self.env}|{self.policy}|{self.sample_id}|{self.seed}"


def load_samples(config: BenchConfig) -> list[VideoQA]:
    """The run's samples (of ``categories`` if set, the first ``limit``).

    Raises:
        ConfigError: If a suite has no sample of the chosen categories.
    """
    if config.dataset is not None:
        from video_env import data

        options: dict[str, Any] = {"limit": config.limit}
        if config.allow_absolute_paths:
            options["allow_absolute"] = True
        if config.categories is not None:
            options["categories"] = list(config.categories)
        samples: list[VideoQA] = list(
            data.load(config.dataset, config.annotations, config.videos, **options)
        )
        return samples
    from video_env.synth import load_suite

    if config.categories is None:
        return load_suite(config.suite, limit=config.limit)
    every = load_suite(config.suite)
    samples = [s for s in every if s.category in config.categories]
    if not samples:
        raise ConfigError(
            f"no sample of categories {list(config.categories)} in {config.suite}; its "
            f"categories: {sorted({s.category for s in every if s.category})}"
        )
    return samples[: config.limit] if config.limit is not None else samples


_SAMPLES: dict[str, list[VideoQA]] = {}


def samples_for(config: BenchConfig) -> list[VideoQA]:
    """The run's samples, loaded once per process (planning and a serial run share them)."""
    key = config.fingerprint()
    if key not in _SAMPLES:
        _SAMPLES[key] = load_samples(config)
    return _SAMPLES[key]


def video_samples(config: BenchConfig) -> dict[str, int]:
    """Samples of a dataset run by what their simulated backends will perceive.

    :data:`~video_env.provenance.SENSORS_ON_REAL`: files that exist, perceived by at least
    one simulated role (the env shows the file's frames; those roles answer from the
    annotations). :data:`~video_env.provenance.STANDIN`: missing files played as simulated
    stand-ins (``standin_missing_videos``).
    """
    counts = {SENSORS_ON_REAL: 0, STANDIN: 0}
    if config.dataset is None:
        return counts
    for sample in samples_for(config):
        if isinstance(sample.video, SynthVideo):
            continue
        path = sample.video_path
        if path is not None and not os.path.exists(path):
            counts[STANDIN] += int(config.standin_missing_videos)
        elif config.simulated_roles():
            counts[SENSORS_ON_REAL] += 1
    return counts


def check_videos_exist(config: BenchConfig) -> None:
    """Refuse a dataset run whose video files are missing, unless stand-ins are asked for.

    Raises:
        ConfigError: Counting the missing files, naming the first, and the two ways out.
    """
    if config.dataset is None or config.standin_missing_videos:
        return
    samples = samples_for(config)
    paths = {s.video_path for s in samples if s.video_path is not None}
    missing = sorted(p for p in paths if not os.path.exists(p))
    if missing:
        raise ConfigError(
            f"{len(missing)} of {len(paths)} video files are missing (first: {missing[0]!r}): "
            "give --videos DIR where they are, or --standin-missing-videos to play simulated "
            "stand-ins built from the annotations (labelled stand-in)"
        )


def resolve_policies(config: BenchConfig) -> tuple[ResolvedPolicy, ...]:
    """The run's policies, each name resolved once (``all``: every one that can run).

    Raises:
        UnknownNameError: Listing the known policies.
        ConfigError: For two names of one policy (their episodes would share a row).
    """
    if "all" in config.policies:
        names = policies.available(offline=True if config.llm is None else None)
        return tuple(resolve(name) for name in names)
    resolved = tuple(resolve(name) for name in config.policies)
    seen: dict[str, str] = {}
    for policy in resolved:
        if policy.canonical in seen:
            raise ConfigError(
                f"--policies names one policy twice: {seen[policy.canonical]!r} and "
                f"{policy.name!r} are both {policy.canonical!r}, whose episodes would share "
                "one table row"
            )
        seen[policy.canonical] = policy.name
    return resolved


def validate(config: BenchConfig) -> tuple[ResolvedPolicy, ...]:
    """Check what a config refers to: policies, envs, embedder, suite or dataset, LLM.

    Returns:
        The run's policies, resolved once: what the plan, header and provenance read.

    Raises:
        UnknownNameError: Listing the known names.
        ConfigError: For an LLM without a key, or a named policy that runs on none of the
            config's envs (the message says which policies run where).
        BackendNotInstalled: For an LLM or text embedder whose extra is missing.
    """
    resolve_text_embedder(config.text_embedder)  # minilm without its extra fails here
    resolved = resolve_policies(config)
    if "all" not in config.policies:
        _check_envs(config, resolved)
    for flag, spec in (("--llm", config.llm), ("--judge", config.judge)):
        try:
            check_local_path(spec or "")  # a mistyped local:PATH fails before anything is written
        except ConfigError as exc:
            raise ConfigError(f"{flag}: {exc}") from None
    if config.llm and not config.llm.startswith("local:"):
        llm = make_llm(config.llm)  # a missing key or extra fails here, not in every worker
        if llm is not None:
            check_llm_answers(llm)
    from video_env.backends.registry import check_vlm_server, make_judge, validate_spec

    checked: set[str] = set()
    for role, spec in config.perception_specs().items():
        validate_spec(role, spec)  # a missing extra or uncached weights fail here
        if role in ("vlm", "captioner") and spec not in checked:
            checked.add(spec)
            check_vlm_server(role, spec)  # a VLM server that is down fails here
    if config.judge not in (None, "exact", "embedding") and not config.judge.startswith("local:"):
        make_judge(config.judge)  # a missing key fails here
    if config.dataset is None:
        if config.annotations or config.videos:
            raise ConfigError("--annotations and --videos go with --dataset NAME")
        from video_env.synth import get_suite

        get_suite(config.suite)
        if config.categories is not None:
            samples_for(config)  # no sample of the categories fails before the run header
    else:
        from video_env import data

        data.get_loader(config.dataset)
        check_videos_exist(config)
    return resolved


def check_workers_can_build(resolved: tuple[ResolvedPolicy, ...], executor: str) -> None:
    """Refuse policies that only this process can build, before a pool starts.

    The process and Ray executors build each policy in fresh worker processes, which
    cannot import a class defined in ``__main__`` (a script or notebook that registered
    it); without this check the workers re-run the script or fail to find the name.

    Raises:
        ConfigError: Naming the policy, why, and the two ways out.
    """
    if executor not in ("process", "ray"):
        return
    for policy in resolved:
        if policy.in_main:
            where = "is defined in __main__, which"
        elif policy.at_runtime:
            where = "was registered by this process, which"
        else:
            continue
        raise ConfigError(
            f"policy {policy.name!r} {where} the {executor} executor's worker processes cannot "
            "know (they import policies afresh): run it with --executor serial or thread, "
            "or put the class in a module or a .py file and name it MODULE:CLASS or "
            "path/to/file.py:CLASS"
        )


def _check_envs(config: BenchConfig, resolved: tuple[ResolvedPolicy, ...]) -> None:
    """Every named policy must run on one of the run's envs (say which before anything)."""
    idle = [p for p in resolved if not set(p.env_kinds) & set(config.envs)]
    if not idle:
        return
    where = "; ".join(f"{p.name} runs on {', '.join(p.env_kinds)}" for p in idle)
    fits = {k: [n for n in policies.available() if k in policies.spec(n).env_kinds]
            for k in config.envs}  # fmt: skip
    offer = "; ".join(f"{k}: {', '.join(v) or '(none)'}" for k, v in fits.items())
    raise ConfigError(
        f"nothing to run for {', '.join(p.name for p in idle)} with --envs "
        f"{' '.join(config.envs)}: {where}. "
        f"Policies for the chosen envs: {offer}"
    )


#: HTTP statuses that say the LLM settings are wrong (key, permission, model or URL).
SETTINGS_STATUSES = (401, 403, 404)


def check_llm_answers(llm: LLM) -> None:
    """Fail fast when the LLM server is unreachable or refuses the settings.

    One request of a few tokens, not retried. Without this, a wrong key or a server that
    is down gives a whole run of offline-fallback episodes. Other failures (timeouts, 5xx)
    are left to the run, which records them per episode.

    Raises:
        ConfigError: On a refused connection or HTTP 401, 403 or 404.
    """
    check_server = getattr(llm, "check_server", None)
    if callable(check_server):  # OpenAI-compatible: no retries, a refused connection too
        try:
            check_server()
        except ConfigError as exc:
            raise ConfigError(f"--llm: {exc}") from None
        return
    try:
        llm.chat([{"role": "user", "content": "Reply with the word OK."}], max_tokens=2)
    except LLMCallError as exc:
        if exc.status in SETTINGS_STATUSES:
            raise ConfigError(
                f"{exc}; check the API key, the model name and the base URL of --llm"
            ) from None


def plan(
    config: BenchConfig, samples: list[VideoQA], resolved: tuple[ResolvedPolicy, ...]
) -> list[Job]:
    """Every episode of the run, in a stable order (``resolved``: :func:`validate`'s)."""
    jobs = []
    for policy in resolved:
        kinds = [k for k in policy.env_kinds if k in config.envs]
        for kind in kinds:
            for seed in config.seeds:
                jobs += [Job(kind, policy.name, i, s.id, seed) for i, s in enumerate(samples)]
    return jobs


def lost_job_record(job: Job, error: str) -> dict[str, Any]:
    """The record of a job that could not run to an episode record (counted as failed).

    It is marked ``lost``: a resumed run reruns the job, and its real record then
    replaces this one (see :func:`benchmarks.records.dedupe`).
    """
    return {
        "lost": True,
        "job": job.key,
        "env": job.env,
        "policy": job.policy,
        "sample_id": job.sample_id,
        "seed": job.seed,
        "answer": None,
        "correct": False,  # a failure counts as wrong, as any failed episode
        "ended_by": "error",
        "error": error,
        "traceback": None,
    }


class Worker:
    """Runs jobs of one config, keeping envs, policies and the LLM between jobs."""

    def __init__(self, config: BenchConfig) -> None:
        self.config = config
        self.samples = samples_for(config)
        self.llm = make_llm(config.llm) if config.llm else None
        from video_env.backends.registry import make_judge

        self.judge = make_judge(config.judge) if config.judge else None
        # Roles named by a spec (the default, simulated, is each env's own).
        self.backend_specs = config.backend_specs()
        self._policies: dict[str, policies.Policy] = {}
        self._unbuildable: dict[str, Exception] = {}
        self._envs: dict[tuple[str, str], gym.Env[Any, Any]] = {}

    def policy(self, name: str) -> policies.Policy:
        """The (cached) policy; one that failed to build fails again at once."""
        if name in self._unbuildable:
            raise self._unbuildable[name]
        if name not in self._policies:  # the job's name enters this worker here
            try:
                self._policies[name] = resolve(name).make(self.llm)
            except Exception as exc:
                self._unbuildable[name] = exc
                raise
        return self._policies[name]

    def _unbuilt(self, job: Job, exc: Exception) -> dict[str, Any]:
        """The record of a job whose policy or env could not be built (a failed episode).

        Marked lost, as a job whose worker died: a resumed run tries it again (a server
        that was down may be up), and the other policies' jobs run meanwhile.
        """
        record = lost_job_record(job, f"could not build it: {type(exc).__name__}: {exc}")
        record["traceback"] = "".join(traceback.format_exception(exc))
        return record

    def env(self, kind: str, policy: policies.Policy) -> gym.Env[Any, Any]:
        """The (cached) env with the settings the policy asks for."""
        kwargs = {**self.config.env_kwargs(kind), **policy.env_kwargs.get(kind, {})}
        key = (kind, repr(sorted(kwargs.items())))
        if key not in self._envs:
            self._envs[key] = ENV_CLASSES[kind](
                self.samples,
                standin_missing_videos=self.config.standin_missing_videos,
                judge=self.judge,
                **self.backend_specs,
                **kwargs,
            )
        return self._envs[key]

    def run(self, job: Job) -> dict[str, Any]:
        """Run one job; the record carries the job key, category and video id.

        An env's :class:`~video_env.provenance.VideoProvenanceWarning` is not repeated per
        worker: the run's header, records and summaries say it.
        """
        with use_text_embedder(self.config.text_embedder), warnings.catch_warnings():
            warnings.simplefilter("ignore", VideoProvenanceWarning)
            try:
                policy = self.policy(job.policy)
                env = self.env(job.env, policy)
            except Exception as exc:  # a policy or env that cannot be built: this job fails
                return self._unbuilt(job, exc)
            record = policies.run_episode(
                env, policy, job.seed, options={"index": job.index}, max_steps=self.config.max_steps
            )
        sample = self.samples[job.index]
        record.update(
            job=job.key,
            category=sample.category,
            video_id=str(sample.meta.get("video_id") or sample.video_path or sample.id),
            source=sample.source,
            gt_intervals=[iv.to_list() for iv in sample.gt_intervals],
        )
        return record


_WORKERS: dict[str, Worker] = {}


def run_job(config: dict[str, Any], job: Job) -> dict[str, Any]:
    """Run ``job`` in this process (its :class:`Worker` is built once per config)."""
    cfg = BenchConfig.from_dict(config)
    key = cfg.fingerprint()
    if key not in _WORKERS:
        _WORKERS[key] = Worker(cfg)
    return _WORKERS[key].run(job)


def run_jobs(config: dict[str, Any], jobs: list[Job]) -> list[dict[str, Any]]:
    """Run a chunk of jobs in this process (fewer round trips to the pool)."""
    return [run_job(config, job) for job in jobs]
