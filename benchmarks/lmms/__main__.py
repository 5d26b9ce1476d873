"""``python -m benchmarks.lmms``: print the task folder, for ``--include_path``."""

from benchmarks.lmms import TASKS_DIR

print(TASKS_DIR)
