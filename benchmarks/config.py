"""What a benchmark run evaluates: datasets, environments, policies, seeds."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.plot_style import PlotOptions
from video_env.backends.text import DEFAULT_TEXT_EMBEDDER, TEXT_EMBEDDERS
from video_env.envs import ENV_KINDS
from video_env.envs.arguments import DEFAULT_SUITE
from video_env.envs.tool_presets import DEFAULT_PRESET, PRESETS
from video_env.envs.tools import ToolsEnv
from video_env.errors import ConfigError

__all__ = ["ENV_KINDS", "EXECUTORS", "PERCEPTIONS", "BenchConfig", "RunSettings"]

#: Values of ``--perception``: the default of every role left simulated.
PERCEPTIONS = ("simulated", "pixel-real", "pixel-vlm")
EXECUTORS = ("serial", "process", "ray", "thread")


@dataclass(frozen=True)
class BenchConfig:
    """A benchmark's definition; with the same config, a run gives the same records.

    Each field is a ``video-env bench`` flag (``--max-steps`` for ``max_steps``), its help
    the text below and its default the field's (``extra`` is Python's only).

    Attributes:
        suite: Synthetic suite, used without a dataset (`video-env synth list`).
        dataset: Dataset loader name instead of a suite (`video-env data list`).
        annotations: Annotation file or folder of the dataset.
        videos: Video folder of the dataset.
        allow_absolute_paths: Use absolute video paths found in the annotations (refused
            by default: a results folder should not depend on where files lie).
        envs: Environment kinds (all: every kind).
        policies: Policy names, or all for every policy that can run (offline ones
            only without an LLM). Trained and model-driven policies take an
            argument: pacing-maskable-ppo:PATH, pacing-ppo:PATH, pacing-dqn:PATH,
            videoscout:qwen2.5-vl:PATH_OR_ID, videoscout:pixel and videoscout:pixel-dapo
            (shipped); your own class: my_module:MyPolicy or path/to/file.py:MyPolicy;
            settings after ?: videoscout:pixel?guided=true, ...:MyPolicy?k=v&k2=v2.
        llm: LLM for prompted policies, e.g. openai:gpt-4o-mini (none: offline reasoners).
        seeds: Reset seeds; every sample runs once per seed.
        limit: First N samples only (after the category filter).
        categories: Only samples of these categories (none: all), e.g. visual object.
        max_steps: Steps after which an episode is abandoned.
        standin_missing_videos: Play missing video files as simulated stand-ins built
            from the annotations, frames included (labelled stand-in); without it a
            missing file stops the run before it starts.
        perception: Default of every perception role left simulated below: simulated,
            pixel-real (the tiny CLIP trained on the synthetic renderer; docs/pixel_real.md)
            or pixel-vlm (the pixel VLM, a tiny Qwen2.5-VL trained on the renderer, as VLM
            and captioner; the pixel-real CLIP retrieves).
        text_embedder: Text embedder of the offline reasoner and the simulated CLIP, on
            every machine the same (minilm needs the models extra).
        vlm: VLM: simulated, qwen2.5-vl:PATH_OR_ID, transformers:PATH_OR_ID, openai:MODEL,
            or a folder.
        captioner: Captioner spec (none: the VLM when it is a real model, else simulated).
        clip: CLIP: simulated, open_clip:NAME[:PRETRAINED], or a folder.
        judge: Judge of open answers: exact (none), embedding, or an LLM spec, e.g.
            openai:gpt-4o-mini (FALCON-Bench's protocol).
        tools_preset: The Tools env's preset (``longvt``...; a policy may ask for its own):
            part of every Tools row's name.
        extra: Free-form notes kept in run.json.
    """

    suite: str = DEFAULT_SUITE
    dataset: str | None = None
    annotations: str | None = None
    videos: str | None = None
    allow_absolute_paths: bool = False
    envs: tuple[str, ...] = ENV_KINDS
    policies: tuple[str, ...] = ("all",)
    llm: str | None = None
    seeds: tuple[int, ...] = (0,)
    limit: int | None = None
    categories: tuple[str, ...] | None = None
    max_steps: int = 200
    standin_missing_videos: bool = False
    perception: str = "simulated"
    text_embedder: str = DEFAULT_TEXT_EMBEDDER
    vlm: str = "simulated"
    captioner: str | None = None
    clip: str = "simulated"
    judge: str | None = None
    tools_preset: str = DEFAULT_PRESET
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.envs) - set(ENV_KINDS)
        if unknown or not self.envs:
            raise ConfigError(f"unknown envs {sorted(unknown)}; known: {list(ENV_KINDS)}")
        if self.dataset is not None and self.annotations is None:
            raise ConfigError("--dataset needs --annotations")
        if self.allow_absolute_paths and self.dataset is None:
            raise ConfigError("--allow-absolute-paths applies to a --dataset's annotations")
        if not self.seeds:
            raise ConfigError("give at least one seed")
        if self.tools_preset not in PRESETS:
            raise ConfigError(
                f"unknown tools preset {self.tools_preset!r}; known: {sorted(PRESETS)}"
            )
        if self.categories is not None and not self.categories:
            raise ConfigError("give at least one category (or none for all)")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit must be >= 1, got {self.limit}")
        if self.text_embedder not in TEXT_EMBEDDERS:
            raise ConfigError(
                f"unknown text embedder {self.text_embedder!r}; known: {list(TEXT_EMBEDDERS)}"
            )
        if self.perception not in PERCEPTIONS:
            raise ConfigError(
                f"perception {self.perception!r} is not available; known: {list(PERCEPTIONS)}"
            )
        from video_env.backends.registry import parse_spec

        for role, spec in self.perception_specs().items():
            parse_spec(role, spec)  # unknown names fail here; nothing is loaded

    def env_kwargs(self, kind: str) -> dict[str, Any]:
        """The run's settings of an env kind (the Tools preset), under a policy's own."""
        return {"preset": self.tools_preset} if kind == ToolsEnv.kind else {}

    def backend_specs(self) -> dict[str, Any]:
        """The roles named by a spec other than ``simulated`` (an env's own default)."""
        return {role: spec for role, spec in self.perception_specs().items() if spec != "simulated"}

    def perception_specs(self) -> dict[str, str]:
        """The spec of each perception role (the captioner's default resolved)."""
        from video_env.backends.registry import spec_is_simulated

        default = self.perception

        def role(spec: str, name: str = "vlm") -> str:
            if spec != "simulated":
                return spec
            return "pixel-real" if default == "pixel-vlm" and name == "clip" else default

        vlm, clip = role(self.vlm), role(self.clip, "clip")
        captioner = self.captioner
        if captioner is None:
            captioner = default if spec_is_simulated("vlm", self.vlm) else self.vlm
        return {"vlm": vlm, "captioner": role(captioner), "clip": clip}

    def simulated_roles(self) -> list[str]:
        """Perception roles served by the simulator."""
        from video_env.backends.registry import spec_is_simulated

        return [r for r, s in self.perception_specs().items() if spec_is_simulated(r, s)]

    def pixel_real_roles(self) -> list[str]:
        """Perception roles served by the pixel-real models."""
        from video_env.backends.registry import spec_is_pixel_real

        return [r for r, s in self.perception_specs().items() if spec_is_pixel_real(r, s)]

    def random_weight_sources(self) -> list[str]:
        """Roles (``vlm``, ``clip``, ``llm``...) and policies that load a random-weights folder.

        A folder the tiny test builders made (:mod:`video_env.backends.random_weights`):
        results from it test the plumbing only, and are labelled so.
        """
        from video_env.backends.random_weights import has_random_weights
        from video_env.backends.registry import parse_spec

        sources = []
        for role, spec in self.perception_specs().items():
            if has_random_weights(parse_spec(role, spec).target):
                sources.append(role)
        if self.llm and has_random_weights(self.llm.partition(":")[2].partition("?")[0]):
            sources.append("llm")
        for name in self.policies:
            target = name.partition("?")[0]  # a family name's settings are no folder
            if any(has_random_weights(part) for part in target.split(":")[1:] if part):
                sources.append(name)
        return sources

    def pixel_vlm_roles(self) -> list[str]:
        """Perception roles served by the pixel VLM (a folder the pixel VLM's training wrote)."""
        from video_env.backends.registry import parse_spec
        from video_env.pixel import is_pixel_vlm

        specs = self.perception_specs().items()
        return [r for r, s in specs if r != "clip" and is_pixel_vlm(parse_spec(r, s).target)]

    @property
    def perception_label(self) -> str:
        """``simulated``, ``pixel-vlm``, ``pixel-real`` or ``real``: how results are labelled."""
        if self.simulated_roles():
            return "simulated"
        if self.pixel_vlm_roles():
            return "pixel-vlm"
        return "pixel-real" if self.pixel_real_roles() else "real"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> BenchConfig:
        """Inverse of :meth:`to_dict`."""
        values = dict(record)
        for key in ("envs", "policies", "seeds"):
            values[key] = tuple(values[key])
        if values.get("categories") is not None:
            values["categories"] = tuple(values["categories"])
        return cls(**values)

    def fingerprint(self) -> str:
        """A short hash of the whole config (every field, new ones included).

        Workers key their caches on it. A results folder's fingerprint also covers what
        else changes results (package versions, the samples): see
        :func:`benchmarks.provenance.provenance`.
        """
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()

    @property
    def source(self) -> str:
        """The dataset's name for folders and tables."""
        return self.dataset or self.suite


@dataclass(frozen=True)
class RunSettings:
    """How ``video-env bench`` runs a :class:`BenchConfig`: never what its records hold.

    Each field is a flag of ``video-env bench`` (``--ray-address`` for ``ray_address``).

    Attributes:
        out: Results folder (none: runs/SUITE_OR_DATASET); a rerun resumes it if its
            set-up is the same.
        fresh: Delete the results already in the folder and start over.
        workers: Processes (none: the cores this process may use).
        executor: serial, process, thread or ray (none: process if workers > 1).
        concurrency: Episodes in flight in one process (the thread executor; for LLM and
            VLM servers).
        ray_address: Ray cluster address (none: a local Ray).
        plots: Draw the figures (--no-plots: tables only).
        plot: The figures' file format and resolution.
        quiet: No progress bar.
    """

    out: str | None = None
    fresh: bool = False
    workers: int | None = None
    executor: str | None = None
    concurrency: int | None = None
    ray_address: str | None = None
    plots: bool = True
    plot: PlotOptions = field(default_factory=PlotOptions)
    quiet: bool = False

    @property
    def plot_options(self) -> PlotOptions | bool:
        """The figures' options, or False without plots."""
        return self.plot if self.plots else False
