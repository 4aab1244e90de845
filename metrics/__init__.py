"""Automatic dialogue metrics: registry, scores, training runs (built in later issues)."""
