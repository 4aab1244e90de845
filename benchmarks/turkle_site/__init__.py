"""A minimal Django project around the ``turkle`` package (which ships the app, not a site), for the
side-by-side load benchmark in benchmarks/http_load.py. It runs in Turkle's own virtual environment,
never in Concord's."""
