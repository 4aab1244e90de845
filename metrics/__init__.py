"""Automatic dialogue metrics beside the human ratings: the metrics themselves (``implementations``, found by
``registry``), LLM judges (``judging``), scoring and the human-vs-metric report (``scoring``), training
(``training``), prediction-powered estimates (``ppi``), benchmarks on public judgments (``benchmarking``), the
pages (``web``) and the API (``api``), in layers (docs/architecture.md, "metrics/: one folder per concern")."""
