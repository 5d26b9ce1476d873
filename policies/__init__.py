"""Policies that act in video-env environments (filled in by later releases)."""
