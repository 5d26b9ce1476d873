"""Perception backends and judges by name: spec strings resolved lazily.

Specs (CLI ``--vlm/--captioner/--clip/--judge``, env arguments ``vlm=``, ``captioner=``,
``clip=``, ``judge=``):

==============================  ==============================================================
``simulated``                   the offline simulator (SIMULATED; docs/simulator.md)
``pixel-real[:FOLDER]``         the tiny models trained on the synthetic renderer
                                (:mod:`video_env.pixel`; default: the shipped weights),
                                labelled ``pixel-real`` (docs/pixel_real.md)
``pixel-vlm[:FOLDER]``          (vlm, captioner) the pixel VLM, a tiny Qwen2.5-VL
                                trained on the renderer, through the transformers
                                backend (default: the shipped checkpoint), labelled
                                ``pixel-vlm`` (docs/pixel_vlm.md)
``qwen2.5-vl:PATH_OR_ID``       :class:`~video_env.backends.transformers_vlm.TransformersVLM`
``transformers:PATH_OR_ID``     the same (any transformers chat VLM)
``openai:MODEL``                :class:`~video_env.backends.openai_vlm.OpenAIVLM`; server from
                                ``$VIDEO_ENV_VLM_BASE_URL`` (else the client's default),
                                reply patterns in ``$VIDEO_ENV_VLM_REGEX_FIELD`` if set
``open_clip:NAME[:PRETRAINED]`` :class:`~video_env.backends.openclip.OpenCLIP` (PRETRAINED: a
                                tag or a checkpoint file)
a folder                        ``--clip``: an open_clip folder; ``--vlm``/``--captioner``: a
                                transformers model folder
==============================  ==============================================================

Judges: ``exact`` (normalised exact match, the default), ``embedding`` (sentence
embeddings), or any LLM spec of :func:`~video_env.backends.llm.make_llm` (``openai:MODEL``,
``local:PATH``, a bare model name) for FALCON-Bench's LLM judge.

Nothing heavy is imported until a spec is resolved. Models are loaded once per process
and spec; every :func:`make_backend` call returns a fresh light wrapper around the shared
model (its own ``usage``, so each env and worker thread counts its own costs) that caches
outputs on disk (:mod:`video_env.cache`). A Hugging Face id whose weights are not in the
local cache fails at once (the library never downloads, with or without ``HF_HUB_OFFLINE``)
with how to point at a local folder; a model that is a path (it starts with ``/``, ``.`` or
``~``, or holds more than one ``/``) where nothing exists fails before any Hub lookup.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from video_env import env_vars
from video_env.backends.base import CLIP, VLM, Captioner
from video_env.backends.model_paths import looks_like_path, missing_model_path
from video_env.errors import BackendError, ConfigError, UnknownNameError

#: Perception roles.
ROLES = ("vlm", "captioner", "clip")
#: Spec kinds per role.
KINDS = {
    "vlm": ("simulated", "pixel-real", "pixel-vlm", "qwen2.5-vl", "transformers", "openai"),
    "captioner": ("simulated", "pixel-real", "pixel-vlm", "qwen2.5-vl", "transformers", "openai"),
    "clip": ("simulated", "pixel-real", "open_clip"),
}
#: Environment variable with the base URL of an OpenAI-compatible VLM server.
VLM_BASE_URL_ENV = env_vars.VLM_BASE_URL.name
#: Where the server reads a reply pattern (``OpenAIVLM(regex_field=...)``): format-guided
#: VideoScout on a vLLM or SGLang server.
VLM_REGEX_FIELD_ENV = env_vars.VLM_REGEX_FIELD.name

Backend = VLM | Captioner | CLIP


@dataclass(frozen=True)
class BackendSpec:
    """A parsed spec.

    Attributes:
        kind: ``simulated``, ``transformers``, ``openai`` or ``open_clip``.
        target: Model id, path or name (empty for ``simulated``).
        pretrained: open_clip's pretrained tag or checkpoint (``None`` otherwise).
    """

    kind: str
    target: str = ""
    pretrained: str | None = None

    @property
    def simulated(self) -> bool:
        """Whether this is the simulator."""
        return self.kind == "simulated"

    @property
    def pixel_real(self) -> bool:
        """Whether this is the pixel-real offline world (trained tiny models)."""
        return self.kind == "pixel-real"


def parse_spec(role: str, spec: str) -> BackendSpec:
    """Parse a spec for ``role`` (see the module docstring).

    Raises:
        UnknownNameError: For an unknown role or kind.
        ConfigError: For a spec without a model, or a bare path that does not exist
            (:func:`check_spec_paths` checks the paths after a kind).
    """
    if role not in ROLES:
        raise UnknownNameError("perception role", role, ROLES)
    text = spec.strip()
    if text == "simulated":
        return BackendSpec("simulated")
    if text == "pixel-real":
        return BackendSpec("pixel-real")
    if text == "pixel-vlm" and "pixel-vlm" in KINDS[role]:
        from video_env.pixel import PIXEL_VLM_DIR, is_pixel_vlm

        if not is_pixel_vlm(PIXEL_VLM_DIR):
            raise ConfigError(
                f"{role} spec 'pixel-vlm': this package ships no pixel VLM yet "
                "(video_env/pixel/vlm_weights); train one (docs/pixel_vlm.md says how) and "
                "pass pixel-vlm:DIR"
            )
        return BackendSpec("transformers", str(PIXEL_VLM_DIR))
    kind, sep, rest = text.partition(":")
    if sep and kind in KINDS[role] and not os.path.exists(text):
        if not rest:
            raise ConfigError(f"{role} spec {spec!r} names no model")
        if kind == "open_clip":
            return _parse_open_clip(rest)
        if kind in ("pixel-real", "pixel-vlm"):
            folder = os.path.abspath(os.path.expanduser(rest))
            return BackendSpec("transformers" if kind == "pixel-vlm" else kind, folder)
        return BackendSpec("transformers" if kind == "qwen2.5-vl" else kind, rest)
    if os.path.isdir(os.path.expanduser(text)):
        folder = os.path.abspath(os.path.expanduser(text))
        return BackendSpec("open_clip" if role == "clip" else "transformers", folder)
    if looks_like_path(text):
        raise ConfigError(f"{role} spec {spec!r}: no such folder")
    known = [k if k == "simulated" else f"{k}:..." for k in KINDS[role]]
    raise UnknownNameError(f"{role} backend", text, known)


def _parse_open_clip(rest: str) -> BackendSpec:
    prefix = ""
    for schema in ("hf-hub:", "local-dir:"):
        if rest.startswith(schema):
            prefix, rest = schema, rest[len(schema) :]
    name, _, pretrained = rest.partition(":")
    return BackendSpec("open_clip", prefix + name, pretrained or None)


def check_spec_paths(role: str, spec: str, parsed: BackendSpec) -> None:
    """Fail at once when a parsed spec's model or checkpoint is a path where nothing exists.

    A path (:func:`~video_env.backends.model_paths.looks_like_path`: it starts with
    ``/``, ``.`` or ``~``, or holds more than one ``/``) is never handed to the Hub as a
    repo id, so a mistyped folder is named in one line, before any lookup.

    Raises:
        ConfigError: Naming the spec.
    """
    if parsed.kind == "open_clip":
        paths: tuple[str, ...] = (parsed.target.removeprefix("local-dir:"), parsed.pretrained or "")
    elif parsed.kind in ("transformers", "pixel-real"):
        paths = (parsed.target,)
    else:
        paths = ()
    if any(missing_model_path(path) for path in paths):
        raise ConfigError(f"{role} spec {spec!r}: no such folder")


def spec_is_simulated(role: str, spec: str | None) -> bool:
    """Whether ``spec`` (``None``: the default, simulated) names the simulator."""
    return spec is None or parse_spec(role, spec).simulated


def spec_is_pixel_real(role: str, spec: str | None) -> bool:
    """Whether ``spec`` names the pixel-real offline world."""
    return spec is not None and parse_spec(role, spec).pixel_real


def _pixel_real(role: str, folder: str) -> Backend:
    """The pixel-real backend of ``role`` (one scorer per folder and process)."""
    from video_env.pixel.vlm import PixelRealCaptioner, PixelRealVLM, PixelScorer

    key = BackendSpec("pixel-real", folder)
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = PixelScorer(folder or None)
        scorer: PixelScorer = _MODELS[key]
    if role == "vlm":
        return PixelRealVLM(scorer)
    if role == "captioner":
        return PixelRealCaptioner(scorer)
    return scorer.new_clip()


# -- building ----------------------------------------------------------------------------

_MODELS: dict[BackendSpec, Any] = {}
_MODELS_LOCK = threading.Lock()


def _import(module: str, cls: str) -> Callable[..., Any]:
    factory: Callable[..., Any] = getattr(importlib.import_module(module), cls)
    return factory


def check_local_weights(model: str) -> None:
    """Fail fast when ``model`` is a Hub id whose files are not in the local cache.

    The library never downloads weights, whatever ``HF_HUB_OFFLINE`` says.

    Raises:
        BackendError: Naming the id and how to pass a local folder (or the missing folder,
            for a path).
    """
    if os.path.isdir(os.path.expanduser(model)):
        return
    if looks_like_path(model):  # never handed to the Hub as a repo id
        raise BackendError(f"no model directory at {model!r}")
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return
    try:
        cached = try_to_load_from_cache(model, "config.json")
    except ValueError as exc:  # huggingface_hub's HFValidationError: not a repo id
        raise BackendError(f"{model!r} is neither a model folder nor a Hub id: {exc}") from None
    if isinstance(cached, str):
        return
    raise BackendError(
        f"the weights of {model!r} are not in the local Hugging Face cache, and video-env "
        "loads local files only (it never downloads, with or without HF_HUB_OFFLINE). On a "
        f"machine with internet run `huggingface-cli download {model} --local-dir DIR`, then "
        "pass the folder: qwen2.5-vl:DIR."
    )


def _load_model(spec: BackendSpec) -> Any:
    """The shared (heavy) model of a VLM spec, built once per process."""
    with _MODELS_LOCK:
        if spec not in _MODELS:
            if spec.kind == "transformers":
                check_local_weights(spec.target)
                factory = _import("video_env.backends.transformers_vlm", "TransformersVLM")
                _MODELS[spec] = factory(model=spec.target)
            elif spec.kind == "openai":
                _MODELS[spec] = openai_vlm(spec.target)
            else:  # pragma: no cover - parse_spec admits no other kind here
                raise ConfigError(f"not a VLM spec: {spec}")
        return _MODELS[spec]


def openai_vlm(model: str) -> Any:
    """The :class:`~video_env.backends.openai_vlm.OpenAIVLM` of ``openai:MODEL``.

    Its server is ``$VIDEO_ENV_VLM_BASE_URL`` (else the client's default), and its
    ``regex_field`` ``$VIDEO_ENV_VLM_REGEX_FIELD`` (unset: it takes no reply pattern).

    Raises:
        ConfigError, BackendNotInstalled: From the backend.
    """
    factory = _import("video_env.backends.openai_vlm", "OpenAIVLM")
    return factory(
        model,
        base_url=env_vars.VLM_BASE_URL.get(),
        regex_field=env_vars.VLM_REGEX_FIELD.get(),
    )


def make_backend(role: str, spec: str | Backend, *, seed: int = 0) -> Backend:
    """The backend ``spec`` names for ``role`` (a backend object is returned as is).

    Real VLMs and captioners come wrapped in
    :class:`~video_env.cache.wrappers.CachedVLM` / :class:`CachedCaptioner` (disk cache,
    own usage); OpenCLIP caches its features itself.

    Raises:
        UnknownNameError, ConfigError: For a bad spec.
        BackendNotInstalled: Naming the extra to install.
        BackendError: If weights cannot be found or loaded (with how to fix it).
    """
    if not isinstance(spec, str):
        return spec
    parsed = parse_spec(role, spec)
    check_spec_paths(role, spec, parsed)
    if parsed.simulated:
        from video_env.backends import simulated

        classes = {
            "vlm": simulated.SimulatedVLM,
            "captioner": simulated.SimulatedCaptioner,
            "clip": simulated.SimulatedCLIP,
        }
        backend: Backend = classes[role](seed=seed)
        return backend
    if parsed.kind == "open_clip":
        from video_env.backends.openclip import OpenCLIP

        return OpenCLIP(parsed.target, parsed.pretrained)
    if parsed.pixel_real:
        return _pixel_real(role, parsed.target)
    from video_env.cache.wrappers import CachedCaptioner, CachedVLM

    model = _load_model(parsed)
    return CachedVLM(model) if role == "vlm" else CachedCaptioner(model)


def make_vlm(spec: str | VLM, *, seed: int = 0) -> VLM:
    """:func:`make_backend` for the ``vlm`` role."""
    return cast(VLM, make_backend("vlm", spec, seed=seed))


def make_captioner(spec: str | Captioner, *, seed: int = 0) -> Captioner:
    """:func:`make_backend` for the ``captioner`` role."""
    return cast(Captioner, make_backend("captioner", spec, seed=seed))


def make_clip(spec: str | CLIP, *, seed: int = 0) -> CLIP:
    """:func:`make_backend` for the ``clip`` role."""
    return cast(CLIP, make_backend("clip", spec, seed=seed))


def validate_spec(role: str, spec: str | None) -> None:
    """Check a spec without loading anything heavy (module present, local weights found).

    Raises:
        UnknownNameError, ConfigError, BackendNotInstalled, BackendError: As
            :func:`make_backend` would, but early.
    """
    if spec is None:
        return
    parsed = parse_spec(role, spec)
    check_spec_paths(role, spec, parsed)
    from video_env._optional import require

    if parsed.kind in ("open_clip", "pixel-real"):
        require("open_clip", "models", "the OpenCLIP backend")
    elif parsed.kind == "transformers":
        require("transformers", "models", "the transformers VLM backend")
        check_local_weights(parsed.target)
    elif parsed.kind == "openai":
        require("openai", "llm", "the OpenAI-compatible VLM backend")


def check_vlm_server(role: str, spec: str | None) -> None:
    """For an ``openai:MODEL`` spec, check its server answers (one request, no retries).

    Raises:
        ConfigError: If nothing answers at ``$VIDEO_ENV_VLM_BASE_URL`` (connection refused
            included) or the server refuses the settings (HTTP 401/403/404).
    """
    if spec is None:
        return
    parsed = parse_spec(role, spec)
    if parsed.kind != "openai":
        return
    try:
        openai_vlm(parsed.target).check_server()
    except ConfigError as exc:
        shown = spec.partition("?")[0]  # what follows "?" may be a key put there
        raise ConfigError(f"--{role} {shown}: {exc} (the server is ${VLM_BASE_URL_ENV})") from None


def make_judge(spec: str | None) -> Any:
    """The judge ``spec`` names: ``exact``, ``embedding`` or an LLM spec (None: exact).

    Raises:
        ConfigError, BackendNotInstalled: From the LLM factory.
    """
    from video_env.metrics.judges import EmbeddingJudge, ExactMatchJudge

    if spec is None or spec.strip() in ("", "exact"):
        return ExactMatchJudge()
    if spec.strip() == "embedding":
        from video_env.backends.text import default_text_embedder

        return EmbeddingJudge(default_text_embedder())
    from video_env.backends.llm import make_llm
    from video_env.metrics.llm_judge import LLMJudge

    try:
        llm = make_llm(spec)
    except ConfigError as exc:
        raise ConfigError(
            f"judge {spec!r} (exact, embedding, or an LLM spec such as openai:MODEL, read "
            f"here as an LLM): {exc}"
        ) from exc
    if llm is None:  # pragma: no cover - a non-empty spec always names an LLM
        raise ConfigError(f"judge spec {spec!r} names no LLM")
    return LLMJudge(llm)
