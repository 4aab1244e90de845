"""The pairwise (A/B) design end to end without a browser: configuration, the balanced schedule
(pairs over conversations, sides per rater and per item), storing choices (double submit, ties,
reasons), the rater page, the report page and figure, the API report and the export."""
import csv
import io
import re
from collections import Counter

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils.html import escape

from studies.authoring import services as authoring
from studies.designs import design_for
from studies.designs.pairwise_schedule import pair_schedule
from studies.errors import StudyStateError
from studies.models import Assignment, AssignmentItem, Comparison, Rating, Response, Study, StudyItem
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating import form_tokens
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db
CRITERIA = ("readability", "coherence")


def pairwise(make_study, **config):
    return make_study("pairwise", raters_per_item=40, items_per_assignment=12, **config)


def start(study, name, seed=None):
    rater = rater_entry.rater_get_or_create(platform="invite", external_id=name)
    return rater_entry.assignment_start(study=study, rater=rater, seed=seed)


def answer_all(assignment, choose=lambda slot, criterion: "left", reason=""):
    for slot in assignment.assignment_items.order_by("position"):
        answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                           answers={c: {"choice": choose(slot, c), "reason": reason} for c in CRITERIA})


def system_of(response_ids):
    from studies.models import Response
    return dict(Response.objects.filter(pk__in=response_ids).values_list("pk", "system__name"))


# --- configuration -------------------------------------------------------------------------------

def test_config_defaults_and_bad_values_name_the_field():
    assert design_for("pairwise").config_clean(None) == {"allow_tie": True, "reason": "optional", "reason_max_length": 300,
                                                     "pairs_per_conversation": 0, "schedule_seed": 0}
    with pytest.raises(ValidationError) as error:
        design_for("pairwise").config_clean({"allow_tie": "yes", "reason": "sometimes", "reason_max_length": 0, "x": 1})
    assert set(error.value.message_dict) == {"design_config", "design_config.allow_tie", "design_config.reason",
                                             "design_config.reason_max_length"}


# --- schedule ------------------------------------------------------------------------------------

def test_every_pair_of_every_conversation_becomes_an_item_of_two_responses(make_study):
    study = pairwise(make_study)
    items = StudyItem.objects.filter(study=study)
    assert items.count() == 6 * 6  # 6 conversations x C(4, 2) pairs (seq2seq, hred, thred and the human reference)
    shown = Counter()
    for item in items.prefetch_related("item_responses__response__system"):
        systems = [link.response.system.name for link in item.item_responses.all()]
        assert len(systems) == 2 and systems == sorted(systems)
        assert {link.response.conversation_id for link in item.item_responses.all()} == {item.conversation_id}
        shown[tuple(systems)] += 1
    assert set(shown.values()) == {6}


def test_one_pair_per_conversation_spreads_the_pairs_evenly():
    schedule = pair_schedule([["a", "b", "c", "d"]] * 30, pairs_per_conversation=1, seed=3)
    counts = Counter(pair for pairs in schedule for pair in pairs)
    assert len(counts) == 6 and max(counts.values()) - min(counts.values()) == 0
    two = pair_schedule([["a", "b", "c", "d"]] * 9, pairs_per_conversation=2, seed=3)
    counts = Counter(pair for pairs in two for pair in pairs)
    systems = Counter(s for pairs in two for pair in pairs for s in pair)
    assert max(counts.values()) - min(counts.values()) <= 1 and max(systems.values()) - min(systems.values()) <= 1
    assert all(len(set(pairs)) == 2 for pairs in two)
    assert pair_schedule([["a", "b", "c"]] * 5, pairs_per_conversation=1, seed=3) \
        != pair_schedule([["a", "b", "c"]] * 5, pairs_per_conversation=1, seed=4)  # the seed matters


