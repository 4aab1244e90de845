"""Side bias of A/B raters: the review queue's flag and the report's count of raters who chose one side
more often than chance are one test (exact two-sided binomial against ½, as scipy.stats.binomtest) with
one threshold (settings.RATER_FLAGS["position_p"]) and one wording; the disputed items say which raters
they leave out, never name an excluded rater, and an excluded rater's page keeps its evidence."""
import pytest
from django.urls import reverse
from scipy import stats

from studies.designs.pairwise_report import pairwise_report
from studies.models import Response, Study
from studies.rating import answers as answering
from studies.rating import decisions
from studies.rating import entry as rater_entry
from studies.reports import rater_evidence, review_queue
from tests.studies.review_fixtures import SPAMMER, rate_all, review_study

pytestmark = pytest.mark.django_db
RANK = {"seq2seq": 0, "hred": 1, "thred": 2, "human": 3}


def ab_study(make_study, *, items=8, names=("p0", "p1", "p2", "lefty")):
    study = make_study("pairwise", raters_per_item=40, items_per_assignment=items)
    done = {}
    for index, name in enumerate(names):
        assignment = rater_entry.assignment_start(
            study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=name), seed=index)
        for slot in assignment.assignment_items.order_by("position"):
            systems = dict(Response.objects.filter(pk__in=slot.response_order).values_list("pk", "system__name"))
            left, right = (systems[r] for r in slot.response_order)
            better = "left" if RANK[left] > RANK[right] else "right"
            if (slot.item_id + index) % 4 == 0:
                better = "right" if better == "left" else "left"
            choice = "left" if name == "lefty" else better
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
                c: {"choice": choice, "reason": ""} for c in study.criteria.values_list("name", flat=True)})
        done[name] = answering.assignment_submit(assignment=assignment)
    return study, done


def side_flags(study, assignment):
    return {f.key.removeprefix("position-"): f for f in rater_evidence.rater_evidence(study, assignment.rater_id)["flags"]
            if f.key.startswith("position-")}


def report_sides(study):
    (entry,) = pairwise_report(Study.objects.filter(pk=study.pk), resamples=20)
    return {c["criterion"]: c for c in entry["criteria"]}


def test_side_bias_queue_flag_and_report_count_are_one_test_with_one_threshold(make_study):
    study, done = ab_study(make_study)
    flags = side_flags(study, done["lefty"])
    report = report_sides(study)
    assert set(flags) == set(report)
    for criterion, part in report.items():
        (lefty,) = [r for r in part["rater_sides"] if r["left_wins"] == r["decisive"] == 8]
        expected = stats.binomtest(8, 8, 0.5, alternative="two-sided").pvalue
        assert lefty["p"] == pytest.approx(expected, abs=1e-12) == flags[criterion].figure
        assert lefty["side_preference"] and flags[criterion].raised  # 8 of 8: p = 0.0078 < 0.01 on both pages
        assert part["raters_with_side_preference"] == 1 and part["side_level"] == flags[criterion].threshold
    queue = {f.key for row in review_queue.flagged_raters(study) for f in row["raised"]}
    assert {f"position-{c}" for c in report} <= queue


def test_side_bias_threshold_setting_moves_both_pages_together(make_study, settings):
    settings.RATER_FLAGS = {**settings.RATER_FLAGS, "position_p": 0.005}
    study, done = ab_study(make_study)
    flags = side_flags(study, done["lefty"])
    report = report_sides(study)
    for criterion, part in report.items():  # p = 0.0078 is above 0.005: neither page flags it
        assert not flags[criterion].raised and flags[criterion].threshold == 0.005
        assert part["raters_with_side_preference"] == 0 and part["side_level"] == 0.005


def test_side_bias_wording_is_a_p_value_not_a_probability_of_chance(make_study, user, client):
    study, done = ab_study(make_study)
    client.force_login(user)
    rater_page = client.get(reverse("studies:study_rater", args=[study.slug, done["lefty"].rater_id])).content.decode()
    queue_page = client.get(reverse("studies:study_review", args=[study.slug])).content.decode()
    for page in (rater_page, queue_page):
        assert "exact two-sided binomial p against chance" in page
        assert "binomial p that the rater" not in page
    report_page = client.get(reverse("studies:study_report", args=[study.slug])).content.decode()
    assert "exact two-sided binomial test of each rater" in report_page and "Holm-adjusted p &lt; .05" not in report_page


def test_side_bias_honest_raters_are_flagged_on_neither_page(make_study):
    study, done = ab_study(make_study)
    for name in ("p0", "p1", "p2"):
        assert not any(f.raised for f in side_flags(study, done[name]).values())


def test_side_bias_disputed_items_leave_out_and_name_the_excluded_rater_only_in_the_scope(user, corpus):
    study = review_study(user, corpus)
    done = rate_all(study)
    spam_name = rater_evidence.rater_name(study, done[SPAMMER], raw_ids=False)
    assert any(spam_name in row["raters"] for row in review_queue.disputed_items(study, limit=50))
    decisions.rater_decision_record(assignment=done[SPAMMER], kind="exclude", reason="same label throughout", user=user)
    assert not any(spam_name in row["raters"] for row in review_queue.disputed_items(study, limit=50))
    scope = review_queue.disputed_scope(study)
    assert scope["excluded"] == [spam_name] and scope["raters"] == 4 and scope["alone"] == []


def test_side_bias_disputed_scope_names_raters_no_one_else_answered_with(user, corpus):
    study = review_study(user, corpus)
    done = rate_all(study, names=("r0",))
    scope = review_queue.disputed_scope(study)
    assert scope["alone"] == [rater_evidence.rater_name(study, done["r0"], raw_ids=False)]
    assert review_queue.disputed_items(study) == []


def test_agreement_evidence_stays_on_the_excluded_raters_own_page(user, corpus, client):
    study = review_study(user, corpus)
    done = rate_all(study)
    before = {f.key: f.figure for f in rater_evidence.rater_evidence(study, done[SPAMMER].rater_id)["flags"]}
    decisions.rater_decision_record(assignment=done[SPAMMER], kind="exclude", reason="same label throughout", user=user)
    after = {f.key: f for f in rater_evidence.rater_evidence(study, done[SPAMMER].rater_id)["flags"]}
    assert after["ac1-safety"].raised and after["ac1-safety"].figure == pytest.approx(before["ac1-safety"])
    client.force_login(user)
    page = client.get(reverse("studies:study_review", args=[study.slug])).content.decode()
    assert 'data-testid="scope-excluded"' in page
