#!/usr/bin/env bash
# VideoScout's DAPO on the Pacing env with verl 0.9.1, on one node of 8 GPUs (docs/verl.md).
# In a venv with video-env's verl extra and verl's vLLM engine:
#   pip install -e ".[verl]" "verl[vllm]==0.9.1"
# then, from anywhere:  bash examples/verl/run.sh [verl overrides, e.g. trainer.n_gpus_per_node=4]
# The training questions: LVBench at the paths docs/training.md uses (DATASET, ANNOTATIONS and
# VIDEO_ROOT override them); validation: 16 questions of the synthetic suite synth-quick.
set -euo pipefail
cd "$(dirname "$0")/../.."
DATASET="${DATASET:-lvbench}"
ANNOTATIONS="${ANNOTATIONS:-/data/lvbench/video_info.meta.jsonl}"
VIDEO_ROOT="${VIDEO_ROOT:-/data/lvbench/videos}"
video-env data export --format verl runs/verl/train.parquet \
    --dataset "$DATASET" --annotations "$ANNOTATIONS" --video-root "$VIDEO_ROOT"
video-env data export --format verl runs/verl/val.parquet --suite synth-quick --limit 16
# absolute paths: Ray's workers may not start in this folder
python -m verl.trainer.main_ppo --config-path "$PWD/examples/verl" \
    --config-name videoscout_dapo \
    data.train_files="$PWD/runs/verl/train.parquet" data.val_files="$PWD/runs/verl/val.parquet" \
    actor_rollout_ref.rollout.agent.agent_loop_config_path="$PWD/examples/verl/agent_loop.yaml" \
    "$@"
