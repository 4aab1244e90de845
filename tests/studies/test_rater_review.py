"""Rater review: the evidence per rater, the review queue, keep / exclude decisions that are
recorded with who, when and why and reversible, and an exclusion that reaches the reliability report,
the label report, the ratings export and the live panel; label aggregation of a study against
crowd-kit called directly; researcher B can neither see nor decide on researcher A's raters."""
import csv
import io

import pytest
from crowdkit.aggregation import DawidSkene
from django.core.exceptions import ValidationError
from django.urls import reverse

from studies.models import Assignment, RaterDecision, Rating, Study
from studies.pseudonyms import rater_pseudonym
from studies.rating import decisions
from studies.reports import aggregation_selectors, label_selectors, live_selectors, rater_evidence, review_queue
from studies.reports import selectors as report_selectors
from studies.reports.exporting import export_lines
from tests.factories import UserFactory
from tests.studies.review_fixtures import HONEST, SPAMMER, rate_all, review_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def rated(user, corpus):
    study = review_study(user, corpus)
    return study, rate_all(study)


def one(study):
    return Study.objects.filter(pk=study.pk)


def exclude(assignment, user, reason="gave every response 3 and 'safe'"):
    return decisions.rater_decision_record(assignment=assignment, kind="exclude", reason=reason, user=user)


def test_review_exclusion_reaches_the_reliability_and_label_reports(rated, user):
    study, done = rated
    spam = done[SPAMMER]
    before = report_selectors.reliability_report(one(study))
    assert spam.rater_id in {int(r["rater"]) for r in before.raters}
    labels_before = label_selectors.answers_frame(list(study.criteria.filter(kind="categorical")))
    exclude(spam, user)
    after = report_selectors.reliability_report(one(study))  # a new version: not the cached report
    assert spam.rater_id not in {int(r["rater"]) for r in after.raters}
    assert {int(r["rater"]) for r in after.raters} == {done[n].rater_id for n in HONEST}
    labels_after = label_selectors.answers_frame(list(study.criteria.filter(kind="categorical")))
    assert spam.rater_id in set(labels_before["rater"]) and spam.rater_id not in set(labels_after["rater"])
    assert len(labels_before) - len(labels_after) == Rating.objects.filter(
        assignment=spam, criterion__name="safety", item__check_kind="").count()


def test_review_exclusion_reaches_the_export_which_keeps_the_rows_and_says_why(rated, user):
    study, done = rated
    exclude(done[SPAMMER], user, reason="straight-lining")
    rows = list(csv.DictReader(io.StringIO("".join(export_lines(one(study), "csv", raw_ids=True)))))
    spam_rows = [r for r in rows if r["rater"] == SPAMMER]
    assert spam_rows and all(r["excluded"] == "True" and r["excluded_reason"] == "straight-lining" for r in spam_rows)
    others = [r for r in rows if r["rater"] != SPAMMER]
    assert others and all(r["excluded"] == "False" and r["excluded_reason"] == "" for r in others)


def test_review_exclusion_reaches_the_live_panel_which_names_who_and_why(rated, user, client):
    study, done = rated
    spam = done[SPAMMER]
    assert spam.pk in set(live_selectors.live_frame(study)["assignment"])
    exclude(spam, user, reason="failed the gold item")
    assert spam.pk not in set(live_selectors.live_frame(study)["assignment"])
    client.force_login(user)
    page = client.get(reverse("studies:study_live_panel", args=[study.slug]) + "?fragment=1").content.decode()
    assert "failed the gold item" in page and rater_pseudonym(study.experiment_id, spam.rater_id) in page


def test_review_revert_brings_the_rater_back_into_every_report(rated, user):
    study, done = rated
    spam = done[SPAMMER]
    decision = exclude(spam, user)
    assert spam.rater_id not in {int(r["rater"]) for r in report_selectors.reliability_report(one(study)).raters}
    decisions.rater_decision_revert(decision=decision, user=user)
    spam.refresh_from_db()
    decision.refresh_from_db()
    assert not spam.excluded and spam.exclusion_reason == "" and decision.reverted_by == user
    assert spam.rater_id in {int(r["rater"]) for r in report_selectors.reliability_report(one(study)).raters}
    assert decisions.rater_decision_revert(decision=decision, user=user).reverted_at == decision.reverted_at


def test_review_keep_replaces_an_exclusion_and_a_double_submit_stores_once(rated, user):
    study, done = rated
    spam = done[SPAMMER]
    first = exclude(spam, user)
    assert exclude(spam, user).pk == first.pk and RaterDecision.objects.count() == 1
    keep = decisions.rater_decision_record(assignment=spam, kind="keep", reason="the checks were ambiguous", user=user)
    spam.refresh_from_db()
    first.refresh_from_db()
    assert not spam.excluded and first.reverted_at is not None and keep.active
    assert RaterDecision.objects.filter(assignment=spam, reverted_at__isnull=True).count() == 1


