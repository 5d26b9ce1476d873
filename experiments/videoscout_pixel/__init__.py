"""The VideoScout recipe on the pixel VLM: its teacher, SFT additions, studies and probes."""