def test_sides_are_balanced_per_rater_and_per_item(make_study):
    study = pairwise(make_study)
    assignments = [start(study, f"w{i}", seed=i) for i in range(24)]
    slots = list(AssignmentItem.objects.filter(assignment__in=assignments).select_related("item"))
    systems = system_of({r for s in slots for r in s.response_order})
    canonical = {item.pk: [link.response_id for link in item.item_responses.all()]
                 for item in StudyItem.objects.filter(study=study).prefetch_related("item_responses")}
    per_rater: dict[int, Counter] = {}
    per_item: Counter = Counter()
    left_overall: Counter = Counter()
    for slot in slots:
        left, right = slot.response_order
        assert sorted(slot.response_order) == sorted(canonical[slot.item_id])
        balance = per_rater.setdefault(slot.assignment_id, Counter())
        balance[systems[left]] += 1
        balance[systems[right]] -= 1
        per_item[slot.item_id] += 1 if left == canonical[slot.item_id][0] else -1
        left_overall[systems[left]] += 1
        left_overall[systems[right]] -= 1
    # Each rater: every system on the left as often as on the right (±1: a system shown an odd number of
    # times cannot be even), so a rater's habit of picking one side cannot favour a system.
    assert max(abs(v) for balance in per_rater.values() for v in balance.values()) <= 1
    # Each item: both orders about equally often over its raters (8 each here: at worst 5 to 3).
    assert Counter(len(s.response_order) for s in slots) == {2: len(slots)}
    assert max(abs(v) for v in per_item.values()) <= 2 and sum(per_item.values()) in range(-4, 5)
    # Overall: every system left in 50% ± 3% of its appearances.
    appearances = Counter(systems[r] for s in slots for r in s.response_order)
    assert all(abs(left_overall[name]) / appearances[name] <= 0.06 for name in appearances)


# --- storing choices -----------------------------------------------------------------------------

def test_choices_are_stored_once_with_the_sides_shown_and_replaced_when_changed(make_study):
    study = pairwise(make_study)
    assignment = start(study, "w1", seed=1)
    slot = assignment.assignment_items.order_by("position").first()
    answers = {"readability": {"choice": "left", "reason": "  more fluent "}, "coherence": {"choice": "tie"}}
    assert answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=3.5) == 2
    assert answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=9) == 2
    stored = {c.criterion.name: c for c in Comparison.objects.filter(assignment=assignment)}
    assert len(stored) == 2 and stored["readability"].reason == "more fluent"
    assert [stored["readability"].left_id, stored["readability"].right_id] == slot.response_order
    assert stored["readability"].seconds == 3.5  # the repeated submit changed nothing
    answers["coherence"] = {"choice": "right"}
    answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    assert Comparison.objects.get(assignment=assignment, criterion__name="coherence").choice == "right"
    assert Comparison.objects.filter(assignment=assignment).count() == 2 and not Rating.objects.exists()
    slot.refresh_from_db()
    assert slot.answered_at is not None


@pytest.mark.parametrize(("config", "answers", "key", "message"), [
    ({"allow_tie": False}, {"readability": {"choice": "tie"}, "coherence": {"choice": "left"}},
     "choice-readability", "allows no ties"),
    ({}, {"readability": {"choice": "left"}}, "choice-coherence", "pick the better response"),
    ({}, {"readability": {"choice": "up"}, "coherence": {"choice": "left"}}, "choice-readability", "must be one of"),
    ({"reason": "required"}, {"readability": {"choice": "left", "reason": " "}, "coherence": {"choice": "left",
                                                                                             "reason": "ok"}},
     "reason-readability", "give a short reason"),
    ({"reason_max_length": 5}, {"readability": {"choice": "left", "reason": "far too long"},
                                "coherence": {"choice": "left"}}, "reason-readability", "5 characters"),
    ({"reason": "off"}, {"readability": {"choice": "left", "reason": "why not"}, "coherence": {"choice": "left"}},
     "reason-readability", "does not ask for reasons"),
    ({}, {"readability": {"choice": "left", "reason": "nul\x00"}, "coherence": {"choice": "left"}},
     "reason-readability", "control characters"),
    ({}, {"readability": {"choice": "left"}, "coherence": {"choice": "left"}, "fluency": {"choice": "left"}},
     "choice-fluency", "unknown criterion"),
])
def test_bad_answers_name_the_field_and_store_nothing(make_study, config, answers, key, message):
    study = pairwise(make_study, **config)
    assignment = start(study, "w1", seed=1)
    slot = assignment.assignment_items.first()
    with pytest.raises(ValidationError) as error:
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    assert message in " ".join(error.value.message_dict[key])
    assert not Comparison.objects.exists()
    slot.refresh_from_db()
    assert slot.answered_at is None


