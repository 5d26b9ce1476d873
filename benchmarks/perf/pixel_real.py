"""Pixel-real perception speed: the cached tile features against the old per-call path.

Run: ``python -m benchmarks.perf.pixel_real [--questions 2] [--policies uniform falconeye]
[--weights DIR]``

The same Zoom episodes (the first ``--questions`` questions of ``synth-quick``, each with
every policy of ``--policies``; each episode captions the video's one-minute clips at
reset) run twice in this process, with pixel-real perception on ``--weights``:

- ``old``: the path before the tile-feature cache (:class:`LegacyScorer`): every answer
  and caption cuts its tiles with a numpy copy and a ``fromarray`` per tile
  (:func:`video_env.pixel.tiles.tiles`), preprocesses each tile with open_clip's Pillow
  transforms and encodes them on torch's default threads; nothing is kept between calls;
- ``new``: :class:`~video_env.pixel.vlm.PixelScorer` as shipped: tile features computed
  once per (frame, grid) (memory LRU + a fresh disk cache in a temporary folder), tiles
  cut by Pillow crops, batched normalisation, one torch thread;
- ``old-one-thread``: ``old`` on one torch thread, which separates what caching and
  cutting save from what the thread count saves on a shared machine.

It prints the CPU seconds of this process (all its threads) and the wall seconds of
both, the ratios old / new, the load average (the machine is shared), and checks that
both paths give the same records (answers, correctness, confidences, costs).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from video_env.backends.base import FrameBatch, normalize_rows
from video_env.cache.store import DiskCache
from video_env.pixel.tiles import tiles
from video_env.pixel.vlm import PixelRealCaptioner, PixelRealVLM, PixelScorer

#: The paths the script can time.
PATHS = ("old", "old-one-thread", "new")
#: Record fields that must agree between the two paths.
COMPARED = ("answer", "correct", "window", "vlm_calls", "caption_calls", "visual_tokens")


class LegacyScorer(PixelScorer):
    """The scorer as it was before the tile-feature cache (the baseline; see the module).

    Args:
        one_thread: Encode on one torch thread (default: torch's own thread count).
    """

    def __init__(self, *args: Any, one_thread: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.one_thread = one_thread

    def tile_features(
        self,
        frames: FrameBatch,
        grids: tuple[int, ...] | None = None,
        max_frames: int | None = None,
    ) -> npt.NDArray[np.float32]:
        """Tiles cut, preprocessed one by one and encoded at every call (no cache)."""
        import torch
        from PIL import Image

        chosen = self.looked_at(frames, max_frames or self.max_frames)
        images = tiles(chosen.pixels(), grids or self.grids)
        clip, out = self.clip, []
        threads = torch.get_num_threads()
        if self.one_thread:
            torch.set_num_threads(1)
        try:
            for start in range(0, len(images), clip.batch_size):
                chunk = images[start : start + clip.batch_size]
                batch = torch.stack([clip._preprocess(Image.fromarray(im)) for im in chunk])
                with torch.no_grad():
                    out.append(clip._net.encode_image(batch).float().numpy())
        finally:
            torch.set_num_threads(threads)
        return normalize_rows(np.concatenate(out))


def run_path(scorer: PixelScorer, questions: int, policies: Sequence[str]) -> dict[str, Any]:
    """Run the episodes with ``scorer``; CPU and wall seconds and the records."""
    import policies as registry
    from video_env.envs import ZoomEnv
    from video_env.synth import load_suite

    samples = load_suite("synth-quick", limit=questions)
    env = ZoomEnv(samples, vlm=PixelRealVLM(scorer), captioner=PixelRealCaptioner(scorer))
    records = []
    cpu, wall = time.process_time(), time.perf_counter()
    for name in policies:
        policy = registry.make(name)
        for i in range(len(samples)):
            records.append(registry.run_episode(env, policy, 0, options={"index": i}))
    return {
        "cpu_s": time.process_time() - cpu,
        "wall_s": time.perf_counter() - wall,
        "records": records,
    }


def make_scorer(path: str, weights: str | None, cache_folder: str) -> PixelScorer:
    """The scorer of one of :data:`PATHS` (``new`` caches in ``cache_folder``)."""
    if path == "new":
        return PixelScorer(weights, cache=DiskCache(cache_folder))
    return LegacyScorer(weights, cache=None, one_thread=path == "old-one-thread")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=2)
    parser.add_argument("--policies", nargs="+", default=["uniform", "falconeye"])
    parser.add_argument("--weights", help="pixel-real weights folder (default: the shipped)")
    parser.add_argument(
        "--paths", nargs="+", default=list(PATHS), choices=PATHS, help="paths to time"
    )
    args = parser.parse_args(argv)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in args.paths:
            scorer = make_scorer(name, args.weights, folder)
            results[name] = run_path(scorer, args.questions, args.policies)
    first = next(iter(results.values()))
    print(
        f"{len(first['records'])} Zoom episodes ({', '.join(args.policies)} on the first "
        f"{args.questions} questions of synth-quick), pixel-real perception; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    for name, result in results.items():
        print(f"  {name}: {result['cpu_s']:7.1f} CPU s  {result['wall_s']:7.1f} wall s")
    new = results.get("new")
    if new is None:
        return
    for name in (n for n in results if n != "new"):
        old = results[name]
        print(
            f"  {name} / new: {old['cpu_s'] / new['cpu_s']:.2f}x CPU, "
            f"{old['wall_s'] / new['wall_s']:.2f}x wall"
        )
        _compare(old, new)


def _compare(old: dict[str, Any], new: dict[str, Any]) -> None:
    differ = [
        (a["sample_id"], a["policy"], field)
        for a, b in zip(old["records"], new["records"], strict=True)
        for field in COMPARED
        if a.get(field) != b.get(field)
    ]
    readings = all(
        np.allclose([c for c, _ in _readings(a)], [c for c, _ in _readings(b)], atol=1e-6)
        for a, b in zip(old["records"], new["records"], strict=True)
    )
    same = "the same" if not differ and readings else f"DIFFERENT ({differ[:5]})"
    print(f"  records ({', '.join(COMPARED)}, VLM confidences): {same}")


def _readings(record: dict[str, Any]) -> list[tuple[float, Any]]:
    return [(float(c), ok) for c, ok in record.get("vlm_readings") or []]


if __name__ == "__main__":
    main()
