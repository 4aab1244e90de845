"""One file per metric; each registers itself in ``metrics.registry``."""
