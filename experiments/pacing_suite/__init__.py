"""A legible pacing suite: where a slower look reads more (issue 63, item 1)."""
