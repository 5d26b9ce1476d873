"""Calibration and held-out evaluation of the pixel-real models.

Two held-out splits of generated videos (300 s, 8 needles each), disjoint from training
and from every suite: ``calib`` (12 videos by default) fits the VLM's prior weight,
"not in view" margin and softmax temperature (minimum negative log-likelihood over MCQs
of the test's four evidence conditions; :func:`fit_calibration`); ``test`` (24 videos)
gives the table:

- **retrieval** recall@1 per category: among the 300 frames of the video at 1 fps (the
  OpenCLIP backend's own path, as ClipQuery uses it), is the best frame for the query
  inside the needle? Queries: the question (question-derived, not answer-bearing), the
  carrier ("the kite"), and the fact statement ("a red kite", answer-bearing, a reference);
- **MCQ** accuracy per category from 4 frames inside the needle at 1280×720 and at
  448×252, from 4 frames of a needle-free window and from another needle's window
  (chance: 0.25; :data:`NO_EVIDENCE_DRAWS` windows per needle, since a forced guess
  needs many MCQs to be measured), each with its MCQ count and a 95 % interval by a
  bootstrap over videos;
- **open** accuracy (naming the fact from the category's pool) with 720p evidence;
- **single view** MCQ accuracy: the same options scored on one image only — a crop
  centred on the needle, or the 3-row grid tile of a 720p frame that holds it — what the
  model reads when no background tile competes; and on the same images whether the
  carrier's name is the best of all carriers' names;
- **calibration** of the MCQ confidence on test: ACE (10 bins) and the reliability bins.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from experiments.pixel_models.calibration import (
    NO_EVIDENCE,
    answer_logits,
    fit_calibration,
    option_scores,
)
from experiments.pixel_models.data import crop_box, needle_kind
from video_env._seeding import stable_seed
from video_env.backends.base import FrameBatch
from video_env.metrics.bootstrap import cluster_bootstrap_ci
from video_env.metrics.calibration import ace, reliability_bins
from video_env.pixel.splits import split_videos
from video_env.pixel.tiles import cut_tile, tile_boxes
from video_env.pixel.vlm import (
    SCENE_DESCRIPTIONS,
    PixelScorer,
    carrier_for,
    softmax,
    spread_null,
)
from video_env.synth.elements import Needle
from video_env.synth.questions import needle_sample
from video_env.synth.vocab import CARRIERS, FACT_POOLS, Carrier
from video_env.synth.world import SynthVideo
from video_env.types import OPTION_LETTERS, Interval, VideoQA
from video_env.video.base import Size
from video_env.video.resize import Resize

#: Evidence conditions of the MCQ evaluation: name -> frame size (``None``: a needle-free
#: window at 720p; ``"other"``: another needle's window at 720p, not the asked one).
CONDITIONS: dict[str, Size | None] = {
    "720p": Size(1280, 720),
    "448p": Size(448, 252),
    "none": None,
    "other": Size(1280, 720),
}
#: Conditions whose accuracies the table shows with their interval.
INTERVAL_CONDITIONS = ("720p", "none", "other")
#: Frames per MCQ.
N_FRAMES = 4
#: Test windows per needle of each no-evidence condition (one in calibration).
NO_EVIDENCE_DRAWS = 4


def condition_window(video: SynthVideo, needle: Needle, condition: str, draw: int = 0) -> Interval:
    """The window a condition looks at: the needle's, another needle's, or a needle-free one.

    A needle's window is the middle 80 % of its interval; ``"other"`` is the middle of the
    ``draw``-th next needle of the video whose interval does not overlap the asked one's.
    The needle-free window is drawn per needle (seeded by the video and the needle), so
    that the no-evidence MCQs of one video do not all look at the same frames; each later
    ``draw`` takes another of the video's needle-free windows (distinct while there are
    enough).
    """
    if condition == "other":
        k = video.needles.index(needle)
        others = [
            n
            for n in [*video.needles[k + 1 :], *video.needles[:k]]
            if not (n.start < needle.end and needle.start < n.end)
        ]
        needle = others[draw % len(others)] if others else needle
    if condition != "none":
        iv = needle.intervals[0]
        return Interval(iv.start + 0.1 * iv.length, iv.end - 0.1 * iv.length)
    starts = [
        float(start)
        for start in np.arange(0.0, video.duration - 10.0, 10.0)
        if not any(n.start < start + 10.0 and start < n.end for n in video.needles)
    ]
    if not starts:
        return Interval(0.0, 1.0)
    # draw 0 keeps the window it had before draws existed (the calibration's stay put);
    # later draws take the other needle-free windows in a seeded order, none twice
    first = int(
        np.random.default_rng(
            stable_seed("pixel-real", "no-evidence", video.id, needle.id)
        ).integers(len(starts))
    )
    if draw:
        rest = [i for i in range(len(starts)) if i != first] or [first]
        order = np.random.default_rng(
            stable_seed("pixel-real", "no-evidence", video.id, needle.id, "draws")
        ).permutation(rest)
        first = int(order[(draw - 1) % len(order)])
    start = starts[first]
    return Interval(start, start + 10.0)


def mcq_scores(
    scorer: PixelScorer,
    videos: list[SynthVideo],
    conditions: dict[str, Size | None],
    draws: int = 1,
) -> list[dict[str, object]]:
    """Per needle and condition: option and fact-pool tile statistics, truths, category.

    ``best``/``mean`` (options) and ``pool_best``/``pool_mean`` (the carrier's fact pool)
    are :meth:`PixelScorer.tile_statistics`; ``scene_best`` is the best scene
    description's similarity on any tile (scaled); ``options`` are the MCQ's facts;
    ``truth`` and ``pool_truth`` index the fact; ``video`` and ``draw`` say where the row
    comes from. Conditions without the
    evidence (:data:`NO_EVIDENCE`) give ``draws`` rows per needle, each from another
    window: their accuracy is a forced guess, whose estimate needs more MCQs than a
    needle has.
    """
    rows: list[dict[str, object]] = []
    for video in videos:
        for needle in video.needles:
            sample = needle_sample(video, needle, "mcq")
            carrier = carrier_for(sample.question)
            if carrier is None:
                continue
            for name, size in conditions.items():
                for draw in range(draws if name in NO_EVIDENCE else 1):
                    window = condition_window(video, needle, name, draw)
                    frames = FrameBatch.sample(video, window, N_FRAMES, size or Size(1280, 720))
                    row = _statistics(scorer, scorer.tile_features(frames), carrier, sample)
                    row.update(
                        category=needle_kind(needle),
                        condition=name,
                        video=video.id,
                        draw=draw,
                        pool_truth=FACT_POOLS[carrier.facts].index(needle.fact),
                    )
                    rows.append(row)
        video.close()
    return rows


def _statistics(
    scorer: PixelScorer, features: npt.NDArray[np.float32], carrier: Carrier, sample: VideoQA
) -> dict[str, object]:
    """One MCQ's tile statistics: options, the carrier's fact pool, the best scene."""
    best, mean = scorer.tile_statistics(
        features, [carrier.template.format(fact=o) for o in sample.options or ()]
    )
    pool_best, pool_mean = scorer.tile_statistics(
        features, [carrier.template.format(fact=f) for f in FACT_POOLS[carrier.facts]]
    )
    return {
        "best": best,
        "mean": mean,
        "truth": OPTION_LETTERS.index(str(sample.answer)),
        "options": list(sample.options or ()),
        "pool_best": pool_best,
        "pool_mean": pool_mean,
        "scene_best": float(scorer.tile_statistics(features, SCENE_DESCRIPTIONS)[0].max()),
    }


def single_view(scorer: PixelScorer, videos: list[SynthVideo]) -> dict[str, dict[str, float]]:
    """Per category, from one crop centred on the needle and from its 3-row tile.

    Keys ``crop`` and ``tile``: MCQ accuracy; ``crop_carrier`` and ``tile_carrier``: whether
    the carrier's name ("the kite") is the best of all carriers' names (what a
    question-derived retrieval query needs the model to know).
    """
    rng = np.random.default_rng(0)
    native = Size(1280, 720)
    names = [c.name for c in CARRIERS]
    name_features = scorer.clip.text_features(names)
    hits: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for video in videos:
        for needle in video.needles:
            sample = needle_sample(video, needle, "mcq")
            carrier = carrier_for(sample.question)
            if carrier is None:
                continue
            t = needle.intervals[0].start + needle.intervals[0].length / 2
            frame = video.frames([t], size=Resize.exact(native.width, native.height))[0]
            cx, cy = needle.position[0] * native.width, needle.position[1] * native.height
            tile = next(b for b in tile_boxes(native, 3) if b[0] <= cx < b[2] and b[1] <= cy < b[3])
            views = {
                "crop": cut_tile(frame, crop_box(needle, native, rng)),
                "tile": cut_tile(frame, tile),
            }
            features = scorer.clip.encode_images(np.stack(list(views.values())))
            options = [carrier.template.format(fact=o) for o in sample.options or ()]
            truth = OPTION_LETTERS.index(str(sample.answer))
            for view, feature in zip(views, features, strict=True):
                best = int(np.argmax(scorer.tile_statistics(feature[None], options)[0]))
                hits[view][needle_kind(needle)].append(best == truth)
                named = names[int(np.argmax(name_features @ feature))]
                hits[f"{view}_carrier"][needle_kind(needle)].append(named == needle.carrier)
        video.close()
    return {k: {c: float(np.mean(v)) for c, v in sorted(by.items())} for k, by in hits.items()}


def needle_counts(videos: list[SynthVideo]) -> dict[str, int]:
    """Needles per category (colour and material apart) of ``videos``: each cell's sample size."""
    counts: dict[str, int] = defaultdict(int)
    for video in videos:
        for needle in video.needles:
            counts[needle_kind(needle)] += 1
    return dict(sorted(counts.items()))


def retrieval(scorer: PixelScorer, videos: list[SynthVideo]) -> dict[str, dict[str, float]]:
    """Recall@1 per query kind and category over 1 fps frames of each video."""
    hits: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for video in videos:
        times = np.arange(0.5, video.duration, 1.0)
        frames = scorer.clip.image_features(video, times.tolist())
        for needle in video.needles:
            queries = {
                "question": needle.question,
                "carrier": needle.carrier,
                "statement": needle.statement,
            }
            features = scorer.clip.text_features(list(queries.values()))
            for (kind, _), feature in zip(queries.items(), features, strict=True):
                best = float(times[int(np.argmax(frames @ feature))])
                hits[kind][needle_kind(needle)].append(needle.visible(best))
        video.close()
    return {k: {c: float(np.mean(v)) for c, v in sorted(by.items())} for k, by in hits.items()}


def _table(
    rows: list[dict[str, object]],
    temperature: float,
    prior_weight: float,
    null_margin: float,
    scale: float,
) -> dict[str, object]:
    """MCQ accuracy per condition and category, open accuracy, calibration.

    Each accuracy comes with its MCQ count and a 95 % interval by a bootstrap over
    videos. The confidence's calibration (ACE, reliability bins) is measured on each
    needle's first draw per condition: the mix the calibration was fitted on.
    """
    acc: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    videos: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    opened: dict[str, list[bool]] = defaultdict(list)
    confidences, correct = [], []
    for r in rows:
        p = spread_null(softmax(answer_logits(r, prior_weight, null_margin, scale) / temperature))
        pick = int(np.argmax(p))
        ok = pick == r["truth"]
        acc[str(r["condition"])][str(r["category"])].append(ok)
        videos[str(r["condition"])][str(r["category"])].append(str(r["video"]))
        if r["draw"] == 0:
            confidences.append(float(p[pick]))
            correct.append(ok)
        if r["condition"] == "720p":
            named = int(np.argmax(option_scores(r, prior_weight, pool=True)))
            opened[str(r["category"])].append(named == r["pool_truth"])
    bins = reliability_bins(confidences, correct, 10)
    return {
        "most_guessed": most_guessed(rows, prior_weight),
        "mcq": {c: {k: float(np.mean(v)) for k, v in sorted(by.items())} for c, by in acc.items()},
        "mcq_interval": {
            c: {
                k: [round(x, 4) for x in cluster_bootstrap_ci(v, videos[c][k])]
                for k, v in sorted(by.items())
            }
            for c, by in acc.items()
        },
        "mcq_count": {c: {k: len(v) for k, v in sorted(by.items())} for c, by in acc.items()},
        "open_720p": {k: float(np.mean(v)) for k, v in sorted(opened.items())},
        "ace": ace(confidences, correct, 10),
        "reliability": [[b.mean_conf, b.accuracy, b.count] for b in bins if b.count],
        "n_mcq": len(confidences),
    }


def most_guessed(
    rows: list[dict[str, object]], prior_weight: float
) -> dict[str, dict[str, list[object]]]:
    """Per no-evidence condition and category: the fact picked most often without evidence.

    ``[fact, share of the guesses, share of the MCQs offering it whose truth it is]``.
    Facts and distractors are drawn alike from the carrier's pool and the options are
    shuffled, so a guess from frames without the needle is right one time in four in
    expectation; where the guesses crowd on one fact (an option prior the calibration
    leaves), the accuracy measured follows how often that fact is the truth among the test
    needles (one in four in expectation, less or more in a sample).
    """
    picks: dict[tuple[str, str], list[str]] = defaultdict(list)
    offered: dict[tuple[str, str], dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["condition"] not in NO_EVIDENCE:
            continue
        key = (str(r["condition"]), str(r["category"]))
        options: list[str] = r["options"]  # type: ignore[assignment]
        picks[key].append(options[int(np.argmax(option_scores(r, prior_weight)))])
        for k, fact in enumerate(options):
            offered[key][fact].append(k == r["truth"])
    table: dict[str, dict[str, list[object]]] = defaultdict(dict)
    for (condition, category), guesses in sorted(picks.items()):
        fact, count = Counter(guesses).most_common(1)[0]
        truth_share = float(np.mean(offered[condition, category][fact]))
        table[condition][category] = [fact, round(count / len(guesses), 4), round(truth_share, 4)]
    return dict(table)


def calibrate_and_evaluate(
    out: Path, calib_videos: int, test_videos: int, progress: Callable[[str], None] = print
) -> dict[str, object]:
    """Fit the prior weight, null margin and temperature on ``calib``; evaluate on ``test``."""
    from experiments.pixel_models.pipeline import update_meta

    scorer = PixelScorer(out, temperature=1.0, prior_weight=0.0, cache=None)
    calib = mcq_scores(scorer, split_videos("calib", calib_videos), CONDITIONS)
    prior_weight, null_margin, temperature = fit_calibration(calib, scorer.scale)
    progress(
        f"prior weight {prior_weight:.2f}, null margin {null_margin:.2f}, temperature "
        f"{temperature:.3f} (fitted on {len(calib)} calibration MCQs)"
    )
    test = split_videos("test", test_videos)
    rows = mcq_scores(scorer, test, CONDITIONS, NO_EVIDENCE_DRAWS)
    table = _table(rows, temperature, prior_weight, null_margin, scorer.scale)
    table["retrieval_recall_at_1"] = retrieval(scorer, split_videos("test", test_videos))
    table["single_view_mcq"] = single_view(scorer, split_videos("test", test_videos))
    table["calib_videos"] = calib_videos
    table["test_videos"] = test_videos
    table["no_evidence_draws"] = NO_EVIDENCE_DRAWS
    table["test_needles"] = needle_counts(test)
    update_meta(
        out,
        temperature=round(temperature, 4),
        prior_weight=prior_weight,
        null_margin=null_margin,
        evaluation=table,
    )
    for line in format_table(table):
        progress(line)
    return table


def format_table(table: dict[str, object]) -> list[str]:
    """The evaluation as printable lines."""
    lines = ["held-out evaluation (test split)"]
    retrieval_rows: dict[str, dict[str, float]] = table["retrieval_recall_at_1"]  # type: ignore[assignment]
    for kind, by in retrieval_rows.items():
        lines.append(f"  retrieval R@1, query={kind:9s} " + _cells(by))
    mcq: dict[str, dict[str, float]] = table["mcq"]  # type: ignore[assignment]
    intervals: dict[str, dict[str, list[float]]] = table.get("mcq_interval", {})  # type: ignore[assignment]
    for condition, by in mcq.items():
        lines.append(f"  MCQ accuracy, evidence={condition:5s}   " + _cells(by))
        if condition in INTERVAL_CONDITIONS and condition in intervals:
            lines.append(
                "    95 % interval over videos   "
                + "  ".join(
                    f"{k} {lo:.2f}-{hi:.2f}" for k, (lo, hi) in intervals[condition].items()
                )
            )
    lines.append("  open accuracy, evidence=720p   " + _cells(table["open_720p"]))  # type: ignore[arg-type]
    views: dict[str, dict[str, float]] = table.get("single_view_mcq", {})  # type: ignore[assignment]
    for view, by in views.items():
        kind = "carrier named" if view.endswith("_carrier") else "MCQ accuracy"
        lines.append(f"  {kind}, one {view.split('_')[0]:4s} view  " + _cells(by))
    guessed: dict[str, dict[str, list[object]]] = table.get("most_guessed", {})  # type: ignore[assignment]
    for condition, facts in guessed.items():
        lines.append(
            f"  most guessed fact, evidence={condition:5s} "
            + "  ".join(
                f"{k} {f} ({float(g):.2f} of guesses, truth {float(t):.2f})"  # type: ignore[arg-type]
                for k, (f, g, t) in facts.items()
            )
        )
    lines.append(f"  MCQ confidence ACE (10 bins): {table['ace']:.3f}")
    lines.append(
        "  reliability (conf, acc, n): "
        + ", ".join(
            f"({c:.2f}, {a:.2f}, {n})"
            for c, a, n in table["reliability"]  # type: ignore[attr-defined]
        )
    )
    return lines


def _cells(by: dict[str, float]) -> str:
    return "  ".join(f"{k} {v:.2f}" for k, v in by.items())
