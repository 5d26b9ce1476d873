"""``python -m experiments.videoscout_pixel distill | sft``: the recipe with the lab's additions.

The library's ``video-env train distill`` and ``train sft`` with every flag they take, plus
this laboratory's: the frame teacher (``--teacher scripted-frames[:STYLE]``,
``--guess-share``, ``--steady-speed``) and the SFT additions of
:class:`~experiments.videoscout_pixel.sft_extension.PixelTurnExtension`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from experiments._cli import run_command
from policies.training.cli import (
    add_recipe_commands,
    pacing_rules,
    run_distill,
    run_sft,
    samples_from_args,
)
from video_env.errors import ConfigError

#: The laboratory's teacher that reads its frames (``--teacher scripted-frames[:STYLE]``).
FRAME_TEACHER = "scripted-frames"


def _frame_teacher(args: argparse.Namespace) -> Any:
    """The frame teacher ``--teacher`` names (``None``: another, the library resolves it)."""
    spec: str = args.teacher
    if not (spec == FRAME_TEACHER or spec.startswith(f"{FRAME_TEACHER}:")):
        if args.guess_share or args.steady_speed:
            raise ConfigError(
                f"--guess-share and --steady-speed are settings of the {FRAME_TEACHER} teacher only"
            )
        return None
    from experiments.videoscout_pixel.frame_teacher import FrameScriptedTeacher

    pacing = f"a steady {args.steady_speed}x" if args.steady_speed else "privileged"
    print(
        f"teacher: a SCRIPTED teacher for synthetic videos: {pacing} pacing, and "
        "reasoning and notes about what each turn's frames show (not a model)"
    )
    return FrameScriptedTeacher(
        pacing_rules(args),
        style=spec.partition(":")[2] or "timestamps",  # type: ignore[arg-type]
        guess_share=args.guess_share,
        steady_speed=args.steady_speed,
    )


def _distill(args: argparse.Namespace) -> int:
    options = max((len(s.options or ()) for s in samples_from_args(args)), default=0)
    if (args.guess_share or args.steady_speed) and args.tries < options:
        raise ConfigError(
            f"--guess-share and --steady-speed need --tries >= {options} (the options of a "
            "question): a guessed answer is option k on try k, and answer verification keeps "
            "the right one"
        )
    return run_distill(args, _frame_teacher(args))


def _sft(args: argparse.Namespace) -> int:
    from experiments.videoscout_pixel.sft_extension import PixelTurnExtension

    extension = PixelTurnExtension(
        option_orders=args.option_orders,
        open_answer_repeats=args.open_answer_repeats,
        recovery_turns=args.recovery_turns,
        recovery_failures=tuple(f.strip() for f in args.recovery_failures.split(",") if f),
        binding=args.binding,
        binding_open=args.binding_open,
        binding_letters=not args.binding_attention_only,
    )
    return run_sft(args, None if extension == PixelTurnExtension() else extension)


def build_parser() -> argparse.ArgumentParser:
    """The laboratory's ``distill`` and ``sft``: the library's flags plus its own."""
    parser = argparse.ArgumentParser(
        prog="python -m experiments.videoscout_pixel", description=__doc__.split("\n")[0]
    )
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    distill, sft = add_recipe_commands(kinds)
    distill.add_argument("--guess-share", type=float, default=0.0,
                         help=f"share of MCQs the {FRAME_TEACHER}:scenes|:lead teacher plays "
                         "blind: skims at a steady speed and guesses at the end (option k "
                         "on try k; answer verification keeps the right one)")  # fmt: skip
    distill.add_argument("--steady-speed", type=int, default=0, metavar="S",
                         help=f"the {FRAME_TEACHER} teacher watches on at S x every turn "
                         "until a frame shows the asked needle (0: privileged pacing)")  # fmt: skip
    distill.set_defaults(func=_distill)
    sft.add_argument("--option-orders", type=int, default=1, metavar="N",
                     help="each MCQ answer turn in N orders of its options")  # fmt: skip
    sft.add_argument("--open-answer-repeats", type=int, default=1, metavar="N",
                     help="each open answer turn shown N times (1: once)")  # fmt: skip
    sft.add_argument("--recovery-turns", type=float, default=0.0, metavar="SHARE",
                     help="this share of the turns also shown as after a failed reply")  # fmt: skip
    sft.add_argument("--recovery-failures", default="cut,window,speed", metavar="LIST",
                     help="the failures recovery turns follow: cut, window, speed")  # fmt: skip
    sft.add_argument("--binding", type=float, default=0.0, metavar="W",
                     help="weight of binding targets on sighted MCQ answers")  # fmt: skip
    sft.add_argument("--binding-open", action="store_true",
                     help="bind sighted open answer turns too")  # fmt: skip
    sft.add_argument("--binding-attention-only", action="store_true",
                     help="the binding targets' attention alone, without the letters")  # fmt: skip
    sft.set_defaults(func=_sft)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit code."""
    return run_command(build_parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
