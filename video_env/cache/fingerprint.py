"""Video fingerprints: a short id that changes when the video's content may have changed.

* A decoded file: its absolute path, size in bytes and modification time (nanoseconds).
  Cheap (no hashing of gigabytes) and what build tools use; a file rewritten in place
  gets a new fingerprint, a renamed or copied one is computed again (a miss, never a
  wrong hit).
* A :class:`~video_env.synth.world.SynthVideo`: its identity — id, duration, frame rate,
  native size, seed, scenes and needles — and a digest of the renderer's source
  (:data:`RENDERER_MODULES`), since its frames are a function of those: features and
  captions cached before a change to the drawing are not reused after it.
* Any other reader: its ``name``, ``duration``, ``num_frames`` and ``size``; readers that
  know better may define a ``fingerprint`` attribute, which wins.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from typing import Any

from video_env.video.base import VideoReader

#: Modules whose code draws a synthetic video's pixels (their source is in its fingerprint).
RENDERER_MODULES = ("world.py", "elements.py", "render.py", "shapes.py", "vocab.py")


@functools.cache
def renderer_digest() -> str:
    """A digest of the synthetic renderer's source files (computed once per process)."""
    folder = os.path.join(os.path.dirname(os.path.dirname(__file__)), "synth")
    sources = []
    for name in RENDERER_MODULES:
        with open(os.path.join(folder, name), "rb") as handle:
            sources.append(hashlib.blake2b(handle.read(), digest_size=12).hexdigest())
    return _digest(sources)


def _digest(parts: Any) -> str:
    text = json.dumps(parts, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def video_fingerprint(video: VideoReader) -> str:
    """A fingerprint of ``video`` (see the module docstring)."""
    own = getattr(video, "fingerprint", None)
    if isinstance(own, str):
        return own
    from video_env.synth.world import SynthVideo

    if isinstance(video, SynthVideo):
        return "synth:" + _digest(
            [
                video.id,
                video.duration,
                video.fps,
                list(video.native_size),
                video.seed,
                [repr(s) for s in video.scenes],
                [repr(n) for n in video.needles],
                renderer_digest(),
            ]
        )
    name = video.name
    if os.path.isfile(name):
        stat = os.stat(name)
        return "file:" + _digest([os.path.abspath(name), stat.st_size, stat.st_mtime_ns])
    return "reader:" + _digest([name, video.duration, video.num_frames, list(video.size)])
