"""Krippendorff's alpha in the report reads the same normalised scores as the ICC: for
magnitude estimation the log10 ratio to each item's anchor at the interval level, for Likert the value
at the ordinal level; checked against the ``krippendorff`` package directly."""
import krippendorff
import numpy as np
import pandas as pd
import pytest

from studies.analysis.agreement import reliability_matrix
from studies.analysis.normalise import magnitude_log_ratio
from studies.analysis.report import build_report
from studies.designs import design_for  # the conditions carry what their design says of its scores


def _frame(design: str, units: np.ndarray, raters: np.ndarray, values: np.ndarray, scores: np.ndarray) -> pd.DataFrame:
    n = len(units)
    return pd.DataFrame({
        "study": "s", "design": design, "criterion": "coherence", "unit": units, "system": units % 3, "item": units,
        "rater": raters, "rater_name": [f"r{r}" for r in raters], "assignment": raters, "value": values,
        "rank": np.nan, "score": scores, "seconds": 10.0, "total_seconds": 300.0 + raters,
        "prior_rating_experience": None, "prior_agent_experience": None,
    }, index=range(n))


def _bme_ratings(seed: int = 4):
    """Five raters × 30 items; each item's anchor differs by two orders of magnitude across items, and
    raters judge the response relative to it (log ratio = item quality + rater noise)."""
    rng = np.random.default_rng(seed)
    n_items, n_raters = 30, 5
    anchors = 10 ** rng.uniform(0.5, 2.5, n_items)
    quality = rng.normal(0, 0.12, n_items)
    units = np.repeat(np.arange(n_items), n_raters)
    raters = np.tile(np.arange(n_raters), n_items)
    log_ratio = quality[units] + rng.normal(0, 0.15, units.size)
    values = anchors[units] * 10 ** log_ratio
    return units, raters, values, anchors[units]


def test_bme_alpha_is_interval_alpha_of_the_log_ratios_not_of_the_raw_magnitudes():
    units, raters, values, references = _bme_ratings()
    scores = magnitude_log_ratio(values, references)
    report = build_report(_frame("bme", units, raters, values, scores),
                          [{"slug": "s", "title": "BME", "design": "bme", "criteria": ["coherence"],
                            **design_for("bme").report_facts()}])
    (cell,) = report.alpha
    expected = krippendorff.alpha(reliability_data=reliability_matrix(units, raters, scores),
                                  level_of_measurement="interval")
    assert cell["level"] == "interval" and cell["values"] == "log10(max(value,1)/reference)"
    assert cell["alpha"] == pytest.approx(expected, abs=1e-9)
    raw = krippendorff.alpha(reliability_data=reliability_matrix(units, raters, values), level_of_measurement="ratio")
    # Raw magnitudes agree mostly about the anchors (which differ 100-fold), not about the responses:
    # the old report showed that inflated figure beside a low ICC of the normalised scores.
    assert raw - cell["alpha"] > 0.5, (raw, cell["alpha"])  # .86 vs .21 here
    icc_ck = report.tables["table1"][0]["icc"]["ICC(C,1)"]["value"]
    assert abs(cell["alpha"] - icc_ck) < 0.05  # alpha and single-rater ICC now tell the same story


def test_likert_alpha_is_ordinal_on_the_values():
    rng = np.random.default_rng(7)
    units = np.repeat(np.arange(20), 4)
    raters = np.tile(np.arange(4), 20)
    values = np.clip(np.round(rng.normal(3.5, 1.2, 20)[units] + rng.normal(0, 0.7, units.size)), 1, 6)
    report = build_report(_frame("likert", units, raters, values, values),
                          [{"slug": "s", "title": "Likert", "design": "likert", "criteria": ["coherence"],
                            **design_for("likert").report_facts()}])
    (cell,) = report.alpha
    expected = krippendorff.alpha(reliability_data=reliability_matrix(units, raters, values),
                                  level_of_measurement="ordinal")
    assert cell["level"] == "ordinal" and cell["alpha"] == pytest.approx(expected, abs=1e-9)
    assert any("Krippendorff" in note and "interval" in note for note in report.notes)
