"""``python -m experiments.pixel_models perception | vlm``: the pixel world's own models."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from experiments.pixel_models.vlm_train import VLMRecipe


def _perception(args: argparse.Namespace) -> int:
    from experiments.pixel_models.pipeline import train_perception
    from experiments.pixel_models.train import Recipe
    from video_env.pixel import WEIGHTS_DIR

    out = Path(args.out) if args.out else WEIGHTS_DIR
    if not args.evaluate_only:
        recipe = Recipe(
            seed=args.seed,
            train_videos=args.train_videos,
            steps=args.steps,
            batch_size=args.batch_size,
            lr=args.lr,
            threads=args.threads,
        )
        train_perception(recipe, out, lambda line: print(line, flush=True))
    from experiments.pixel_models.evaluate import calibrate_and_evaluate

    calibrate_and_evaluate(
        out, args.calib_videos, args.test_videos, lambda line: print(line, flush=True)
    )
    return 0


def add_perception_command(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``perception``: train, calibrate and evaluate the pixel-real CLIP."""
    from experiments.pixel_models.train import Recipe

    default = Recipe()
    p = kinds.add_parser(
        "perception",
        help="train the tiny CLIP on rendered synthetic frames, calibrate it, print a "
        "held-out evaluation table",
    )
    p.add_argument("--out", help="weights folder (default: the one shipped in the package)")
    p.add_argument("--seed", type=int, default=default.seed)
    p.add_argument("--train-videos", type=int, default=default.train_videos)
    p.add_argument("--steps", type=int, default=default.steps)
    p.add_argument("--batch-size", type=int, default=default.batch_size)
    p.add_argument("--lr", type=float, default=default.lr)
    p.add_argument("--threads", type=int, default=default.threads)
    p.add_argument("--calib-videos", type=int, default=12, help="videos of the calibration split")
    p.add_argument("--test-videos", type=int, default=24, help="videos of the test split")
    p.add_argument(
        "--evaluate-only", action="store_true", help="calibrate and evaluate the weights in --out"
    )
    p.set_defaults(func=_perception)


def vlm_recipe(args: argparse.Namespace) -> VLMRecipe:
    """The pixel VLM's recipe from ``python -m experiments.pixel_models vlm``'s arguments."""
    from experiments.pixel_models.vlm_train import VLMRecipe

    return VLMRecipe(
        seed=args.seed,
        train_videos=args.train_videos,
        vision_steps=args.vision_steps,
        language_steps=args.language_steps,
        threads=args.threads,
        binding=args.binding,
        binding_open=args.binding_open,
        rehearsal_crops=args.rehearsal_crops,
        open_crops=args.open_crops,
        caption_word=args.caption_word,
        soft_guesses=args.soft_guesses,
        align_carriers=args.align_carriers,
    )


def _vlm(args: argparse.Namespace) -> int:
    from experiments.pixel_models.vlm_pipeline import train_pixel_vlm
    from video_env.pixel import PIXEL_VLM_DIR

    out = Path(args.out) if args.out else PIXEL_VLM_DIR
    recipe = vlm_recipe(args)
    start_from = Path(args.start_from) if args.start_from else None
    train_pixel_vlm(recipe, out, lambda line: print(line, flush=True), start_from)
    print(
        "measure it on the held-out test videos: python -m experiments.pixel_models.pixel_vlm_eval"
        + (f" --model {out}" if args.out else "")
    )
    return 0


def add_vlm_command(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vlm``: train the pixel VLM (a tiny Qwen2.5-VL)."""
    from experiments.pixel_models.vlm_data import CAPTION_WORDS
    from experiments.pixel_models.vlm_train import VLMRecipe

    default = VLMRecipe()
    p = kinds.add_parser(
        "vlm",
        help="train the pixel VLM (a tiny generative Qwen2.5-VL) on rendered synthetic "
        "frames and save it as a transformers checkpoint",
    )
    p.add_argument("--out", help="checkpoint folder (default: the one shipped in the package)")
    p.add_argument("--seed", type=int, default=default.seed)
    p.add_argument("--train-videos", type=int, default=default.train_videos)
    p.add_argument("--vision-steps", type=int, default=default.vision_steps)
    p.add_argument("--language-steps", type=int, default=default.language_steps)
    p.add_argument("--threads", type=int, default=default.threads)
    p.add_argument(
        "--binding",
        type=float,
        default=default.binding,
        help="weight of the binding targets in stage 2 (0: the reply loss alone)",
    )
    p.add_argument(
        "--binding-open",
        type=float,
        default=default.binding_open,
        help="share of the binding phase's crop questions asked open (the rest MCQs)",
    )
    p.add_argument(
        "--rehearsal-crops",
        type=int,
        default=default.rehearsal_crops,
        help="crop questions added to every step of the windows' turns",
    )
    p.add_argument(
        "--open-crops",
        type=float,
        default=default.open_crops,
        help="share of the rehearsal crop questions asked open",
    )
    p.add_argument(
        "--caption-word",
        choices=CAPTION_WORDS,
        default=default.caption_word,
        help="the word of a caption's needle phrase its binding target reads: the phrase's "
        "second word or the carrier's head noun",
    )
    p.add_argument(
        "--soft-guesses",
        action=argparse.BooleanOptionalAction,
        default=default.soft_guesses,
        help="teach an MCQ asked without its evidence the uniform distribution over the "
        "letters (--no-soft-guesses: one random letter per turn)",
    )
    p.add_argument(
        "--align-carriers",
        action=argparse.BooleanOptionalAction,
        default=default.align_carriers,
        help="start the carriers' head nouns at the carrier head's weights, as the facts' words",
    )
    p.add_argument(
        "--from",
        dest="start_from",
        help="a pixel VLM folder whose model continues stage 2 (language) only",
    )
    p.set_defaults(func=_vlm)
