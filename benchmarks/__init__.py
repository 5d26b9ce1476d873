"""Episode benchmarks over video-env environments, and performance scripts."""
