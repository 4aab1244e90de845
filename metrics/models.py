"""Metric models arrive with the metrics issue; the app is installed so that migrations stay linear."""
