"""OpenCLIP: a real CLIP for ClipQuery retrieval and Pacing's relevance sensor.

Any `open_clip <https://github.com/mlfoundations/open_clip>`_ model: a built-in name with
a pretrained tag (``OpenCLIP("ViT-B-32", "laion2b_s34b_b79k")``, EVA-CLIP names such as
``"EVA02-B-16"`` where open_clip has them), a built-in name with a local checkpoint file
(``pretrained="/ckpt/model.pt"``), a folder holding ``open_clip_config.json`` and weights
(``OpenCLIP("/models/my-clip")``, open_clip's ``local-dir:`` layout, which
:func:`video_env.backends.testing_clip.tiny_open_clip` writes), or ``hf-hub:org/repo``.

Image features are computed in batches of ``batch_size`` frames from frames decoded with
their shorter side at the model's input size (then open_clip's own preprocessing: centre
crop and normalisation), and each frame's feature is cached on disk under (video
fingerprint, timestamp, ``config``) — a second episode on a video computes none.
``computed_frames`` counts the features really computed. Text features are cached in
memory (an LRU of 4096 texts). ``usage`` counts, per call, every distinct frame asked
for, cached or not, and the visual tokens the model encodes for them (patches at its
input size plus the class token), like the simulated CLIP. Loaded models are shared by
every instance of the same configuration in a process.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from video_env._offline import local_files_only
from video_env._optional import require
from video_env.backends.base import normalize_rows
from video_env.backends.model_paths import missing_model_path
from video_env.backends.random_weights import has_random_weights
from video_env.backends.simulated.clip import clip_visual_tokens
from video_env.cache.fingerprint import video_fingerprint
from video_env.cache.store import CacheArg, DiskCache, cache_key, resolve_cache
from video_env.errors import BackendError, ConfigError
from video_env.metrics.cost import Cost
from video_env.video.base import Size, VideoReader
from video_env.video.resize import Resize

#: Texts whose features are kept in memory.
TEXT_CACHE_SIZE = 4096

_MODELS: dict[tuple[str, str | None, str, str], tuple[Any, Any, Any]] = {}
_MODELS_LOCK = threading.Lock()


def _load(model: str, pretrained: str | None, device: str, precision: str) -> tuple[Any, Any, Any]:
    """(model, preprocess, tokenizer), loaded once per process and configuration."""
    key = (model, pretrained, device, precision)
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = _create(model, pretrained, device, precision)
        return _MODELS[key]


def _create(
    model: str, pretrained: str | None, device: str, precision: str
) -> tuple[Any, Any, Any]:
    # a path is never handed to open_clip or the Hub as a name
    if missing_model_path(model.removeprefix("local-dir:")):
        raise BackendError(f"no open_clip model folder at {model!r}")
    if pretrained is not None and missing_model_path(pretrained):
        raise BackendError(
            f"open_clip pretrained {pretrained!r} is not a known tag nor an existing checkpoint"
        )
    open_clip = require("open_clip", "models", "the OpenCLIP backend")
    name = f"local-dir:{model}" if os.path.isdir(model) else model
    try:
        with local_files_only():  # open_clip would download a missing checkpoint
            net, _, preprocess = open_clip.create_model_and_transforms(
                name, pretrained=pretrained, device=device, precision=precision
            )
            tokenizer = open_clip.get_tokenizer(name)
    except (RuntimeError, OSError, ValueError) as exc:
        raise BackendError(_load_error(model, pretrained, exc)) from exc
    net.eval()
    return net, preprocess, tokenizer


def _load_error(model: str, pretrained: str | None, exc: Exception) -> str:
    if "not found in built-ins" in str(exc):  # open_clip's message lists ~150 names
        return (
            f"unknown open_clip model {model!r}: not a built-in name nor a folder with "
            "open_clip_config.json (python -c 'import open_clip; print(open_clip.list_models())' "
            "lists the built-in names)"
        )
    what = f"open_clip model {model!r}" + (f" with pretrained={pretrained!r}" if pretrained else "")
    hint = "its weights are not in the local cache (video-env never downloads); "
    return (
        f"cannot load {what}: {exc}. If {hint}download them on a machine with internet "
        "(they land in the Hugging Face cache) or point at local files: "
        "open_clip:NAME:/path/to/checkpoint.pt, or a folder with open_clip_config.json and "
        "weights."
    )


class OpenCLIP:
    """A real CLIP through open_clip (see the module docstring).

    Args:
        model: Built-in model name, a local folder (config + weights) or ``hf-hub:org/repo``.
        pretrained: Pretrained tag or checkpoint file (built-in names only); ``None``:
            random weights for a built-in name, the folder's weights for a folder.
        device: Torch device; ``"auto"``: CUDA when available, else CPU. Not part of
            ``config``: features from CPU and GPU agree to float tolerance and share the
            cache.
        precision: open_clip precision (``"fp32"``, ``"fp16"``, ``"bf16"``, ...).
        batch_size: Frames per forward pass.
        cache: A :class:`~video_env.cache.store.DiskCache`, ``"shared"`` (the process's
            cache; none when caching is disabled) or ``None`` (no disk cache).

    Raises:
        BackendNotInstalled: Without open_clip / torch (the ``models`` extra).
        BackendError: If the model or its weights cannot be loaded (the message says how
            to point at local weights).
    """

    simulated = False

    def __init__(
        self,
        model: str = "ViT-B-32",
        pretrained: str | None = None,
        *,
        device: str = "auto",
        precision: str = "fp32",
        batch_size: int = 32,
        cache: CacheArg = "shared",
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        if pretrained and os.path.isdir(model):
            raise ConfigError(
                f"open_clip folder {model!r} carries its own weights; pretrained="
                f"{pretrained!r} applies to built-in model names only"
            )
        self.model = os.path.abspath(model) if os.path.isdir(model) else model
        self.pretrained = (
            os.path.abspath(pretrained) if pretrained and os.path.isfile(pretrained) else pretrained
        )
        if device == "auto":
            torch = require("torch", "models", "the OpenCLIP backend")
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device
        self.precision = precision
        self.batch_size = batch_size
        self._net, self._preprocess, self._tokenizer = _load(
            self.model, self.pretrained, device, precision
        )
        self.input_size = _input_size(self._net)
        self.patch_size = _patch_size(self._net)
        self.cache: DiskCache | None = resolve_cache(cache)
        self.name = f"open_clip:{model}" + (f":{pretrained}" if pretrained else "")
        #: Loaded from a tiny test builder's folder: its features mean nothing.
        self.random_weights = has_random_weights(model)
        self.usage = Cost()
        self.computed_frames = 0
        self._texts: dict[str, npt.NDArray[np.float32]] = {}
        self._lock = threading.Lock()
        self._batched_ok: bool | None = None
        self._normalize: Any = None

    @property
    def config(self) -> dict[str, object]:
        """What changes the features: model, weights, precision, input size."""
        weights: object = self.pretrained
        if self.pretrained and os.path.isfile(self.pretrained):
            stat = os.stat(self.pretrained)
            weights = [self.pretrained, stat.st_size, stat.st_mtime_ns]
        elif os.path.isdir(self.model):
            weights = _folder_stamp(self.model)
        return {
            "backend": "open_clip",
            "model": self.model,
            "pretrained": weights,
            "precision": self.precision,
            "input_size": list(self.input_size),
            "frame_decode": "shorter side to input size, open_clip preprocess",
        }

    def image_features(self, video: VideoReader, times: Sequence[float]) -> npt.NDArray[np.float32]:
        """Features of the frames at ``times``, ``float32[N, D]`` (rows L2-normalised)."""
        stamps = [round(float(t), 3) for t in times]
        unique = list(dict.fromkeys(stamps))
        tokens = clip_visual_tokens(self.input_size, len(unique), patch=self.patch_size)
        with self._lock:
            self.usage = self.usage + Cost(clip_calls=1, frames=len(unique), visual_tokens=tokens)
        if not unique:
            return np.zeros((0, self.embed_dim), dtype=np.float32)
        fingerprint, config = video_fingerprint(video), self.config
        keys = {
            t: cache_key("clip", {"video": fingerprint, "time": t, "backend": config})
            for t in unique
        }
        found: dict[float, npt.NDArray[np.float32]] = {}
        for t in unique:
            cached = self.cache.get(keys[t]) if self.cache is not None else None
            if isinstance(cached, np.ndarray):
                found[t] = cached
        missing = [t for t in unique if t not in found]
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start : start + self.batch_size]
            for t, feature in zip(chunk, self._encode_frames(video, chunk), strict=True):
                found[t] = feature
                if self.cache is not None:
                    self.cache.set(keys[t], feature)
        return np.stack([found[t] for t in stamps])

    def text_features(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Features of ``texts``, ``float32[M, D]`` (cached in memory)."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._texts]
        if todo:
            torch = require("torch", "models", "the OpenCLIP backend")
            with torch.no_grad():
                tokens = self._tokenizer(todo).to(self.device)
                encoded = self._net.encode_text(tokens).float().cpu().numpy()
            with self._lock:
                if len(self._texts) + len(todo) > TEXT_CACHE_SIZE:
                    self._texts.clear()
                self._texts.update(zip(todo, normalize_rows(encoded), strict=True))
        if not texts:
            return np.zeros((0, self.embed_dim), dtype=np.float32)
        return np.stack([self._texts[t] for t in texts])

    def encode_images(self, images: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """Features of images ``uint8[N, H, W, 3]`` (open_clip preprocessing; not cached).

        For callers that cut their own crops (the pixel-real VLM's tiles); counts nothing
        in ``usage`` (the caller accounts for its own call). Images already at the model's
        input size skip the per-image Pillow preprocessing (a no-op resize and crop) and are
        normalised as one tensor, once checked to give exactly the same input.
        """
        torch = require("torch", "models", "the OpenCLIP backend")
        if len(images) == 0:
            return np.zeros((0, self.embed_dim), dtype=np.float32)
        out = []
        for start in range(0, len(images), self.batch_size):
            batch = self._image_batch(images[start : start + self.batch_size])
            with torch.no_grad():
                out.append(self._net.encode_image(batch.to(self.device)).float().cpu().numpy())
        return normalize_rows(np.concatenate(out))

    def _image_batch(self, images: npt.NDArray[np.uint8]) -> Any:
        """The model input of ``images``: batched when they are at the input size."""
        at_input = images.shape[1:3] == (self.input_size.height, self.input_size.width)
        if at_input and self._batched_preprocess_ok(images[0]):
            return _normalised(images, self._normalize)
        return self._pil_batch(images)

    def _pil_batch(self, images: npt.NDArray[np.uint8]) -> Any:
        torch = require("torch", "models", "the OpenCLIP backend")
        from PIL import Image

        return torch.stack([self._preprocess(Image.fromarray(im)) for im in images])

    def _batched_preprocess_ok(self, image: npt.NDArray[np.uint8]) -> bool:
        """Whether batched normalisation equals the preprocessing (checked on first use)."""
        if self._batched_ok is None:
            transforms = getattr(self._preprocess, "transforms", [])
            normalize = [t for t in transforms if type(t).__name__ == "Normalize"]
            self._normalize = normalize[-1] if normalize else None
            ok = self._normalize is not None
            if ok:
                torch = require("torch", "models", "the OpenCLIP backend")
                reference = self._pil_batch(image[None])
                ok = bool(torch.equal(reference, _normalised(image[None], self._normalize)))
            self._batched_ok = ok
        return self._batched_ok

    @property
    def logit_scale(self) -> float:
        """The model's learned similarity scale (``exp`` of its ``logit_scale``)."""
        scale = getattr(self._net, "logit_scale", None)
        return float(scale.exp().item()) if scale is not None else 100.0

    @property
    def embed_dim(self) -> int:
        """Feature dimension."""
        projection = getattr(self._net, "text_projection", None)
        if projection is not None and hasattr(projection, "shape"):
            return int(projection.shape[-1])
        return int(getattr(self._net, "embed_dim", 0) or 0)

    def _encode_frames(self, video: VideoReader, times: list[float]) -> npt.NDArray[np.float32]:
        torch = require("torch", "models", "the OpenCLIP backend")
        from PIL import Image

        size = _decode_size(video.size, self.input_size)
        pixels = video.frames(np.asarray(times), size=Resize.exact(size.width, size.height))
        batch = torch.stack([self._preprocess(Image.fromarray(frame)) for frame in pixels])
        with torch.no_grad():
            features = self._net.encode_image(batch.to(self.device)).float().cpu().numpy()
        self.computed_frames += len(times)
        return normalize_rows(features)


def _normalised(images: npt.NDArray[np.uint8], normalize: Any) -> Any:
    """``uint8[N, H, W, 3]`` as torchvision's ``ToTensor`` + ``normalize`` make them, batched."""
    torch = require("torch", "models", "the OpenCLIP backend")
    batch = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).contiguous()
    batch = batch.to(dtype=torch.get_default_dtype()).div(255)
    mean = torch.as_tensor(normalize.mean, dtype=batch.dtype).view(1, -1, 1, 1)
    std = torch.as_tensor(normalize.std, dtype=batch.dtype).view(1, -1, 1, 1)
    return batch.sub_(mean).div_(std)


def _input_size(net: Any) -> Size:
    size = getattr(getattr(net, "visual", None), "image_size", 224)
    if isinstance(size, (tuple, list)):
        return Size(int(size[1]), int(size[0]))
    return Size(int(size), int(size))


def _patch_size(net: Any) -> int:
    """The vision tower's patch side (32 when it has none, e.g. a ResNet CLIP)."""
    patch = getattr(getattr(net, "visual", None), "patch_size", 32)
    if isinstance(patch, (tuple, list)):
        patch = patch[0]
    return int(patch)


def _decode_size(native: Size, target: Size) -> Size:
    """Native size scaled so that it covers ``target`` with its shorter side (aspect kept)."""
    scale = max(target.width / native.width, target.height / native.height)
    return Size(
        max(target.width, round(native.width * scale)),
        max(target.height, round(native.height * scale)),
    )


def _folder_stamp(folder: str) -> list[object]:
    stamp: list[object] = []
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if os.path.isfile(path):
            stat = os.stat(path)
            stamp.append([entry, stat.st_size, stat.st_mtime_ns])
    return stamp
