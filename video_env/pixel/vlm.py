"""The pixel-real VLM and captioner: the trained tiny CLIP looking at decoded frames.

Both look at every frame of a :class:`~video_env.backends.base.FrameBatch` (the env's
frame count and size) through a grid of tiles (:func:`video_env.pixel.tiles.tiles`): the
whole frame, then 2 and 3 rows of tiles. A tile of a high-resolution frame shows a needle
large; the same tile of a low-resolution frame is upsampled and blurry — so accuracy
follows what was looked at and at what resolution, from pixels.

- :class:`PixelRealVLM` answers an MCQ by scoring each option's statement ("a red
  umbrella", from the carrier named in the question) against every tile, taking the best
  tile per option, less a fitted share of its mean over all tiles (the option's prior on
  those frames); the confidence is the softmax of those scores divided by a temperature,
  both fitted on a separate split. An open question is answered by naming the best fact of the
  carrier's pool the same way.
- :class:`PixelRealCaptioner` says what it detects: the scene that best matches the whole
  frames, and each carrier that beats every scene description on some tile, with its best
  fact (the fact pool scored as the VLM scores options, prior weight included).

Neither reads annotations: the question's carrier is found from the world's public
vocabulary (:data:`~video_env.synth.vocab.CARRIERS`), as a model would know its task.
Results are labelled ``pixel-real``: real inference on rendered pixels, not simulated, and
not a real-model result.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from video_env._optional import require
from video_env.backends.base import Answer, FrameBatch
from video_env.backends.openclip import OpenCLIP
from video_env.backends.simulated.clip import clip_visual_tokens
from video_env.cache.store import CacheArg, resolve_cache
from video_env.metrics.cost import Cost
from video_env.pixel import WEIGHTS_DIR
from video_env.pixel.features import TileFeatures
from video_env.pixel.tiles import TILE_GRIDS
from video_env.synth.vocab import CARRIERS, FACT_POOLS, SCENE_STYLES, Carrier
from video_env.types import OPTION_LETTERS
from video_env.video.base import VideoReader

#: Frames of a batch the roles look at (evenly chosen): CPU time, not accuracy, sets it.
MAX_FRAMES = 8
#: The captioner's lighter look (light captions of every clip dominate a bench's CPU time):
#: at most 4 frames, through the 1- and 2-row grids.
CAPTION_MAX_FRAMES = 4
CAPTION_GRIDS = (1, 2)
#: What the VLM says to a question about no carrier it knows.
UNKNOWN_TEXT = "I cannot tell from these frames."

_QUESTIONS = {c.question.format(carrier=c.name): c for c in CARRIERS}
#: What the captioner and the "not in view" answer compare carriers with.
SCENE_DESCRIPTIONS = [s.description for s in SCENE_STYLES]


def prior_corrected(
    best: npt.NDArray[np.float64], mean: npt.NDArray[np.float64], prior_weight: float
) -> npt.NDArray[np.float64]:
    """Option scores: each text's best tile less ``prior_weight`` × its mean (rounded)."""
    scores: npt.NDArray[np.float64] = np.round(best - prior_weight * mean, 6)
    return scores


def null_score(
    best_scene: float, option_means: npt.NDArray[np.float64], prior_weight: float, margin: float
) -> float:
    """The "not in view" answer's score: best scene similarity + margin − prior (scaled)."""
    return round(float(best_scene + margin - prior_weight * np.mean(option_means)), 6)


def logits_with_null(
    best: npt.NDArray[np.float64],
    mean: npt.NDArray[np.float64],
    best_scene: float,
    prior_weight: float,
    margin: float,
) -> npt.NDArray[np.float64]:
    """The options' prior-corrected scores and, last, the "not in view" answer's (scaled)."""
    null = null_score(best_scene, mean, prior_weight, margin)
    return np.append(prior_corrected(best, mean, prior_weight), null)


