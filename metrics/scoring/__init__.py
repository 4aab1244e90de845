"""Scoring: metric scores written and read.

- ``services``: scoring runs created, retried, cancelled and executed (batched, idempotent, resumable), and a
  BME study's reference values filled from a metric;
- ``loop``: the batched, resumable loop every run shares; ``dialogue``: runs of dialogue-level metrics;
- ``run_jobs``: a run's life as a background job (its queue, failure, rerun, recovery after a dead worker);
- ``selectors``: what a run scores, scores as arrays, the runs a user may see, and the human-vs-metric
  report; ``pairwise``: human vs metric for the designs that compare pairs.

Below training, PPI, benchmarking and the pages; above the implementations, which it reaches through
``metrics.registry``."""
