"""Benchmarking: metrics against public human judgments, straight from the files (no study needed).

- ``judgments``: the public judgment files read through the studies' importers;
- ``benchmarks``: a metric scored on a set and correlated with the humans (turn level), compared with others;
- ``dialogue``: SelF-Eval's replacement-level accuracy benchmark;
- ``published``: the papers' own figures, printed beside the measured ones;
- ``model_cards``: a trained model beside every untrained baseline on every public set.

Builds on the implementations and the registry; scoring, training and the pages sit beside or above it."""
