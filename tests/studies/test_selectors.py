"""Progress and export numbers, checked against values computed independently from raw rows."""
import numpy as np
import pytest

from studies.analysis.normalise import magnitude_log_ratio, rank_scores
from studies.authoring import selectors
from studies.authoring.demo import demo_load
from studies.models import Rating, Study
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.reports import export_selectors

pytestmark = pytest.mark.django_db


def test_progress_counts_submitted_work_capped_at_the_target(make_study):
    study = make_study("likert", raters_per_item=1, items_per_assignment=4)
    worker = rater_entry.rater_get_or_create(platform="invite", external_id="w")
    assignment = rater_entry.assignment_start(study=study, rater=worker)
    for slot in assignment.assignment_items.all():
        answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                answers={c: dict.fromkeys(slot.response_order, 2) for c in ("readability", "coherence")})
    before = selectors.study_progress(study)
    assert (before["done"], before["needed"], before["assignments"]["started"], before["ratings"]) == (0, 6, 1, 32)
    answering.assignment_submit(assignment=assignment, total_seconds=120)
    after = selectors.study_progress(study)
    assert (after["done"], after["percent"], after["mean_seconds"], after["median_seconds"]) == (4, 66.7, 120, 120)


def test_export_normalisation_matches_the_analysis_functions():
    demo_load()
    rows = list(export_selectors.ratings_export_rows(Study.objects.filter(experiment__slug="demo-seed-study")))
    assert len(rows) == Rating.objects.count() == 1680
    me = [r for r in rows if r["design"] in ("rme", "bme")]
    expected = magnitude_log_ratio([r["value"] for r in me], [r["reference_value"] for r in me])
    np.testing.assert_allclose([r["normalised_value"] for r in me], expected, rtol=0, atol=1e-12)
    assert {r["reference_value"] for r in me if r["design"] == "rme"} == {100.0}
    bws = [r for r in rows if r["design"] == "bws"]
    np.testing.assert_array_equal([r["normalised_value"] for r in bws], rank_scores([r["rank"] for r in bws], 4))
    likert = [r for r in rows if r["design"] == "likert"]
    assert all(r["normalised_value"] == r["value"] for r in likert)
    assert {r["prior_agent_experience"] for r in rows} <= {True, False}


def test_magnitude_log_ratio_floors_zero_at_one():
    np.testing.assert_allclose(magnitude_log_ratio([0, 1, 100, 250], [100, 100, 100, 50]),
                               [-2.0, -2.0, 0.0, np.log10(5)])