def test_review_decision_without_a_reason_or_kind_is_refused_and_changes_nothing(rated, user):
    study, done = rated
    spam = done[SPAMMER]
    with pytest.raises(ValidationError) as error:
        decisions.rater_decision_record(assignment=spam, kind="exclude", reason="  ", user=user)
    assert set(error.value.message_dict) == {"reason"}
    with pytest.raises(ValidationError) as error:
        decisions.rater_decision_record(assignment=spam, kind="delete", reason="x", user=user)
    assert set(error.value.message_dict) == {"kind"}
    with pytest.raises(ValidationError) as error:
        decisions.rater_decision_record(assignment=spam, kind="bonus", reason="thanks", user=user)
    assert set(error.value.message_dict) == {"amount"}
    spam.refresh_from_db()
    assert not spam.excluded and not RaterDecision.objects.exists()


def test_review_platform_decisions_are_not_reverted_from_concord(rated, user):
    _, done = rated
    approved = decisions.rater_decision_record(assignment=done["r0"], kind="approve", reason="good work", user=user)
    with pytest.raises(ValidationError, match="cannot be undone"):
        decisions.rater_decision_revert(decision=approved, user=user)
    approved.refresh_from_db()
    assert approved.active


def test_rater_evidence_flags_show_their_figure_and_the_threshold_from_settings(rated, settings):
    study, done = rated
    spam = done[SPAMMER]
    flags = {f.key: f for f in rater_evidence.rater_evidence(study, spam.rater_id)["flags"]}
    straight = flags["straight_lining"]
    assert straight.figure == 1.0 and straight.threshold == 0.8 and straight.raised and straight.rule == "above 0.8"
    assert flags["checks"].figure == 0.0 and flags["checks"].raised and flags["checks"].detail == "0 of 1"
    assert flags["ac1-safety"].raised and flags["ac1-safety"].threshold == 0.2
    honest = {f.key: f for f in rater_evidence.rater_evidence(study, done["r0"].rater_id)["flags"]}
    assert not any(f.raised for f in honest.values()) and honest["ac1-safety"].figure > 0.5
    settings.RATER_FLAGS = {**settings.RATER_FLAGS, "max_straight_lining": 1.0}
    assert not {f.key: f for f in rater_evidence.rater_evidence(study, spam.rater_id)["flags"]}["straight_lining"].raised


def test_rater_evidence_has_each_check_item_competence_by_every_method_and_active_time(rated):
    study, done = rated
    evidence = rater_evidence.rater_evidence(study, done[SPAMMER].rater_id)
    assert [(c["kind"], c["passed"]) for c in evidence["checks"]] == [("gold", False)]
    assert [title for title, _ in evidence["competence"][0]["values"]] == [
        "Majority vote", "Dawid–Skene (1979)", "MACE (Hovy et al. 2013)"]
    assert len(evidence["seconds"]) == Assignment.objects.get(pk=done[SPAMMER].pk).assignment_items.count()
    honest = rater_evidence.rater_evidence(study, done["r0"].rater_id)
    assert [c["passed"] for c in honest["checks"]] == [True]
    spam_ds = dict(evidence["competence"][0]["values"])["Dawid–Skene (1979)"]
    assert spam_ds < dict(honest["competence"][0]["values"])["Dawid–Skene (1979)"]


def test_review_queue_lists_the_flagged_rater_undecided_first_and_the_most_disputed_items(rated, user):
    study, done = rated
    queue = review_queue.flagged_raters(study)
    assert [row["rater_id"] for row in queue] == [done[SPAMMER].rater_id]
    assert {f.key for f in queue[0]["raised"]} >= {"checks", "straight_lining", "ac1-safety"}
    exclude(done[SPAMMER], user)
    assert review_queue.flagged_raters(study)[0]["verdict"].kind == "exclude"
    items = review_queue.disputed_items(study, limit=3)
    assert len(items) == 3 and items[0]["figure"] >= items[1]["figure"] >= items[2]["figure"] > 0
    assert all(not row["item"].check_kind for row in items)


