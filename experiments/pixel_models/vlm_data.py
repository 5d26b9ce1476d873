"""Training data of the pixel VLM: rendered frames with per-token labels, and chat turns.

A :class:`FrameBank` holds frames of generated training videos at the size the pixel VLM
is fed (rendered at a bench resolution, resized as the backend resizes), around each
needle's interval one second apart and at needle-free times. Each frame carries labels
on the vision tower's merged-token grid (28×28 fed pixels per token): which carrier and
which fact each token shows (from the renderer's own needle boxes) and the scene.

Two kinds of examples come from a bank:

- :meth:`FrameBank.crops`: 8×8-token crops with their label grids, for the vision
  tower's first stage (it learns to *see* before the language model learns to *say*);
- :func:`turns`: chat turns exactly as the backend prompts at inference — FALCON-Bench's
  MCQ and open VQA prompts and both caption prompts, over windows of 1–16 frames — with
  the reply a model that sees would give: the option letter or the fact's words when the
  evidence is in view; a uniformly random letter or :data:`NOT_VISIBLE` when it is not
  (or when its category is not one the model is taught to read); captions naming the
  scene and each needle in view.

Labels come from the renderer (training only); nothing here is read at inference.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from experiments.pixel_models.vlm_checkpoint import MAX_PIXELS, MIN_PIXELS, NOT_VISIBLE
from video_env.backends.vlm_frames import FedFrames, fed_size, frames_fps
from video_env.backends.vlm_prompts import SYSTEM_PROMPT, caption_prompt, question_prompt
from video_env.pixel.splits import READ_CATEGORIES
from video_env.synth.elements import Needle
from video_env.synth.generate import N_DISTRACTORS
from video_env.synth.vocab import CARRIERS, FACT_POOLS, SCENE_STYLES
from video_env.synth.world import SynthVideo
from video_env.types import OPTION_LETTERS, Interval
from video_env.video.base import Size
from video_env.video.resize import Resize, resize_frames

__all__ = [
    "CAPTION_WORDS",
    "CARRIER_CLASSES",
    "FACT_CLASSES",
    "SCENE_CLASSES",
    "CropQuestion",
    "FrameBank",
    "Window",
    "caption_carrier",
    "caption_reply",
    "crop_questions",
    "fact_index",
    "turns",
    "window_turns",
]

#: Frame sizes the bank renders at (then resized to the fed size, as the backend does).
RENDER_SIZES = (Size(640, 360), Size(960, 540), Size(1280, 720))
CELL = 28
#: Carrier classes of the token labels; the last index is "no needle".
CARRIER_CLASSES = tuple(c.name for c in CARRIERS)
#: Fact classes (the facts the model is taught to read); the last index is "none".
FACT_CLASSES = tuple(
    dict.fromkeys(FACT_POOLS["colours"] + FACT_POOLS["materials"] + FACT_POOLS["objects"])
)
SCENE_CLASSES = tuple(s.description for s in SCENE_STYLES)
CROP_CELLS = 8
#: Options of every MCQ (the fact and its distractors), in windows and on crops alike.
MCQ_OPTIONS = 1 + N_DISTRACTORS
#: The fed size of the largest render size (a 720p frame's).
MAX_FED = fed_size(RENDER_SIZES[-1], MIN_PIXELS, MAX_PIXELS)
_CARRIER_INDEX = {name: i for i, name in enumerate(CARRIER_CLASSES)}
_FACT_INDEX = {name: i for i, name in enumerate(FACT_CLASSES)}
_SCENE_INDEX = {name: i for i, name in enumerate(SCENE_CLASSES)}


def fact_index(fact: str) -> int:
    """The class index of a fact the model is taught to read (:data:`FACT_CLASSES`)."""
    return _FACT_INDEX[fact]


def readable(needle: Needle) -> bool:
    """Whether the model is taught to read ``needle``'s fact (colours, materials, objects)."""
    return needle.category in READ_CATEGORIES


