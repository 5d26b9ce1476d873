r"""``python -m benchmarks.lmms.offline -- COMMAND``: run lmms-eval against a local fake model.

Starts the fake OpenAI-compatible server the tests use
(:class:`~video_env.backends.llm.testing.FakeOpenAIServer`, on ``127.0.0.1``) with
scripted replies, runs ``COMMAND`` with every OpenAI-compatible client pointed at it
(lmms-eval's ``openai`` model through ``$OPENAI_API_BASE``, video-env's VLM and LLM
through ``$VIDEO_ENV_VLM_BASE_URL`` and ``$VIDEO_ENV_LLM_BASE_URL``) and the Hugging Face
hub and wandb offline, then stops the server and exits with the command's status. No
network, no API key, no GPU: a way to see the tasks and the model run before spending
on a real one.

Example::

    python -m benchmarks.lmms.offline --reply 'answer("A", [0, 60])' -- \
        python -m lmms_eval --model openai --model_args model=fake \
        --include_path "$(python -m benchmarks.lmms)" --tasks video_env_zoom_synth --limit 4
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence

from video_env import env_vars
from video_env.backends.llm.testing import FakeOpenAIServer, chat_reply

__all__ = ["main", "offline_environment"]

#: The reply when none is given: an answer in the envs' text actions (Zoom, ClipQuery).
DEFAULT_REPLY = 'answer("A", [0, 60])'


def offline_environment(base_url: str) -> dict[str, str]:
    """The variables that point the clients at ``base_url`` and keep everything offline."""
    return {
        "OPENAI_API_BASE": base_url,
        "OPENAI_API_KEY": env_vars.LLM_API_KEYS[-1].get() or "offline",
        "VIDEO_ENV_VLM_BASE_URL": base_url,
        "VIDEO_ENV_LLM_BASE_URL": base_url,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "WANDB_MODE": "disabled",
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command after ``--`` against the fake server; its exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.lmms.offline",
        description="Run a command (lmms-eval) against a local fake OpenAI-compatible model.",
    )
    parser.add_argument(
        "--reply",
        action="append",
        default=[],
        help="a reply of the fake model, in order (repeat the flag); the last one answers "
        f"every later request (default: {DEFAULT_REPLY!r})",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- and the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    replies = args.reply or [DEFAULT_REPLY]
    with FakeOpenAIServer(
        [chat_reply(r) for r in replies[:-1]], default=chat_reply(replies[-1])
    ) as fake:
        print(f"fake OpenAI-compatible model at {fake.base_url}", file=sys.stderr, flush=True)
        env = {**os.environ, **offline_environment(fake.base_url)}
        try:
            return subprocess.run(command, env=env, check=False).returncode
        except FileNotFoundError:
            print(f"no such command: {command[0]}", file=sys.stderr)
            return 127


if __name__ == "__main__":
    raise SystemExit(main())
