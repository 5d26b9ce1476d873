"""``python -m video_env.cli``."""

from video_env.cli import main

raise SystemExit(main())
