"""One module per metric: a subclass of ``MetricImplementation`` (``base.py``) that sets ``key``.
``metrics.registry`` finds it here; no list names it and it imports no registry."""
