"""Studies run on the benchmark machinery: simulator validation, fidelity effect, pixel-real table.

Each module is a command (``python -m benchmarks.studies.<name>``) that runs benchmarks or
evaluations and writes a generated block of the docs.
"""
