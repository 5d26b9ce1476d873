"""An lmms-eval request (context, visuals, doc) as a :class:`~video_env.types.VideoQA`.

A video task's request carries the prompt text (question, options as ``A. ...`` lines, the
task's pre/post prompt) and the doc's visuals (the video's path). The options are read back
from the text (or from a doc field when the model is told one), the rest of the text is the
question. Ground truth is read only from the fields the model is told (``gt_field``,
``answer_field``): it goes into the sample for the env (simulated perception and GToU),
never to the policy, which sees observations only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from video_env.errors import ConfigError
from video_env.types import OPTION_LETTERS, Interval, SampleError, VideoQA

__all__ = ["parse_options", "request_sample", "video_path"]

# greedy to the line's end (stripped after): a lazy match backtracks quadratically on long
# runs of spaces inside an option
_OPTION_LINE = re.compile(r"^\s*\(?([A-Z])[.):]\s+(\S.*)$")
_OPTION_PREFIX = re.compile(r"^\s*\(?[A-Z][.):]\s+")


def parse_options(context: str) -> tuple[str, tuple[str, ...] | None]:
    """Split a prompt into its question text and its ``A. ...`` option lines.

    Options count only as a run of lines lettered ``A``, ``B``... in order (two at least);
    anything else stays in the question.

    Returns:
        ``(question, options)``; ``options`` is ``None`` for an open question.
    """
    lines = context.splitlines()
    start, options = -1, list[str]()
    for i, line in enumerate(lines):
        match = _OPTION_LINE.match(line)
        if match is None:
            if len(options) >= 2:
                break
            start, options = -1, []
            continue
        letter, text = match[1], match[2].rstrip()
        if letter == OPTION_LETTERS[len(options)]:
            start = i if not options else start
            options.append(text)
        elif len(options) >= 2:
            break
        else:
            start, options = (i, [text]) if letter == "A" else (-1, [])
    if len(options) < 2:
        return context.strip(), None
    rest = lines[:start] + lines[start + len(options) :]
    return "\n".join(rest).strip(), tuple(options)


def video_path(visuals: Sequence[Any] | None) -> str:
    """The first visual that is a video file on disk.

    Raises:
        ConfigError: If the request has no video file.
    """
    for visual in visuals or ():
        if isinstance(visual, (str, os.PathLike)) and os.path.isfile(visual):
            return os.fspath(visual)
    kinds = [type(v).__name__ for v in visuals or ()]
    raise ConfigError(f"the request has no video file among its visuals ({kinds or 'none'})")


def request_sample(
    sample_id: str,
    context: Any,
    visuals: Sequence[Any] | None,
    doc: dict[str, Any],
    *,
    options_field: str | None = None,
    gt_field: str | None = "gt_intervals",
    answer_field: str | None = None,
) -> VideoQA:
    """The sample a request asks about.

    Args:
        sample_id: The sample's id (task, split and doc id).
        context: The request's prompt text (anything else is refused).
        visuals: What the task's ``doc_to_visual`` gave (the video's path among them).
        doc: The task's doc.
        options_field: A doc field holding the options (texts, ``A. `` prefixes dropped);
            ``None``: read them from the prompt.
        gt_field: A doc field of evidence intervals ``[[start, end], ...]`` in seconds.
        answer_field: A doc field of the answer (an option letter for an MCQ).

    Raises:
        ConfigError: Without a video file, or a context that is not text.
        SampleError: If the doc's fields do not make a valid sample.
    """
    path = video_path(visuals)
    if not isinstance(context, str):  # a task's doc_to_text gave None, a list...
        raise ConfigError(f"the request's context is not text ({type(context).__name__})")
    question, options = parse_options(context)
    if options_field is not None and doc.get(options_field):
        listed = doc[options_field]
        if not isinstance(listed, (list, tuple)):  # a dict's keys, a text's characters
            kind = type(listed).__name__
            raise SampleError(f"the doc's {options_field!r} must be a list of options, not {kind}")
        options = tuple(_OPTION_PREFIX.sub("", str(o)) for o in listed)
        question = context.strip()
    intervals: tuple[Interval, ...] = ()
    if gt_field is not None and doc.get(gt_field):
        intervals = tuple(Interval(float(s), float(e)) for s, e in doc[gt_field])
    answer = None
    if answer_field is not None and doc.get(answer_field) is not None:
        answer = str(doc[answer_field]).strip()
    return VideoQA(
        id=sample_id,
        video=path,
        question=question or context,
        answer=answer,
        options=options,
        gt_intervals=intervals,
        source="lmms-eval",
    )