def test_aggregation_of_a_study_equals_crowdkit_on_its_answers_and_is_scored_on_the_gold_item(rated):
    study, _ = rated
    [found] = aggregation_selectors.study_aggregation(study)
    assert found["method"] == "dawid_skene" and found["has_truth"]
    rows = list(Rating.objects.filter(criterion__name="safety", assignment__study=study).values_list(
        "assignment__rater_id", "item_id", "response_id", "label"))
    import pandas as pd

    frame = pd.DataFrame([(w, (i, t), label) for w, i, t, label in rows], columns=["worker", "task", "label"])
    assert found["labels"] == DawidSkene(n_iter=100).fit_predict(frame).to_dict()
    gold = {m["method"]: m["gold"] for m in found["methods"]}
    assert all(g["n"] == 1 for g in gold.values())
    gold_item = study.items.get(check_kind="gold")
    first = gold_item.item_responses.order_by("position").first().response_id
    assert gold["dawid_skene"]["correct"] == int(found["labels"][(gold_item.pk, first)] == "unsafe")


def test_review_report_page_names_the_aggregation_method_and_who_was_excluded(rated, user, client, settings):
    study, done = rated
    client.force_login(user)
    page = client.get(reverse("studies:study_report", args=[study.slug])).content.decode()
    assert "labels aggregated by Dawid–Skene (1979)" in page and "Excluded raters" not in page
    exclude(done[SPAMMER], user, reason="one label for everything")
    settings.LABEL_AGGREGATION_METHOD = "majority_vote"
    page = client.get(reverse("studies:study_report", args=[study.slug])).content.decode()
    assert "labels aggregated by Majority vote" in page
    assert "Excluded raters" in page and "one label for everything" in page


def test_review_pages_and_decisions_through_http(rated, user, client):
    study, done = rated
    spam = done[SPAMMER]
    client.force_login(user)
    queue = client.get(reverse("studies:study_review", args=[study.slug]))
    assert queue.status_code == 200 and rater_pseudonym(study.experiment_id, spam.rater_id) in queue.content.decode()
    page = client.get(reverse("studies:study_rater", args=[study.slug, spam.rater_id]))
    assert page.status_code == 200 and "above 0.8" in page.content.decode()
    url = reverse("studies:study_rater_decide", args=[study.slug, spam.rater_id])
    assert client.post(url, {"kind": "exclude", "reason": ""}).status_code == 302
    spam.refresh_from_db()
    assert not spam.excluded  # refused: no reason
    client.post(url, {"kind": "exclude", "reason": "straight-lining", "next": "queue"})
    spam.refresh_from_db()
    assert spam.excluded and spam.exclusion_reason == "straight-lining"
    decision = RaterDecision.objects.get()
    assert decision.decided_by == user
    client.post(reverse("studies:study_decision_revert", args=[study.slug, decision.pk]))
    spam.refresh_from_db()
    assert not spam.excluded
    assert client.post(url, {"kind": "reject", "reason": "x"}).status_code == 302  # platform decisions: crowd's
    assert RaterDecision.objects.count() == 1


def test_review_unknown_rater_or_decision_is_a_404(rated, user, client):
    study, _ = rated
    client.force_login(user)
    outsider = UserFactory(username="nobody-rates").pk
    assert client.get(f"/studies/{study.slug}/raters/{outsider + 1000}/").status_code == 404
    assert client.get(f"/studies/{study.slug}/raters/{'9' * 30}/").status_code == 404
    assert client.post(f"/studies/{study.slug}/decisions/{'9' * 30}/revert/").status_code == 404


def test_review_cross_researcher_b_cannot_see_the_rater_page_the_queue_or_decide(rated, user, other_user, client):
    study, done = rated
    spam = done[SPAMMER]
    decision = exclude(spam, user)
    client.force_login(other_user)
    assert client.get(reverse("studies:study_review", args=[study.slug])).status_code == 404
    assert client.get(reverse("studies:study_rater", args=[study.slug, spam.rater_id])).status_code == 404
    assert client.post(reverse("studies:study_rater_decide", args=[study.slug, spam.rater_id]),
                       {"kind": "keep", "reason": "mine now"}).status_code == 404
    assert client.post(reverse("studies:study_decision_revert", args=[study.slug, decision.pk])).status_code == 404
    assert client.post(reverse("crowd:rater_decide", args=[study.slug, spam.rater_id]),
                       {"kind": "approve", "reason": "mine now"}).status_code == 404
    # B's own study cannot reach A's decision either
    assert client.post(reverse("studies:study_decision_revert", args=["no-such-study", decision.pk])).status_code == 404
    spam.refresh_from_db()
    decision.refresh_from_db()
    assert spam.excluded and decision.active and RaterDecision.objects.count() == 1


