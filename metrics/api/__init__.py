"""The metrics API (DRF): scoring runs, LLM judges, human vs metric, the best judge, PPI estimates and BME
anchors, one view per operation with typed report schemas (``report_schemas``). Beside ``metrics.web``,
never importing it; both build on the services and selectors below."""
