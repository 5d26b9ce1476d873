"""The offline world: SIMULATED needle-in-a-haystack videos rendered on demand.

Videos are sequences of scenes with short "needle" events carrying one fact each, in the
four FALCON-Bench categories (text, visual, time, object). Suites of questions about them
load as :class:`~video_env.types.VideoQA` samples::

    from video_env.synth import load_suite
    samples = load_suite("synth-quick")
"""

from video_env.synth.annotated import AnnotatedVideo
from video_env.synth.elements import Needle, Scene
from video_env.synth.export import export_videos
from video_env.synth.generate import generate_video
from video_env.synth.questions import FORMS, Form, needle_sample, video_samples
from video_env.synth.standin import standin_video
from video_env.synth.suites import (
    SUITES,
    SuiteSpec,
    get_suite,
    list_suites,
    load_suite,
    suite_videos,
)
from video_env.synth.vocab import CATEGORIES, Category
from video_env.synth.world import NATIVE_SIZE, SYNTH_FPS, SynthVideo

__all__ = [
    "CATEGORIES",
    "FORMS",
    "NATIVE_SIZE",
    "SUITES",
    "SYNTH_FPS",
    "AnnotatedVideo",
    "Category",
    "Form",
    "Needle",
    "Scene",
    "SuiteSpec",
    "SynthVideo",
    "export_videos",
    "generate_video",
    "get_suite",
    "list_suites",
    "load_suite",
    "needle_sample",
    "standin_video",
    "suite_videos",
    "video_samples",
]
