"""Checks of the project's structure that run in CI (import-linter contracts of our own)."""