def test_a_finished_assignment_submits_and_takes_no_more_choices(make_study):
    study = pairwise(make_study)
    assignment = start(study, "w1", seed=1)
    answer_all(assignment)
    answering.assignment_submit(assignment=assignment)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED and assignment.completion_code
    with pytest.raises(StudyStateError):
        answer_all(assignment)


def test_publishing_refuses_items_that_do_not_show_two_responses(make_study):
    study = pairwise(make_study, publish=False)
    item = study.items.first()
    item.item_responses.last().delete()
    with pytest.raises(StudyStateError, match="exactly two responses"):
        authoring.study_publish(study=study)


# --- pages, report, API, export ------------------------------------------------------------------

def form_token_in(page: str) -> str:
    return re.search(r'name="form_token" value="([0-9a-f]+)"', page).group(1)


def enter(client, study):
    response = client.get(f"/r/{study.slug}/?PROLIFIC_PID=fbeae7c18667b6987518f3ae&STUDY_ID=3696ad59777e09d5f2daacb5&SESSION_ID=ad667b78ba8ed0275868fcc1")
    token = response["Location"].split("/")[3]
    page = client.get(f"/r/a/{token}/").content.decode()
    client.post(f"/r/a/{token}/", {"agree": "yes", "form_token": form_token_in(page)})
    return Assignment.objects.get(token=token)


def test_the_rater_page_shows_two_sides_and_stores_a_choice(make_study):
    study = pairwise(make_study, reason="required", platform="prolific")
    client = Client()
    assignment = enter(client, study)
    slot = assignment.assignment_items.get(position=0)
    texts = system_of(slot.response_order)
    page = client.get(f"/r/a/{assignment.token}/items/0/").content.decode()
    assert 'name="choice-readability" value="left"' in page and 'name="choice-coherence" value="tie"' in page
    assert 'name="reason-readability"' in page and "rater_pairwise.js" in page and 'data-side="left"' in page
    assert "Which response is more readable?" in page  # pairwise studies ask comparative questions by default
    shown = [escape(Response.objects.get(pk=r).text) for r in slot.response_order]
    assert page.index(shown[0]) < page.index(shown[1])  # left first; the page names no response id
    assert "data-response" not in page
    assert texts  # the two responses exist
    url = f"/r/a/{assignment.token}/items/0/"
    token = form_tokens.form_token(assignment.token, "item")
    refused = client.post(url, {"choice-readability": "left", "reason-readability": "", "choice-coherence": "right",
                                "reason-coherence": "clearer", "form_token": token})
    assert refused.status_code == 400
    body = refused.content.decode()
    assert "give a short reason" in body and "clearer" in body and not Comparison.objects.exists()
    stored = client.post(url, {"choice-readability": "left", "reason-readability": "fluent", "choice-coherence": "right",
                               "reason-coherence": "clearer", "form_token": token})
    assert stored.status_code == 200 and "Item 2 of" in stored.content.decode()
    assert Comparison.objects.filter(assignment=assignment).count() == 2
    again = client.get(url).content.decode()
    assert re.search(r'value="right"\s+checked', again) and "clearer" in again


def finished_study(make_study, n_raters=6, contrarian=False):
    """Raters prefer the human reference, then hred; seq2seq and thred tie. A contrarian first rater
    answers the other way round (so that every system wins and loses: the Bradley–Terry MLE exists)."""
    study = pairwise(make_study)

    def prefer_human(slot, criterion):
        left, right = (systems[r] for r in slot.response_order)
        for best in ("human", "hred"):
            if best in (left, right):
                choice = "left" if left == best else "right"
                return {"left": "right", "right": "left"}[choice] if contrarian and i == 0 else choice
        return "tie"

    for i in range(n_raters):
        assignment = start(study, f"w{i}", seed=i)
        systems = system_of({r for s in assignment.assignment_items.all() for r in s.response_order})
        answer_all(assignment, prefer_human, reason="=HYPERLINK(1)")
        answering.assignment_submit(assignment=assignment)
    return study