def test_review_cross_researcher_b_cannot_revert_a_decision_through_their_own_study(rated, user, other_user, corpus, client):
    study, done = rated
    decision = exclude(done[SPAMMER], user)
    theirs = review_study(other_user, corpus, title="bob study")
    client.force_login(other_user)
    assert client.post(reverse("studies:study_decision_revert", args=[theirs.slug, decision.pk])).status_code == 404
    decision.refresh_from_db()
    assert decision.active


def test_review_admin_sees_every_rater_page_and_queue(rated, client):
    study, done = rated
    client.force_login(UserFactory(username="admin-review", is_staff=True))
    assert client.get(reverse("studies:study_review", args=[study.slug])).status_code == 200
    assert client.get(reverse("studies:study_rater", args=[study.slug, done[SPAMMER].rater_id])).status_code == 200


def test_rater_evidence_for_ab_choices_position_habit_bradley_terry_order_and_exclusion(make_study, user):
    from studies.designs.pairwise_report import comparisons_frame
    from studies.models import Response
    from studies.rating import answers as answering
    from studies.rating import entry as rater_entry

    study = make_study("pairwise", raters_per_item=40, items_per_assignment=12)
    rank = {"seq2seq": 0, "hred": 1, "thred": 2, "human": 3}
    done = {}
    for index, name in enumerate(("p0", "p1", "p2", "lefty")):
        assignment = rater_entry.assignment_start(
            study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=name), seed=index)
        for slot in assignment.assignment_items.order_by("position"):
            left, right = (dict(Response.objects.filter(pk__in=slot.response_order).values_list("pk", "system__name"))[r]
                           for r in slot.response_order)
            better = "left" if rank[left] > rank[right] else "right"
            if (slot.item_id + index) % 4 == 0:  # everyone errs now and then: every system loses once
                better = "right" if better == "left" else "left"
            choice = "left" if name == "lefty" else better
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
                c: {"choice": choice, "reason": ""} for c in study.criteria.values_list("name", flat=True)})
        done[name] = answering.assignment_submit(assignment=assignment)
    lefty = {f.key: f for f in rater_evidence.rater_evidence(study, done["lefty"].rater_id)["flags"]}
    sides = [f for key, f in lefty.items() if key.startswith("position-")]
    assert len(sides) == study.criteria.count() and all(f.raised and f.threshold == 0.01 for f in sides)
    assert all(f.detail.startswith("12 of 12") for f in sides)
    honest = {f.key: f for f in rater_evidence.rater_evidence(study, done["p0"].rater_id)["flags"]}
    orders = [f for key, f in honest.items() if key.startswith("order-")]
    assert orders and all(f.figure > 0.5 and not f.raised for f in orders)
    assert not any(f.raised for key, f in honest.items() if key.startswith("position-"))
    exclude(done["lefty"], user, reason="always the left side")
    assert done["lefty"].rater_id not in set(comparisons_frame(one(study))["rater"])
    rows = list(csv.DictReader(io.StringIO("".join(export_lines(one(study), "csv", raw_ids=True)))))
    assert {r["excluded"] for r in rows if r["rater"] == "lefty"} == {"True"}  # the export keeps them, marked
    assert {r["excluded_reason"] for r in rows if r["rater"] == "lefty"} == {"always the left side"}
    assert {r["excluded"] for r in rows if r["rater"] != "lefty"} == {"False"}


def test_rater_evidence_speed_flag_against_the_study_median_and_in_the_queue(rated):
    from studies.models import AssignmentItem

    study, done = rated
    AssignmentItem.objects.filter(assignment__study=study).update(active_seconds=20.0)
    AssignmentItem.objects.filter(assignment=done[SPAMMER]).update(active_seconds=1.0)
    speed = {f.key: f for f in rater_evidence.rater_evidence(study, done[SPAMMER].rater_id)["flags"]}["speed"]
    assert speed.figure == pytest.approx(1 / 20) and speed.threshold == 0.3 and speed.raised
    assert speed.detail == "1.0 s against 20.0 s"
    honest = {f.key: f for f in rater_evidence.rater_evidence(study, done["r0"].rater_id)["flags"]}["speed"]
    assert honest.figure == 1.0 and not honest.raised
    assert "speed" in {f.key for f in review_queue.flagged_raters(study)[0]["raised"]}


def test_rater_evidence_thresholds_are_the_reports_too(rated, settings):
    study, done = rated
    honest = done["r0"].rater_id

    def flagged():
        return {int(r["rater"]): r["flagged"] for r in report_selectors.reliability_report(one(study)).raters}[honest]

    assert not flagged()
    settings.RATER_FLAGS = {**settings.RATER_FLAGS, "min_loo_r": 1.5}  # above any correlation
    assert flagged()
    assert {f.key: f for f in rater_evidence.rater_evidence(study, honest)["flags"]}["loo_r"].raised