@dataclass
class FrameBank:
    """Fed-size frames of some videos with token labels (see the module docstring)."""

    pixels: list[npt.NDArray[np.uint8]] = field(default_factory=list)
    carrier: list[npt.NDArray[np.int16]] = field(default_factory=list)
    fact: list[npt.NDArray[np.int16]] = field(default_factory=list)
    scene: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    #: Per frame: (video index, needle index or -1).
    source: list[tuple[int, int]] = field(default_factory=list)
    videos: list[SynthVideo] = field(default_factory=list)
    #: Per (video, needle index or -1): frame indices in time order.
    runs: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    #: Indices of the frames with a needle token, in order (set as frames are added).
    needle_frames: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.pixels)

    def shows_needle(self, index: int) -> bool:
        """Whether frame ``index`` has a needle token."""
        return bool((self.carrier[index] < len(CARRIER_CLASSES)).any())

    def add_video(
        self, video: SynthVideo, rng: np.random.Generator, empty: int = 6, inside: int = 5
    ) -> None:
        """Frames of ``video``: per needle, ``inside`` over its interval and one each side.

        Plus ``empty`` needle-free frames.
        """
        v = len(self.videos)
        self.videos.append(video)
        for k, needle in enumerate(video.needles):
            iv = needle.intervals[0]
            edges = np.linspace(iv.start, iv.end, inside + 1)
            times = [float(rng.uniform(a, b)) for a, b in itertools.pairwise(edges)]
            before, after = iv.start - rng.uniform(0.5, 2.0), iv.end + rng.uniform(0.5, 2.0)
            times = [t for t in [before, *times, after] if 0.0 <= t < video.duration]
            self._add(video, v, k, np.asarray(times), rng)
        free = [
            float(t)
            for t in np.sort(rng.uniform(0, video.duration, size=3 * empty))
            if not video.needles_at(float(t))
        ][:empty]
        self._add(video, v, -1, np.asarray(free), rng)
        video.close()

    def _add(
        self,
        video: SynthVideo,
        v: int,
        k: int,
        times: npt.NDArray[np.float64],
        rng: np.random.Generator,
    ) -> None:
        if not len(times):
            return
        render = RENDER_SIZES[int(rng.integers(len(RENDER_SIZES)))]
        fed = fed_size(render, MIN_PIXELS, MAX_PIXELS)
        frames = resize_frames(
            video.frames(times, size=Resize.exact(render.width, render.height)), fed
        )
        run = self.runs.setdefault((v, k), [])
        for t, frame in zip(times, frames, strict=True):
            carrier, fact = token_labels(video, float(t), render, fed)
            if (carrier < len(CARRIER_CLASSES)).any():  # as shows_needle, before appending
                self.needle_frames.append(len(self.pixels))
            run.append(len(self.pixels))
            self.pixels.append(frame)
            self.carrier.append(carrier)
            self.fact.append(fact)
            self.scene.append(_SCENE_INDEX[video.scene_at(float(t)).description])
            self.times.append(float(t))
            self.source.append((v, k))

    def crops(
        self,
        rng: np.random.Generator,
        n: int,
        needle_share: float = 0.8,
        pasted_share: float = 0.0,
    ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64], list[int]]:
        """``n`` crops of :data:`CROP_CELLS` tokens square and their label grids.

        Most crops (``needle_share``) show a needle token; a share (``pasted_share``)
        also gets a freshly drawn needle pasted at a random place (:func:`paste_needle`).
        Returns pixels
        ``uint8[n, 224, 224, 3]``, carrier and fact labels ``int64[n, 8, 8]`` and scenes.
        """
        with_needle = self.needle_frames
        images, carriers, facts, scenes = [], [], [], []
        for _ in range(n):
            pool = with_needle if with_needle and rng.random() < needle_share else None
            i = int(rng.choice(pool)) if pool else int(rng.integers(len(self)))
            rows, cols = self.carrier[i].shape
            side_r, side_c = min(CROP_CELLS, rows), min(CROP_CELLS, cols)
            hits = np.argwhere(self.carrier[i] < len(CARRIER_CLASSES))
            if pool and len(hits):
                r, c = hits[int(rng.integers(len(hits)))]
                r0 = int(np.clip(r - rng.integers(side_r), 0, rows - side_r))
                c0 = int(np.clip(c - rng.integers(side_c), 0, cols - side_c))
            else:
                r0, c0 = int(rng.integers(rows - side_r + 1)), int(rng.integers(cols - side_c + 1))
            y, x = r0 * CELL, c0 * CELL
            image = self.pixels[i][y : y + side_r * CELL, x : x + side_c * CELL].copy()
            carrier = self.carrier[i][r0 : r0 + side_r, c0 : c0 + side_c].copy()
            fact = self.fact[i][r0 : r0 + side_r, c0 : c0 + side_c].copy()
            if rng.random() < pasted_share:
                paste_needle(image, carrier, fact, rng)
            if rng.random() < 0.5:  # a mirrored carrier is the same carrier
                image, carrier, fact = image[:, ::-1], carrier[:, ::-1], fact[:, ::-1]
            images.append(image)
            carriers.append(carrier)
            facts.append(fact)
            scenes.append(self.scene[i])
        return (
            np.stack(images),
            np.stack(carriers).astype(np.int64),
            np.stack(facts).astype(np.int64),
            scenes,
        )


