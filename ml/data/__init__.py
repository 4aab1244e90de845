"""Dataset builders and collators for learned metrics."""
