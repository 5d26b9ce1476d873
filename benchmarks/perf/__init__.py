"""Performance benchmarks: each script prints ratios against a baseline run alongside."""