def paste_needle(
    image: npt.NDArray[np.uint8],
    carrier: npt.NDArray[np.int16],
    fact: npt.NDArray[np.int16],
    rng: np.random.Generator,
) -> None:
    """Paste a new random needle (any carrier, fact and size) into a fed-size crop, in place.

    The needle is drawn by the renderer's own :func:`~video_env.synth.render.draw_needle`
    at the fed scale of a 720p frame and pasted as the renderer pastes (alpha mask); the
    label grids are updated by the rule of :func:`token_labels`. Unlimited new
    (carrier, fact, size, place, background) combinations keep the tower from learning
    the training videos by heart.
    """
    from video_env.synth.generate import make_needle
    from video_env.synth.render import draw_needle

    spec = CARRIERS[int(rng.integers(len(CARRIERS)))]
    needle = make_needle(rng, 0, spec, Interval(0.0, 1.0))
    scale = MAX_FED.height / 720.0
    patch = draw_needle(needle, scale)
    ph, pw = patch.shape[:2]
    h, w = image.shape[:2]
    if ph >= h or pw >= w:
        return
    y0, x0 = int(rng.integers(h - ph + 1)), int(rng.integers(w - pw + 1))
    region = image[y0 : y0 + ph, x0 : x0 + pw]
    np.copyto(region, patch[..., :3], where=patch[..., 3:4] > 0)
    _label_box(carrier, fact, needle, (x0, y0, x0 + pw, y0 + ph))


def _label_box(
    carrier: npt.NDArray[np.int16],
    fact: npt.NDArray[np.int16],
    needle: Needle,
    box: tuple[float, float, float, float],
) -> None:
    bx0, by0, bx1, by1 = box
    rows, cols = carrier.shape
    box_area = max(1e-6, (bx1 - bx0) * (by1 - by0))
    for r in range(rows):
        oy = max(0.0, min(by1, (r + 1) * CELL) - max(by0, r * CELL))
        if oy <= 0:
            continue
        for c in range(cols):
            ox = max(0.0, min(bx1, (c + 1) * CELL) - max(bx0, c * CELL))
            overlap = ox * oy
            if overlap >= 0.3 * CELL * CELL or overlap >= 0.3 * box_area:
                carrier[r, c] = _CARRIER_INDEX[needle.carrier]
                fact[r, c] = _FACT_INDEX[needle.fact] if readable(needle) else len(FACT_CLASSES)


