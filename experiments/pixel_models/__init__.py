"""Training the pixel world's own models (tiny CLIP, pixel VLM), evaluations, probes."""
