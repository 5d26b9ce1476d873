"""The laboratory: our own research on the library (see experiments/README.md).

Tiny-model training, the VideoScout-pixel recipe's teachers and augmentations, studies and
probes, each run by one command and logged. It imports the library; the library never
imports it.
"""