def test_the_report_shows_win_rates_strengths_position_bias_and_alpha(make_study, user):
    study = finished_study(make_study, contrarian=True)
    client = Client()
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/report/")
    assert page.status_code == 200
    body = page.content.decode()
    for marker in ('data-testid="win-rates"', 'data-testid="side-balance"', 'data-testid="bt-strengths"', 'data-testid="position-bias"',
                   'data-testid="pairwise-alpha"', "Pairwise comparison"):
        assert marker in body
    assert "No submitted ratings yet" not in body and "Table 9" not in body  # the Likert sections stay away
    figure = client.get(f"/studies/{study.slug}/report/figures/pairwise-{study.pk}-readability.svg")
    assert figure.status_code == 200 and figure["Content-Type"] == "image/svg+xml" and b"<svg" in figure.content
    assert client.get(f"/studies/{study.slug}/report/figures/pairwise-{study.pk + 99}-readability.svg").status_code == 404


def test_the_api_report_carries_the_pairwise_analysis(make_study, api):
    study = finished_study(make_study)
    data = api.get(f"/api/studies/{study.slug}/report/").json()
    (entry,) = data["pairwise"]
    assert entry["slug"] == study.slug and {c["criterion"] for c in entry["criteria"]} == set(CRITERIA)
    readability = next(c for c in entry["criteria"] if c["criterion"] == "readability")
    human_vs_hred = next(r for r in readability["win_rates"] if {r["system_a"], r["system_b"]} == {"hred", "human"})
    assert human_vs_hred["wins_a"] == 0 and human_vs_hred["ties"] == 0  # hred < human by name: a = hred, loses all
    bt = readability["bt"]  # finite under the prior, and the page says why the MLE is not
    assert readability["bt_error"] is None and not bt["mle_exists"] and "never lost: human" in bt["note"]
    assert readability["position_bias"]["decisive"] == readability["n"] - readability["position_bias"]["ties"]
    assert readability["agreement"]["alpha"] == pytest.approx(1.0)
    assert len(readability["rater_sides"]) == 6 and all(r["rater"].startswith("R-") for r in readability["rater_sides"])