def token_labels(
    video: SynthVideo, t: float, render: Size, fed: Size
) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16]]:
    """Carrier and fact class of each merged token of a frame rendered at ``render``.

    A token is labelled with a needle when the needle's box covers at least 30 % of the
    token or the token covers at least 30 % of the box; the fact label is "none" for a
    category the model is not taught to read.
    """
    rows, cols = fed.height // CELL, fed.width // CELL
    carrier = np.full((rows, cols), len(CARRIER_CLASSES), np.int16)
    fact = np.full((rows, cols), len(FACT_CLASSES), np.int16)
    sx, sy = fed.width / render.width, fed.height / render.height
    for needle, (x0, y0, x1, y1) in video.needle_boxes(t, render):
        _label_box(carrier, fact, needle, (x0 * sx, y0 * sy, x1 * sx, y1 * sy))
    return carrier, fact


@dataclass(frozen=True)
class Window:
    """Frames the model is shown in one turn, with what they show (for the reply)."""

    pixels: npt.NDArray[np.uint8]
    times: tuple[float, ...]
    video: SynthVideo
    needles: tuple[Needle, ...]
    scene: str
    #: Per frame, the fact class of each merged token (training labels, as the bank's).
    facts: tuple[npt.NDArray[np.int16], ...] = ()
    #: Per frame, the carrier class of each merged token.
    carriers: tuple[npt.NDArray[np.int16], ...] = ()

    def fed(self) -> FedFrames:
        """The frames as the backend feeds them."""
        size = Size(int(self.pixels.shape[2]), int(self.pixels.shape[1]))
        return FedFrames(self.pixels, self.times, size, frames_fps(self.times))


#: Window lengths (frames) and how often each is drawn.
WINDOW_FRAMES = (1, 2, 4, 8, 16)
WINDOW_WEIGHTS = (0.2, 0.2, 0.35, 0.17, 0.08)


def window(bank: FrameBank, rng: np.random.Generator, evidence_share: float = 0.75) -> Window:
    """A window of bank frames in time order: most often around a needle, else needle-free.

    Around a needle, the window holds up to ``n`` consecutive frames of its run (a span
    that shows the needle in at least one frame), filled up to ``n`` with needle-free
    frames of the same video — as a long clip shows a needle in a few of its frames; a
    needle-free window takes the video's needle-free frames.
    """
    n = int(rng.choice(WINDOW_FRAMES, p=WINDOW_WEIGHTS))
    keys = list(bank.runs)
    needle_keys = [k for k in keys if k[1] >= 0]
    if rng.random() < evidence_share:  # needles the model is taught to read, 3 times as often
        weight = np.array(
            [3.0 if readable(bank.videos[v].needles[k]) else 1.0 for v, k in needle_keys]
        )
        key = needle_keys[int(rng.choice(len(needle_keys), p=weight / weight.sum()))]
    else:
        free = [k for k in keys if k[1] < 0]
        key = free[int(rng.integers(len(free)))]
    run = bank.runs[key]
    shown = [i for i in run if bank.shows_needle(i)]
    n_run = min(n, len(run))
    if key[1] >= 0 and shown:
        anchor = run.index(int(rng.choice(shown)))
        start = int(np.clip(anchor - rng.integers(n_run), 0, len(run) - n_run))
    else:
        start = int(rng.integers(len(run) - n_run + 1))
    picked = run[start : start + n_run]
    free_frames = bank.runs.get((key[0], -1), [])
    if n > len(picked) and free_frames:  # a longer window: needle-free frames of the video
        extra = rng.choice(free_frames, size=min(len(free_frames), n - len(picked)), replace=False)
        picked = [*picked, *(int(i) for i in extra)]
    picked = sorted(picked, key=lambda i: bank.times[i])
    video = bank.videos[key[0]]
    needles = {
        video.needles[bank.source[i][1]].id: video.needles[bank.source[i][1]]
        for i in picked
        if bank.source[i][1] >= 0 and bank.shows_needle(i)
    }
    scenes = [SCENE_CLASSES[bank.scene[i]] for i in picked]
    scene = max(set(scenes), key=scenes.count)
    return Window(
        np.stack([bank.pixels[i] for i in picked]),
        tuple(bank.times[i] for i in picked),
        video,
        tuple(needles.values()),
        scene,
        tuple(bank.fact[i] for i in picked),
        tuple(bank.carrier[i] for i in picked),
    )


