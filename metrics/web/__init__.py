"""The metric pages (server-rendered): scoring and training runs with live progress, human vs metric
(``views``), MDD-Eval's staff form (``mdd_views``), LLM judges (``judge_views``), the prediction-powered
estimates' report section (``ppi_views``) and the SVG figures they draw (``plots``). Thin: reads through
selectors, writes through services; no heavy library at module level. ``metrics.urls`` routes here."""