def test_the_export_has_one_row_per_judgment_with_the_winner(make_study, user):
    study = finished_study(make_study, n_raters=2)
    client = Client()
    client.force_login(user)
    response = client.get(f"/studies/{study.slug}/export.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == Comparison.objects.count() == 2 * 12 * 2
    for row in rows:
        assert row["winner_system"] == {"left": row["left_system"], "right": row["right_system"], "tie": ""}[row["choice"]]
        assert row["reason"] == "'=HYPERLINK(1)"  # spreadsheet-safe
        assert row["rater"] != "P1" and row["study"] == study.slug
    assert Study.objects.get(pk=study.pk).design == "pairwise"


def test_create_build_and_publish_a_pairwise_study_through_the_api(api, corpus, user):
    authoring.experiment_create(owner=user, title="Pilot", slug="pilot")
    created = api.post("/api/studies/create/", {
        "experiment": "pilot", "title": "A/B", "design": "pairwise", "raters_per_item": 3, "items_per_assignment": 4,
        "design_config": {"allow_tie": False, "pairs_per_conversation": 2, "schedule_seed": 7}}, format="json")
    assert created.status_code == 201, created.json()
    slug = created.json()["slug"]
    assert created.json()["design_config"]["allow_tie"] is False
    built = api.post(f"/api/studies/{slug}/items/build/", {"corpus": corpus.slug, "systems": ["seq2seq", "hred"],
                                                            "reference_system": "human"}, format="json")
    assert built.json() == {"items": 6 * 2}
    items = api.get(f"/api/studies/{slug}/items/?limit=50").json()["results"]
    pairs = Counter(tuple(sorted(r["system"] for r in item["responses"])) for item in items)
    assert sum(pairs.values()) == 12 and set(pairs.values()) == {4}  # 3 pairs, 4 conversations each
    assert api.post(f"/api/studies/{slug}/publish/").json()["status"] == "published"
    bad = api.post("/api/studies/create/", {"experiment": "pilot", "title": "x", "design": "pairwise",
                                            "design_config": {"reason": "always"}}, format="json")
    assert bad.status_code == 400 and "design_config.reason" in problem_fields(bad)


def test_the_study_form_creates_a_pairwise_study_and_the_preview_shows_the_pair(user, corpus):
    client = Client()
    client.force_login(user)
    experiment = authoring.experiment_create(owner=user, title="E", slug="e")
    response = client.post("/experiments/e/studies/new/", {
        "title": "Pairs", "design": "pairwise", "criteria": "readability", "raters_per_item": 4,
        "items_per_assignment": 5, "pairwise_reason": "required", "pairwise_pairs_per_conversation": 1,
        "platform": "invite"})
    study = experiment.studies.get()
    assert response.status_code == 302 and study.design == "pairwise"
    assert (study.design_config["allow_tie"], study.design_config["reason"], study.design_config["pairs_per_conversation"]) \
        == (False, "required", 1)  # an unticked box is "no ties"
    authoring.study_items_build(study=study, corpus=corpus)
    assert study.items.count() == 6
    detail = client.get(f"/studies/{study.slug}/")
    assert detail.status_code == 200
    preview = client.get(f"/studies/{study.slug}/preview/").content.decode()
    assert preview.count('class="card response side-') == 2 and 'value="tie"' not in preview and "(required)" in preview


def test_the_report_spreadsheet_has_the_pairwise_tables(make_study, user):
    import pandas as pd

    study = finished_study(make_study, contrarian=True)
    client = Client()
    client.force_login(user)
    response = client.get(f"/studies/{study.slug}/report.xlsx")
    sheets = pd.read_excel(io.BytesIO(response.content), sheet_name=None)
    assert {"Pairwise win rates", "Bradley-Terry", "Position bias, alpha"} <= set(sheets)
    assert len(sheets["Pairwise win rates"]) == 2 * 6 and len(sheets["Bradley-Terry"]) == 2 * 4
    assert set(sheets["Bradley-Terry"]["system"]) == {"human", "hred", "seq2seq", "thred"}


@pytest.mark.parametrize(("pick_gold", "passed"), [(True, True), (False, False)])
def test_attention_checks_score_the_chosen_response_whatever_its_side(make_study, pick_gold, passed):
    from studies.authoring import checks

    study = pairwise(make_study, publish=False)
    gold = checks.check_item_create(study=study, kind="gold", context="A: Where do you live?\nB: In a town.",
                                    responses=["I live in Leeds, near the station.", "Purple bananas."],
                                    rules=[{"greater": 1, "than": 2}])
    checks.study_checks_configure(study=study, per_assignment=1, min_pass_rate=1.0)
    with pytest.raises(ValidationError, match="two responses per item"):
        checks.check_item_create(study=study, kind="gold", context="A: Hi", responses=["a", "b", "c"],
                                 rules=[{"greater": 1, "than": 2}])
    authoring.study_publish(study=study)
    assignment = start(study, "w1", seed=3)
    good = gold.item_responses.get(position=0).response_id

    def choose(slot, criterion):
        if slot.item_id != gold.pk:
            return "tie"
        gold_left = slot.response_order[0] == good
        return "left" if gold_left == pick_gold else "right"

    answer_all(assignment, choose)
    done = answering.assignment_submit(assignment=assignment)
    assert (done.checks_shown, done.checks_passed, done.checks_failed) == (1, int(passed), not passed)
    assert not Comparison.objects.filter(item_id=gold.pk).exclude(assignment=assignment).exists()
    # Check items never enter the analysis or the export.
    from studies.designs.pairwise_report import comparisons_frame
    assert gold.pk not in set(comparisons_frame(Study.objects.filter(pk=study.pk))["item"])


def test_the_pairwise_report_shows_its_controls_once(make_study, user):
    """"Recompute / Reliability CSV / XLSX" twice on the pairwise report: each control once,
    on the study's report and on its experiment's, with and without flagged raters left out."""
    study = finished_study(make_study)
    client = Client()
    client.force_login(user)
    for url in (f"/studies/{study.slug}/report/", f"/studies/{study.slug}/report/?exclude_flagged=1",
                f"/experiments/{study.experiment.slug}/report/"):
        body = client.get(url).content.decode()
        for control in ("without flagged raters", ">Include all raters<", ">Reliability CSV<", ">Reliability XLSX<",
                        ">Show worker ids<"):
            assert body.count(control) <= 1, (url, control, body.count(control))
        assert body.count(">Reliability CSV<") == 1, url
        assert "p = p" not in body  # "p = p = 1.000"
    assert 'data-testid="position-bias"' in body and "exact binomial test against 0.5: p" in body