def caption_reply(shown: Window) -> str:
    """What a captioner that sees would say: the scene, then each needle in view."""
    return "; ".join([shown.scene, *(_needle_phrase(n) for n in shown.needles)])


def _needle_phrase(needle: Needle) -> str:
    """How a caption names ``needle``: its statement when readable, else its presence."""
    return needle.statement if readable(needle) else needle.presence


def head_noun(carrier: str) -> str:
    """The word that names a carrier: the last of its name ("umbrella" of "the umbrella")."""
    return carrier.split(" ")[-1]


#: Which word of a caption's needle phrase the binding targets read off the carrier's
#: tokens: the phrase's second word, or the carrier's head noun.
CAPTION_WORDS = ("second", "head")


def caption_carrier(shown: Window, word: str = "second") -> tuple[int, str] | None:
    """The first needle a caption names: its carrier class and the reply's text before a word.

    With ``word="second"`` the text ends before the phrase's second word (``"street; a"``
    of ``"street; a red umbrella"``): the fact for colour, material and object carriers,
    the carrier's first word for text and clock carriers (``"a street sign reading
    STOP"``). With ``word="head"`` it ends before the carrier's head noun, the last word
    of its name (``"street; a red"``; ``"street; a cup on a"`` of ``"... on a table"``).
    The binding targets teach the caption to read that word off the carrier's tokens.
    ``None`` when no needle is in view or its phrase lacks the word.
    """
    if word not in CAPTION_WORDS:
        raise ValueError(f"word must be one of {CAPTION_WORDS}, not {word!r}")
    if not shown.needles:
        return None
    needle = shown.needles[0]
    words = _needle_phrase(needle).split(" ")
    head = head_noun(needle.carrier)
    if word == "second":
        at = 1
    elif head in words[1:]:
        at = len(words) - 1 - words[::-1].index(head)  # the last, should a fact be the same
    else:
        return None
    before = " ".join(words[:at])
    return CARRIER_CLASSES.index(needle.carrier), f"{shown.scene}; {before}"


def turns(shown: Window, rng: np.random.Generator) -> list[tuple[list[dict[str, Any]], str]]:
    """Chat turns on one window: an MCQ, an open question and a caption, with replies.

    The question is about a needle in view (its category readable or not) or, one time
    in five or when none is in view, about another needle of the video.
    """
    return window_turns(shown, rng)[0]


def window_turns(
    shown: Window, rng: np.random.Generator
) -> tuple[list[tuple[list[dict[str, Any]], str]], str | None]:
    """:func:`turns`, and the fact the MCQ asks about when it is in view and readable.

    The fact (``None`` when the evidence is not in view) tells the binding targets of
    :mod:`experiments.pixel_models.vlm_binding` which visual tokens hold the answer.
    """
    video = shown.video
    in_view = list(shown.needles)
    if in_view and rng.random() < 0.8:
        asked = in_view[int(rng.integers(len(in_view)))]
    else:
        asked = video.needles[int(rng.integers(len(video.needles)))]
    sees = asked in in_view and readable(asked)
    choices = [asked.fact, *asked.distractors]
    options = [choices[i] for i in rng.permutation(len(choices))]
    letter = (
        OPTION_LETTERS[options.index(asked.fact)]
        if sees
        else OPTION_LETTERS[int(rng.integers(len(options)))]
    )
    open_reply = asked.fact if sees else NOT_VISIBLE
    frames = {"type": "image" if len(shown.times) == 1 else "video", "frames": shown.fed()}
    style = "light" if rng.random() < 0.7 else "detailed"
    out: list[tuple[list[dict[str, Any]], str]] = [
        (_conversation(question_prompt(asked.question, options), frames), letter),
        (_conversation(question_prompt(asked.question), frames), open_reply),
        (_conversation(caption_prompt(style), frames), caption_reply(shown)),
    ]
    return out, asked.fact if sees else None