def spread_null(probs: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Probabilities of the options, the last entry's ("not in view") mass shared evenly."""
    out: npt.NDArray[np.float64] = probs[:-1] + probs[-1] / (len(probs) - 1)
    return out


def carrier_for(question: str) -> Carrier | None:
    """The carrier a synthetic question asks about (``None`` for any other question)."""
    return _QUESTIONS.get(question.strip())


def softmax(logits: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Softmax of a 1-D array."""
    z = np.exp(logits - logits.max())
    out: npt.NDArray[np.float64] = z / z.sum()
    return out


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run torch on one thread inside the block (restored after).

    The pixel-real CLIP is tiny: a second thread gains little, and on cores shared with
    other processes (a bench's workers, other jobs) two threads per process made its
    forward passes several times slower. Features do not depend on it (checked equal).
    """
    torch = require("torch", "models", "the pixel-real perception")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class PixelRealCLIP(OpenCLIP):
    """The pixel-real CLIP: :class:`OpenCLIP` on the shipped folder, labelled pixel-real.

    Its forward passes run on one torch thread (:func:`one_torch_thread`).
    """

    pixel_real = True

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.name = "pixel-real:clip"

    def encode_images(self, images: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
        """:meth:`OpenCLIP.encode_images` on one torch thread."""
        with one_torch_thread():
            return super().encode_images(images)

    def text_features(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """:meth:`OpenCLIP.text_features` on one torch thread."""
        with one_torch_thread():
            return super().text_features(texts)

    def _encode_frames(self, video: VideoReader, times: list[float]) -> npt.NDArray[np.float32]:
        with one_torch_thread():
            return super()._encode_frames(video, times)


class PixelScorer:
    """The trained CLIP, its tiling and its fitted temperature, shared by the roles.

    Args:
        weights: Folder of the pixel-real CLIP (default: the shipped one).
        grids: Tile grids each frame is looked at through.
        max_frames: At most this many frames of a batch are looked at (evenly chosen).
        temperature: Softmax temperature (default: the one fitted by
            ``python -m experiments.pixel_models perception``, stored in ``pixel_real.json``).
        prior_weight: How much of a text's mean similarity over all tiles looked at (its
            prior on these frames) is taken off its best tile's (default: the one fitted
            with the temperature, stored in ``pixel_real.json``; 0 when none is stored).
        null_margin: The "not in view" answer's margin over the best scene description's
            similarity (:meth:`answer_probabilities`; default: the fitted one in
            ``pixel_real.json``; ``None`` there: no such answer).
        cache: The disk cache of whole-frame retrieval features and of tile features
            (:class:`~video_env.pixel.features.TileFeatures`).
    """

    def __init__(
        self,
        weights: str | Path | None = None,
        *,
        grids: tuple[int, ...] = TILE_GRIDS,
        max_frames: int = MAX_FRAMES,
        temperature: float | None = None,
        prior_weight: float | None = None,
        null_margin: float | None = None,
        cache: CacheArg = "shared",
    ) -> None:
        folder = Path(weights) if weights is not None else WEIGHTS_DIR
        self.folder = folder
        self.cache: CacheArg = cache
        self.clip = PixelRealCLIP(str(folder), device="cpu", cache=cache)
        meta_path = folder / "pixel_real.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        self.temperature = float(temperature or meta.get("temperature", 1.0))
        self.prior_weight = float(
            prior_weight if prior_weight is not None else meta.get("prior_weight", 0.0)
        )
        margin = null_margin if null_margin is not None else meta.get("null_margin")
        self.null_margin: float | None = None if margin is None else float(margin)
        self.grids = grids
        self.max_frames = max_frames
        self.scale = self.clip.logit_scale
        self.tiles = TileFeatures(self.clip, resolve_cache(cache))
        #: Visual tokens a tile costs: the image tower's output cells (patches, or a CNN's
        #: last feature map at stride 32) plus one, as OpenCLIP counts a frame's.
        self.tokens_per_tile = clip_visual_tokens(self.clip.input_size, 1, self.clip.patch_size)

    def new_clip(self) -> PixelRealCLIP:
        """A fresh CLIP role on the same (shared) model: its own ``usage``."""
        return PixelRealCLIP(str(self.folder), device="cpu", cache=self.cache)

    @property
    def config(self) -> dict[str, object]:
        """What changes the outputs: the CLIP, the tiling and the temperature."""
        return {
            "backend": "pixel-real",
            "clip": self.clip.config,
            "grids": list(self.grids),
            "max_frames": self.max_frames,
            "temperature": self.temperature,
            "prior_weight": self.prior_weight,
            "null_margin": self.null_margin,
        }

    def tile_features(
        self,
        frames: FrameBatch,
        grids: tuple[int, ...] | None = None,
        max_frames: int | None = None,
    ) -> npt.NDArray[np.float32]:
        """Features of every tile of the frames looked at, ``float32[n * tiles, D]``.

        Computed once per (frame, grid) and cached (see :mod:`video_env.pixel.features`).
        """
        chosen = self.looked_at(frames, max_frames or self.max_frames)
        return self.tiles.features(chosen, grids or self.grids)

    def looked_at(self, frames: FrameBatch, max_frames: int | None = None) -> FrameBatch:
        """The batch itself, or ``max_frames`` of its frames evenly chosen."""
        limit = max_frames or self.max_frames
        if len(frames) <= limit:
            return frames
        pick = np.unique(np.linspace(0, len(frames) - 1, limit).round().astype(int))
        return FrameBatch(frames.video, frames.times[pick], frames.size)

    def scores(
        self, tile_features: npt.NDArray[np.float32], texts: Sequence[str]
    ) -> npt.NDArray[np.float64]:
        """Per text: best tile's similarity minus ``prior_weight`` × its mean, × logit scale.

        The mean over every tile looked at (mostly background) is the text's prior on these
        frames; taking part of it off removes option biases that have nothing to do with
        the evidence (contextual calibration, Zhao et al. 2021).
        """
        return prior_corrected(*self.tile_statistics(tile_features, texts), self.prior_weight)

    def tile_statistics(
        self, tile_features: npt.NDArray[np.float32], texts: Sequence[str]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Per text, its best and its mean similarity over the tiles, × the logit scale."""
        text_features = self.clip.text_features(list(texts))
        sims = np.asarray(tile_features, np.float64) @ np.asarray(text_features, np.float64).T
        return sims.max(axis=0) * self.scale, sims.mean(axis=0) * self.scale

    def probabilities(self, scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Temperature-scaled softmax of ``scores``."""
        return softmax(scores / self.temperature)

    def answer_probabilities(
        self, tile_features: npt.NDArray[np.float32], texts: Sequence[str]
    ) -> npt.NDArray[np.float64]:
        """Probabilities of ``texts`` as the answer, next to a "not in view" answer.

        With a fitted ``null_margin``, the softmax also holds a "not in view" answer whose
        score is the best scene description's similarity on any tile plus the margin
        (less the same prior as the texts'). Its mass is then spread evenly over the
        texts — a forced guess is right one time in ``len(texts)`` — so each probability
        is the chance that this text is the right answer, and frames that show nothing but
        a scene (or another carrier) give no confident answer.
        """
        best, mean = self.tile_statistics(tile_features, texts)
        if self.null_margin is None:
            return self.probabilities(prior_corrected(best, mean, self.prior_weight))
        scene = float(self.tile_statistics(tile_features, SCENE_DESCRIPTIONS)[0].max())
        logits = logits_with_null(
            best, mean, scene, self.prior_weight, self.null_margin * self.scale
        )
        return spread_null(softmax(logits / self.temperature))


def _statements(carrier: Carrier | None, facts: Sequence[str]) -> list[str]:
    if carrier is None:
        return list(facts)
    return [carrier.template.format(fact=f) for f in facts]


class _PixelRealRole:
    """What the VLM and the captioner share: a scorer, a name, a usage meter, a config.

    Args:
        scorer: The shared scorer (default: the shipped weights).
    """

    simulated = False
    pixel_real = True
    #: The role's name (``pixel-real:<role>``).
    role: ClassVar[str]
    #: What the role adds to the scorer's config: how it turns scores into outputs.
    role_config: ClassVar[Mapping[str, object]]

    def __init__(self, scorer: PixelScorer | None = None) -> None:
        self.scorer = scorer or PixelScorer()
        self.name = f"pixel-real:{self.role}"
        self.usage = Cost()

    @property
    def config(self) -> dict[str, object]:
        """What changes the outputs: the scorer's settings and the role's rule."""
        return {**self.scorer.config, "role": self.role, **self.role_config}

    def _look(
        self,
        frames: FrameBatch,
        cost: Cost,
        grids: tuple[int, ...] | None = None,
        max_frames: int | None = None,
    ) -> tuple[npt.NDArray[np.float32], int]:
        """The tile features of ``frames`` and their visual tokens, counted with ``cost``."""
        features = self.scorer.tile_features(frames, grids, max_frames)
        tokens = len(features) * self.scorer.tokens_per_tile
        self.usage = self.usage + cost + Cost(frames=len(frames), visual_tokens=tokens)
        return features, tokens


class PixelRealVLM(_PixelRealRole):
    """Answers by CLIP option scoring over tiles of the frames (see the module docstring).

    Args:
        scorer: The shared scorer (default: the shipped weights).
    """

    role = "vlm"
    role_config: ClassVar[Mapping[str, object]] = {
        "rule": "option statements, best tile less prior"
    }

    def answer(
        self, frames: FrameBatch, question: str, options: Sequence[str] | None = None
    ) -> Answer:
        """Answer ``question`` from the pixels of ``frames``; MCQ answers are letters."""
        carrier = carrier_for(question)
        features, tokens = self._look(frames, Cost(vlm_calls=1))
        if options:
            candidates = list(options)
        elif carrier is not None:
            candidates = list(FACT_POOLS[carrier.facts])
        else:
            return Answer(UNKNOWN_TEXT, 0.0, (0.0,), tokens)
        probs = self.scorer.answer_probabilities(features, _statements(carrier, candidates))
        best = int(np.argmax(probs))
        confidence = float(probs[best])
        text = OPTION_LETTERS[best] if options else candidates[best]
        return Answer(text, confidence, (confidence,), tokens)


class PixelRealCaptioner(_PixelRealRole):
    """Captions what the CLIP detects in the frames (see the module docstring).

    Args:
        scorer: The shared scorer (default: the shipped weights).
    """

    role = "captioner"
    role_config: ClassVar[Mapping[str, object]] = {
        "rule": "scene + detected carriers",
        "grids": list(CAPTION_GRIDS),
        "max_frames": CAPTION_MAX_FRAMES,
    }

    def caption(self, frames: FrameBatch, max_tokens: int = 64, style: str = "light") -> str:
        """The best-matching scene and each detected carrier with its best fact.

        Both styles give the same text (the tiny model names what it detects; it has no
        longer description to give), cut to ``max_tokens`` words.
        """
        features, _ = self._look(frames, Cost(caption_calls=1), CAPTION_GRIDS, CAPTION_MAX_FRAMES)
        scenes = [s.description for s in SCENE_STYLES]
        presences = [c.presence for c in CARRIERS]
        text_features = self.scorer.clip.text_features(scenes + presences)
        sims = np.round(np.asarray(features, np.float64) @ text_features.T.astype(np.float64), 6)
        per_frame = len(features) // len(self.scorer.looked_at(frames, CAPTION_MAX_FRAMES))
        whole = sims[::per_frame, : len(scenes)] if per_frame else sims[:, : len(scenes)]
        parts = [scenes[int(np.argmax(whole.mean(axis=0)))]]
        winners = np.argmax(sims, axis=1)
        for k in sorted({int(w) - len(scenes) for w in winners if w >= len(scenes)}):
            carrier = CARRIERS[k]
            facts = list(FACT_POOLS[carrier.facts])
            scores = self.scorer.scores(features, _statements(carrier, facts))
            parts.append(carrier.template.format(fact=facts[int(np.argmax(scores))]))
        words = "; ".join(parts).split()
        return " ".join(words[:max_tokens])
