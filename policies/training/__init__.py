"""Training policies: the VideoScout VLM and the small learned pacing policies.

The VLM: teacher distillation, SFT and multi-turn DAPO. The pacing policies:
:mod:`~policies.training.pacing` (stable-baselines3).

Modules: :mod:`~policies.training.dapo` (the loss, pure torch functions),
:mod:`~policies.training.distill` (teacher trajectories → a turn-level SFT dataset),
:mod:`~policies.training.sft` (TRL's SFT trainer on that dataset),
:mod:`~policies.training.rollout` and :mod:`~policies.training.rl` (DAPO on Pacing-env
rollouts). Torch, transformers and TRL are imported lazily (the ``train`` extra).
"""
