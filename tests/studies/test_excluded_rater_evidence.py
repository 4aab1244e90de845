"""An excluded rater's own page and the review API keep the figures that justified the exclusion (Spearman ρ
with the others, straight-lining, label agreement), computed with that rater's answers put back and every
other excluded rater still out, and say so; the reliability report and the other raters' figures leave the
rater out."""
import pytest
from django.urls import reverse

from studies.models import Study
from studies.rating import answers as answering
from studies.rating import decisions
from studies.rating import entry as rater_entry
from studies.reports import rater_evidence
from studies.reports import selectors as report_selectors
from tests.studies.review_fixtures import HONEST, SPAMMER, rate_all, review_study

pytestmark = pytest.mark.django_db

LINER = "liner"


def straight_liner(study, index=5):
    """One value for every response of a screen, against the grain of the screens' honest values (the
    fixture's honest raters give about 1 + t mod 5): straight-lining 1 and a low ρ."""
    rater = rater_entry.rater_get_or_create(platform="invite", external_id=LINER)
    assignment = rater_entry.assignment_start(study=study, rater=rater, seed=index)
    for slot in assignment.assignment_items.select_related("item").order_by("position"):
        order = slot.response_order
        mean = sum(1 + t % 5 for t in order) / len(order)
        value = min(5, max(1, round(6 - mean)))
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
            "readability": {t: value for t in order}, "safety": {t: "unsafe" for t in order}})
    return answering.assignment_submit(assignment=assignment)


@pytest.fixture
def rated(user, corpus):
    study = review_study(user, corpus)
    done = rate_all(study)
    done[LINER] = straight_liner(study)
    return study, done


def exclude(assignment, user, reason):
    return decisions.rater_decision_record(assignment=assignment, kind="exclude", reason=reason, user=user)


def figures(flags):
    return {f.key: (f.figure, f.threshold, f.raised) for f in flags if f.key in ("loo_r", "straight_lining")}


def api_figures(body):
    return {f["key"]: (f["figure"], f["threshold"], f["raised"]) for f in body["flags"]
            if f["key"] in ("loo_r", "straight_lining")}


def report_raters(study):
    return {int(r["rater"]): r for r in report_selectors.reliability_report(Study.objects.filter(pk=study.pk)).raters}


def test_exclusion_keeps_rho_and_straight_lining_on_the_raters_page_and_api(rated, user, client, api, settings):
    study, done = rated
    liner = done[LINER].rater_id
    exclude(done[SPAMMER], user, "one value for everything")  # another exclusion: stays out throughout
    before = rater_evidence.rater_evidence(study, liner)
    shown = figures(before["flags"])
    assert set(shown) == {"loo_r", "straight_lining"} and all(raised for _, _, raised in shown.values())
    assert shown["straight_lining"][0] == pytest.approx(1.0)
    assert shown["loo_r"][1] == settings.RATER_FLAGS["min_loo_r"] and shown["loo_r"][0] < shown["loo_r"][1]
    api_before = api.get(f"/api/studies/{study.slug}/raters/{liner}/").json()
    others_before = {done[n].rater_id: report_raters(study)[done[n].rater_id]["loo_r"] for n in HONEST}
    assert liner in report_raters(study)

    exclude(done[LINER], user, "straight-lining, ρ below 0.2")

    after = rater_evidence.rater_evidence(study, liner)
    kept = figures(after["flags"])
    assert set(kept) == set(shown)
    for key, (figure, threshold, raised) in shown.items():  # the figure, its threshold and the flag, as before
        assert kept[key][0] == pytest.approx(figure, abs=1e-12) and kept[key][1:] == (threshold, raised)
    assert before["with_own_answers"] is False and after["with_own_answers"] is True
    # the labels' figures too, as before
    assert {f.key: f.figure for f in after["flags"] if f.key.startswith("ac1-")} == pytest.approx(
        {f.key: f.figure for f in before["flags"] if f.key.startswith("ac1-")})
    # and the rater's competence on the label criterion by each aggregation method
    assert before["competence"] and [
        [(title, pytest.approx(v, abs=1e-9)) for title, v in row["values"]] for row in before["competence"]] == [
        row["values"] for row in after["competence"]]
    body = api.get(f"/api/studies/{study.slug}/raters/{liner}/").json()
    assert set(api_figures(body)) == set(api_figures(api_before)) == set(shown)  # ρ and straight-lining still there
    for key, (figure, threshold, raised) in api_figures(api_before).items():
        assert api_figures(body)[key][0] == pytest.approx(figure, abs=1e-12)
        assert api_figures(body)[key][1:] == (threshold, raised) == (shown[key][1], True)
    assert body["excluded"] is True and body["with_own_answers"] is True and api_before["with_own_answers"] is False

    client.force_login(user)
    page = client.get(reverse("studies:study_rater", args=[study.slug, liner])).content.decode()
    assert "Spearman ρ with the others" in page and "share of screens with one value throughout" in page
    assert f"{shown['loo_r'][0]:.3f}" in page and "from before the exclusion" in page

    # the report and the others' figures leave both excluded raters out
    report = report_raters(study)
    assert liner not in report and done[SPAMMER].rater_id not in report
    others_after = {r: report[r]["loo_r"] for r in others_before}
    assert others_after != pytest.approx(others_before)  # the liner no longer in the others' means
    for name in HONEST:
        other = rater_evidence.rater_evidence(study, done[name].rater_id)
        assert other["with_own_answers"] is False
        assert [f.figure for f in other["flags"] if f.key == "loo_r"] == pytest.approx(
            [others_after[done[name].rater_id]], abs=1e-12)


def test_exclusion_page_of_a_kept_rater_has_no_before_exclusion_note(rated, user, client):
    study, done = rated
    client.force_login(user)
    page = client.get(reverse("studies:study_rater", args=[study.slug, done[LINER].rater_id])).content.decode()
    assert "from before the exclusion" not in page and "Spearman ρ with the others" in page