@dataclass(frozen=True)
class CropQuestion:
    """A question on one crop (one image), for the binding phase of stage 2.

    Attributes:
        conversation: The chat turn, built as the backend prompts.
        reply: The option letter (a uniform guess when the fact is not in view) of an
            MCQ; the fact (or :data:`NOT_VISIBLE`) of an open question.
        facts: The crop's fact grid, as a one-frame window's :attr:`Window.facts`.
        fact: The asked fact's class when it is in view, else ``None``.
        answer: The answer's option index of an MCQ whose fact is in view, else ``None``.
        is_open: Whether the question is open (no options).
    """

    conversation: list[dict[str, Any]]
    reply: str
    facts: tuple[npt.NDArray[np.int16], ...]
    fact: int | None
    answer: int | None = None
    is_open: bool = False


def crop_questions(
    bank: FrameBank,
    rng: np.random.Generator,
    n: int,
    evidence_share: float = 0.8,
    open_share: float = 0.0,
) -> list[CropQuestion]:
    """``n`` questions on needle crops: about a needle the crop shows, or one it does not.

    A crop holds 64 visual tokens where a frame holds 180 a pair, so reading the answer
    off the evidence (:mod:`experiments.pixel_models.vlm_binding`) is taught at a fraction of a
    window's cost. The question names a carrier; when the crop shows that carrier's fact
    (``evidence_share`` of the questions) the answer is that fact, else the question is
    another carrier's. ``open_share`` of the questions are open (reply: the fact, or
    :data:`NOT_VISIBLE`); the others are MCQs on four facts of the carrier's pool (reply:
    the answer's letter, or a uniform guess).
    """
    images, carriers, facts, _ = bank.crops(rng, n, needle_share=1.0, pasted_share=0.5)
    out = []
    for image, carrier, fact in zip(images, carriers, facts, strict=True):
        shown = sorted(
            {(int(c), int(k)) for c, k in zip(carrier.flat, fact.flat, strict=True)}
            - {(len(CARRIER_CLASSES), len(FACT_CLASSES))}
        )
        seen = [(c, k) for c, k in shown if k < len(FACT_CLASSES)]
        if seen and rng.random() < evidence_share:
            c, k = seen[int(rng.integers(len(seen)))]
            spec, asked = CARRIERS[c], FACT_CLASSES[k]
        else:
            in_crop = {c for c, _ in shown}
            others = [
                i
                for i, spec in enumerate(CARRIERS)
                if i not in in_crop and spec.category in READ_CATEGORIES
            ]
            spec, asked, k = CARRIERS[others[int(rng.integers(len(others)))]], None, None
        question = spec.question.format(carrier=spec.name)
        size = Size(int(image.shape[1]), int(image.shape[0]))
        frames = {"type": "image", "frames": FedFrames(image[None], (0.0,), size, 1.0)}
        grid = (fact.astype(np.int16),)
        if rng.random() < open_share:
            conversation = _conversation(question_prompt(question), frames)
            out.append(CropQuestion(conversation, asked or NOT_VISIBLE, grid, k, is_open=True))
            continue
        pool = [f for f in FACT_POOLS[spec.facts] if f != asked]
        drawn = MCQ_OPTIONS - (asked is not None)
        choices = [pool[i] for i in rng.choice(len(pool), size=drawn, replace=False)]
        if asked is not None:
            choices.insert(int(rng.integers(MCQ_OPTIONS)), asked)
        answer = choices.index(asked) if asked else None
        letter = OPTION_LETTERS[int(rng.integers(MCQ_OPTIONS)) if answer is None else answer]
        conversation = _conversation(question_prompt(question, choices), frames)
        out.append(CropQuestion(conversation, letter, grid, k, answer))
    return out


def _conversation(text: str, frames: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": [{"type": "text", "text": SYSTEM_PROMPT}]},
        {"role": "user", "content": [{"type": "text", "text": text}, frames]},
    ]


def bank_of(videos: Sequence[SynthVideo], seed: int, empty: int = 6) -> FrameBank:
    """A :class:`FrameBank` of ``videos`` (seeded)."""
    rng = np.random.default_rng(seed)
    bank = FrameBank()
    for video in videos:
        bank.add_video(video, rng, empty)
    return bank
