"""Prediction-powered inference: a study's mean human score per condition and criterion estimated from few
human ratings and many metric scores (PPI++, Angelopoulos et al. 2023; ``estimates``), and its figure
(``plots``). Reads scores through ``metrics.scoring``; its report section is a page of ``metrics.web``."""
