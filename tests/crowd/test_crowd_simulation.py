"""simulate_crowd: simulated raters go through the real pages (entry with platform parameters,
consent, every item, questionnaire) for each design; forms are read generically, hidden fields
included."""
import random
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from crowd.simulation import fill, parse_forms
from studies.models import Assignment, Rating

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("design", "platform"), [("likert", "mturk"), ("bws", "prolific"), ("rme", "prolific")])
def test_simulated_raters_complete_the_study_through_its_pages(make_study, design, platform):
    study = make_study(design, raters_per_item=2, items_per_assignment=3, platform=platform)
    out = StringIO()
    call_command("simulate_crowd", study.slug, "--raters", "3", "--platform", platform, "--seed", "7", stdout=out)
    assert "3/3 simulated raters completed" in out.getvalue()
    assignments = Assignment.objects.filter(study=study)
    assert set(assignments.values_list("status", flat=True)) == {"submitted"}
    assert set(assignments.values_list("rater__platform", flat=True)) == {platform}
    criteria, shown = study.criteria.count(), 4 if design != "rme" else 3
    assert Rating.objects.filter(assignment__study=study).count() == 3 * 3 * criteria * shown
    if design == "bws":  # every ranking is a permutation (no ties)
        for assignment in assignments:
            ranks = list(Rating.objects.filter(assignment=assignment).values_list("item", "criterion", "rank"))
            for key in {(i, c) for i, c, _ in ranks}:
                assert sorted(r for i, c, r in ranks if (i, c) == key) == [1, 2, 3, 4]
    assert all(a.rater.questionnaire is not None and a.rater.prior_rating_experience is not None for a in assignments)


def test_simulation_stops_and_says_why_when_the_study_is_full(make_study):
    study = make_study("likert", raters_per_item=1, items_per_assignment=6, platform="prolific")
    err = StringIO()
    call_command("simulate_crowd", study.slug, "--raters", "2", "--seed", "1", stdout=StringIO(), stderr=err)
    assert "HTTP 403" in err.getvalue() and Assignment.objects.count() == 1
    with pytest.raises(CommandError, match="draft; publish it first"):
        call_command("simulate_crowd", make_study("likert", publish=False).slug, stdout=StringIO())
    with pytest.raises(CommandError, match="takes links of the kind .Invite link."):
        call_command("simulate_crowd", make_study("likert").slug, stdout=StringIO())


def test_forms_are_filled_generically_keeping_hidden_tokens():
    html = """<form method="post" action="/r/a/tok/items/0/">
      <input type="hidden" name="csrfmiddlewaretoken" value="c5rf"><input type="hidden" name="form_token" value="per-assignment">
      <input type="radio" name="r1-fluency" value="1"><input type="radio" name="r1-fluency" value="2">
      <input type="number" name="r2-fluency" min="1" max="9">
      <select name="a"><option value="">-</option><option value="1">1</option><option value="2">2</option></select>
      <select name="b"><option value="">-</option><option value="1">1</option><option value="2">2</option></select>
      <input type="checkbox" name="agree" value="yes"><button type="submit">Next</button></form>"""
    form = parse_forms(html)[0]
    data = fill(form, random.Random(3))
    assert (data["csrfmiddlewaretoken"], data["form_token"], data["agree"]) == ("c5rf", "per-assignment", "yes")
    assert data["r1-fluency"] in {"1", "2"} and 1 <= int(data["r2-fluency"]) <= 9
    assert sorted((data["a"], data["b"])) == ["1", "2"]


@pytest.mark.django_db(transaction=True)
def test_simulated_raters_over_http_against_a_running_server(live_server, make_study):
    study = make_study("likert", raters_per_item=2, items_per_assignment=3, platform="mturk")
    out = StringIO()
    call_command("simulate_crowd", study.slug, "--raters", "2", "--server", live_server.url, "--seed", "5",
                 "--platform", "mturk", stdout=out)
    assert "2/2 simulated raters completed" in out.getvalue()
    assert Assignment.objects.filter(study=study, status="submitted").count() == 2
