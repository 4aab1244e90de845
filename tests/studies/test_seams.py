"""Where the features meet: duplicate, edit, browse, plan, live panel, study page, crowd simulation
and the experiment report for the bws_tuples and pairwise designs and for dialogue-unit studies."""

import html
import io
import json
import math
import random
import re

import numpy as np
import openpyxl
import pandas as pd
import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from studies.authoring import editing, planning
from studies.authoring import services as authoring
from studies.designs import DESIGNS, UNITS, design_for, unit_for
from studies.designs.ratings import RatingsDesign
from studies.errors import AssignmentRefused
from studies.models import (
    Assignment,
    BestWorstChoice,
    Comparison,
    Conversation,
    Rating,
    Study,
    StudyItemConversation,
    StudyItemResponse,
)
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.reports import browser_selectors
from tests.studies import test_dialogue_study
from tests.studies.test_pairwise import answer_all as pairwise_answer_all

fed_corpus = test_dialogue_study.fed_corpus  # a FED dialogue-level corpus (fixture), shared with that module

pytestmark = pytest.mark.django_db
CRITERIA = ("readability", "coherence")
# The designs as the registry has them, not hand-picked: a new design joins these tests by registering.
RESPONSE_DESIGNS = [k for k, d in DESIGNS.items() if d.unit_problem(unit_for("response")) is None]
DIALOGUE_DESIGNS = [k for k, d in DESIGNS.items() if d.unit_problem(unit_for("dialogue")) is None]
REFUSED_ON_DIALOGUE = [k for k in DESIGNS if k not in DIALOGUE_DESIGNS]
# judgments that are not Ratings, on responses (ACUTE-Eval's whole-conversation choices: tests/studies/test_acute*.py)
CHOICE_DESIGNS = [k for k, d in DESIGNS.items() if not isinstance(d, RatingsDesign) and k in RESPONSE_DESIGNS]
DIALOGUE_RATING_DESIGNS = [k for k in DIALOGUE_DESIGNS if isinstance(DESIGNS[k], RatingsDesign)]
RUNS = [(d, u) for u in UNITS for d in DESIGNS if design_for(d).unit_problem(unit_for(u)) is None]


def dialogue_config(design: str) -> dict:
    """A dialogue study's config: ranking designs rank three whole dialogues per screen."""
    return {"tuple_size": 3} if design_for(design).ranks else {}


def start(study, name, seed=None):
    return rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=name), seed=seed
    )


def rate_tuples(study, raters=2):
    for i in range(raters):
        assignment = start(study, f"t{i}")
        for slot in assignment.assignment_items.all():
            order = list(slot.response_order)
            answering.ratings_record(
                assignment=assignment,
                item_id=slot.item_id,
                answers={c: {"best": order[0], "worst": order[-1]} for c in CRITERIA},
            )
        answering.assignment_submit(assignment=assignment)


def rate_pairs(study, raters=2):
    for i in range(raters):
        assignment = start(study, f"p{i}", seed=i)
        pairwise_answer_all(assignment, choose=lambda slot, criterion: "left" if slot.position % 2 else "right")
        answering.assignment_submit(assignment=assignment)


def rate_likert(study, raters=2, prefix="l"):
    rng = np.random.default_rng(5)
    for i in range(raters):
        assignment = start(study, f"{prefix}{i}", seed=i)
        for slot in assignment.assignment_items.all():
            answering.ratings_record(
                assignment=assignment,
                item_id=slot.item_id,
                answers={c: {r: int(rng.integers(1, 6)) for r in slot.response_order} for c in CRITERIA},
            )
        answering.assignment_submit(assignment=assignment)


def dialogue_study(user, corpus_slug, design="likert", publish=True, **config):
    experiment = authoring.experiment_create(owner=user, title=f"Dialogue {design}")
    study = authoring.study_create(
        experiment=experiment,
        title=f"dialogue {design}",
        design=design,
        unit="dialogue",
        design_config=config or None,
        raters_per_item=2,
        items_per_assignment=8,
    )
    corpus = Conversation.objects.filter(corpus__slug=corpus_slug).first().corpus
    extra = {"reference_conversation": "fed-d0"} if design_for(design).anchored else {}
    authoring.study_items_build(study=study, corpus=corpus, seed=3, **extra)
    if publish:
        authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def items_signature(study):
    return [
        (
            i.position,
            i.conversation_id,
            i.reference_response_id,
            i.reference_conversation_id,
            i.reference_value,
            list(i.item_responses.order_by("position").values_list("response_id", "position")),
            list(i.item_conversations.order_by("position").values_list("conversation_id", "position")),
        )
        for i in study.items.order_by("position")
    ]


# --- duplicate and edit ---------------------------------------------------------------------------


@pytest.mark.parametrize("design", CHOICE_DESIGNS)
def test_duplicating_a_tuples_or_pairwise_study_copies_its_items(make_study, design):
    study = make_study(design)
    copy = editing.study_duplicate(study=study)
    assert (copy.design, copy.design_config, copy.unit) == (study.design, study.design_config, study.unit)
    assert items_signature(copy) == items_signature(study) and copy.items.exists()
    authoring.study_publish(study=copy)  # the copy is complete: it publishes as it is


@pytest.mark.parametrize(("design", "config"), [(d, dialogue_config(d)) for d in DIALOGUE_DESIGNS])
def test_duplicating_a_dialogue_study_keeps_the_unit_its_anchor_and_its_dialogues(user, fed_corpus, design, config):
    study = dialogue_study(user, fed_corpus, design, **config)
    copy = editing.study_duplicate(study=study)
    assert copy.unit == "dialogue"
    assert list(copy.criteria.values_list("name", "question")) == list(study.criteria.values_list("name", "question"))
    assert items_signature(copy) == items_signature(study) and copy.items.exists()
    if design == "rme":
        assert all(i.reference_conversation_id for i in copy.items.all())
    if design == "bws":
        assert (
            StudyItemConversation.objects.filter(item__study=copy).count()
            == StudyItemConversation.objects.filter(item__study=study).count()
            > 0
        )
    authoring.study_publish(study=copy)


@pytest.mark.parametrize(("old", "new"), [("likert", "pairwise"), ("pairwise", "bws_tuples"), ("bws_tuples", "likert")])
def test_a_draft_changes_design_to_and_from_tuples_and_pairwise_and_builds_again(make_study, corpus, old, new):
    study = make_study(old, publish=False)
    study, notes = editing.study_update(study=study, values={"design": new, "design_config": {}})
    study.refresh_from_db()
    assert study.design == new and study.items.count() == 0 and notes
    assert StudyItemResponse.objects.filter(item__study=study).count() == 0
    authoring.study_items_build(
        study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"], reference_system="human"
    )
    authoring.study_publish(study=study)
    assert study.items.exists()


def edit_form_post(page: str) -> dict:
    """What the browser sends back from the edit form as rendered (inputs, selected options, textareas)."""
    data = {}
    page = page[page.index('data-testid="study-edit-form"') :]
    page = page[: page.index("</form>")]
    for tag in re.findall(r"<input[^>]*>", page):
        name, value = re.search(r'name="([^"]+)"', tag), re.search(r'value="([^"]*)"', tag)
        if name is None or tag.find("disabled") >= 0:
            continue
        if re.search(r'type="(radio|checkbox)"', tag) and "checked" not in tag:
            continue
        data[name.group(1)] = html.unescape(value.group(1)) if value else ""
    for name, body in re.findall(r'<textarea[^>]*name="([^"]+)"[^>]*>(.*?)</textarea>', page, re.S):
        data[name] = html.unescape(body)
    for name, body in re.findall(r'<select[^>]*name="([^"]+)"[^>]*>(.*?)</select>', page, re.S):
        chosen = re.search(r'<option value="([^"]*)"[^>]*selected', body)
        if chosen:
            data[name] = html.unescape(chosen.group(1))
    return data


@pytest.mark.parametrize("design", CHOICE_DESIGNS)
def test_the_edit_form_of_a_tuples_or_pairwise_study_renders_and_saves_unchanged(client, user, make_study, design):
    study = make_study(design)
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/edit/")
    assert page.status_code == 200
    config = dict(study.design_config)
    data = edit_form_post(page.content.decode())
    data["instructions"] = "New words"
    saved = client.post(f"/studies/{study.slug}/edit/", data)
    assert saved.status_code == 302, saved.content.decode()[:3000]
    study.refresh_from_db()
    assert study.instructions == "New words" and study.design_config == config and study.design == design


@pytest.mark.parametrize("design", DIALOGUE_DESIGNS)
def test_the_edit_form_of_a_dialogue_study_shows_the_unit_fixed_and_saves(client, user, fed_corpus, design):
    study = dialogue_study(user, fed_corpus, design, publish=False, **dialogue_config(design))
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/edit/")
    assert page.status_code == 200 and "dialogue" in page.content.decode().lower()
    units = re.findall(r'<input[^>]*name="unit"[^>]*>', page.content.decode())
    assert units and all("disabled" in tag for tag in units)  # fixed: chosen when the study was created
    assert any('value="dialogue"' in tag and "checked" in tag for tag in units)
    data = edit_form_post(page.content.decode())
    data["title"] = "Renamed dialogue study"
    saved = client.post(f"/studies/{study.slug}/edit/", data)
    assert saved.status_code == 302, saved.content.decode()[:3000]
    study.refresh_from_db()
    assert study.title == "Renamed dialogue study" and study.unit == "dialogue" and study.items.exists()


# --- study page, browser, planning -----------------------------------------------------------------


@pytest.mark.parametrize("design", RESPONSE_DESIGNS)
def test_the_study_page_and_the_browser_render_for_each_response_design_with_judgments(
    client, user, make_study, design
):
    study = make_study(design, raters_per_item=2, items_per_assignment=6)
    if design == "bws_tuples":
        rate_tuples(study)
    elif design == "pairwise":
        rate_pairs(study)
    client.force_login(user)
    assert client.get(f"/studies/{study.slug}/").status_code == 200
    assert client.get(f"/studies/{study.slug}/live/panel/").status_code == 200
    page = client.get(f"/studies/{study.slug}/browse/")
    assert page.status_code == 200
    plan = planning.pay_plan(study)
    assert plan["places"] == math.ceil(study.items.count() * 2 / min(6, study.items.count()))


def test_the_browser_shows_best_and_worst_picks_of_a_tuples_study(make_study):
    study = make_study("bws_tuples", raters_per_item=2, items_per_assignment=48)
    rate_tuples(study, raters=1)
    page, rows = browser_selectors.item_page(study)
    choice = BestWorstChoice.objects.filter(assignment__study=study).order_by("item__position").first()
    row = next(r for r in rows if r.item.pk == choice.item_id)
    line = next(line for line in row.ratings if line["criterion"] == choice.criterion.name)
    ids = [r["id"] for r in row.responses]
    assert line["cells"][ids.index(choice.best_id)] == "best" and line["cells"][ids.index(choice.worst_id)] == "worst"
    # The rater filter finds the items a rater judged.
    rater_id = choice.assignment.rater_id
    _, only = browser_selectors.item_page(study, rater=rater_id)
    assert only and all(r.ratings for r in only)


def test_the_browser_shows_the_choice_of_a_pairwise_study(make_study):
    study = make_study("pairwise", raters_per_item=2, items_per_assignment=6)
    rate_pairs(study, raters=1)
    comparison = Comparison.objects.filter(assignment__study=study).first()
    _, rows = browser_selectors.item_page(study, rater=comparison.assignment.rater_id)
    row = next(r for r in rows if r.item.pk == comparison.item_id)
    line = next(line for line in row.ratings if line["criterion"] == comparison.criterion.name)
    ids = [r["id"] for r in row.responses]
    cells = dict(zip(ids, line["cells"], strict=True))
    winner = {"left": comparison.left_id, "right": comparison.right_id}[comparison.choice]
    assert cells[winner] == "better" and sorted(map(str, cells.values())) == ["better", "worse"]


@pytest.mark.parametrize("design", DIALOGUE_RATING_DESIGNS)
def test_the_browser_and_study_page_show_dialogue_ratings(client, user, fed_corpus, design):
    study = dialogue_study(user, fed_corpus, design, **dialogue_config(design))
    assignment = start(study, "d0", seed=1)
    for slot in assignment.assignment_items.all():
        answering.ratings_record(
            assignment=assignment,
            item_id=slot.item_id,
            answers={c: {cid: i + 1 for i, cid in enumerate(slot.response_order)} for c in CRITERIA},
        )
    answering.assignment_submit(assignment=assignment)
    _, rows = browser_selectors.item_page(study)
    rating = Rating.objects.filter(assignment=assignment, criterion__name="coherence").first()
    row = next(r for r in rows if r.item.pk == rating.item_id)
    line = next(line for line in row.ratings if line["criterion"] == "coherence")
    shown = [r["id"] for r in row.responses]
    assert rating.conversation_id in shown and line["cells"][shown.index(rating.conversation_id)] == (
        rating.value if rating.value is not None else rating.rank
    )
    client.force_login(user)
    assert client.get(f"/studies/{study.slug}/").status_code == 200
    assert client.get(f"/studies/{study.slug}/live/panel/").status_code == 200
    page = client.get(f"/studies/{study.slug}/browse/")
    assert page.status_code == 200 and "fed-d" in page.content.decode()
    for url in ("report/", "report.csv", "report.xlsx", "export.csv", "export.xlsx"):
        assert client.get(f"/studies/{study.slug}/{url}").status_code == 200, url


@pytest.mark.parametrize(("design", "words"), [("bws_tuples", {"best", "worst"}), ("pairwise", {"better", "worse"})])
def test_the_browser_page_and_api_show_choices_of_tuples_and_pairwise_studies(
    client, api, user, make_study, design, words
):
    study = make_study(design, raters_per_item=2, items_per_assignment=48)
    (rate_tuples if design == "bws_tuples" else rate_pairs)(study, raters=1)
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/browse/?flagged=0").content.decode()
    cells = set(re.findall(r'<td data-testid="judgment">([^<]*)</td>', page))
    assert words <= cells
    body = api.get(f"/api/studies/{study.slug}/browse/")
    assert body.status_code == 200
    lines = [line for item in body.json()["results"] for line in item["ratings"]]
    assert lines and all(set(line["choices"]) - {None} <= words | {"tie"} for line in lines)
    assert all(set(line["choices"]) & words for line in lines) and all(v is None for ln in lines for v in ln["values"])


def test_the_browser_api_names_the_dialogues_of_a_dialogue_study(api, user, fed_corpus):
    study = dialogue_study(user, fed_corpus, "likert")
    rate_likert(study, raters=1)
    body = api.get(f"/api/studies/{study.slug}/browse/").json()
    item = body["results"][0]
    assert [r["text"] for r in item["responses"]] == [item["conversation"]]
    assert item["ratings"] and all(isinstance(line["values"][0], float) for line in item["ratings"])


# --- live reliability panel -------------------------------------------------------------------------


def test_the_live_panel_of_a_pairwise_study_shows_agreement_not_no_ratings(client, user, make_study):
    from studies.designs.pairwise_report import pairwise_report

    study = make_study("pairwise", raters_per_item=3, items_per_assignment=48)
    rate_pairs(study, raters=3)
    client.force_login(user)
    live = client.get(f"/studies/{study.slug}/live/panel/?fragment=1").content.decode()
    assert "No submitted ratings yet" not in live and 'data-testid="live-pairwise"' in live
    expected = {
        c["criterion"]: c["agreement"] for c in pairwise_report(Study.objects.filter(pk=study.pk))[0]["criteria"]
    }
    for criterion, agreement in expected.items():
        row = re.search(rf'<tr data-testid="live-pairwise-{criterion}">(.*?)</tr>', live, re.S).group(1)
        shown = "–" if agreement["alpha"] is None else f"{agreement['alpha']:.3f}"
        assert shown in row, (row, agreement)


def test_the_pairwise_live_panel_reads_the_agreement_without_the_bradley_terry_bootstrap(user, make_study, monkeypatch):
    from django.core.cache import cache

    from studies.analysis import pairwise
    from studies.designs import pairwise_report as pairwise_selectors

    study = make_study("pairwise", raters_per_item=3, items_per_assignment=48)
    rate_pairs(study, raters=3)
    report = pairwise_selectors.pairwise_report(Study.objects.filter(pk=study.pk))[0]["criteria"]

    def no_bootstrap(*args, **kwargs):
        raise AssertionError("the live panel ran the Bradley-Terry bootstrap")

    monkeypatch.setattr(pairwise, "bradley_terry_bootstrap", no_bootstrap)
    cache.clear()  # the report above is cached: the panel must not need it
    live = pairwise_selectors.live_agreement(study)
    assert [(row["criterion"], row["n"], row["raters"], row["alpha"], row["units"]) for row in live] == [
        (c["criterion"], c["n"], c["raters"], c["agreement"]["alpha"], c["agreement"]["units"]) for c in report]
    assert live and all(row["n"] > 0 for row in live)


def test_the_live_panel_is_recomputed_when_a_stored_ab_choice_changes(user, make_study):
    """A choice edited in place (no new submit, no status change) must still change the cache version."""
    from studies.designs import pairwise_report as pairwise_selectors
    from studies.models import Comparison
    from studies.reports import live_selectors

    study = make_study("pairwise", raters_per_item=3, items_per_assignment=48)
    rate_pairs(study, raters=3)
    before = live_selectors.live_reliability(study)["pairwise"]
    first_rater = Comparison.objects.filter(assignment__study=study).order_by("assignment_id").first().assignment_id
    for comparison in Comparison.objects.filter(assignment_id=first_rater):
        comparison.choice = "tie"
        comparison.save(update_fields=["choice", "updated_at"])
    after = live_selectors.live_reliability(study)["pairwise"]
    assert after == pairwise_selectors.live_agreement(study) and after != before


def test_the_live_panel_of_a_dialogue_study_shows_iccs(client, user, fed_corpus):
    study = dialogue_study(user, fed_corpus, "likert")
    rate_likert(study, raters=2)
    client.force_login(user)
    live = client.get(f"/studies/{study.slug}/live/panel/?fragment=1").content.decode()
    assert 'data-testid="live-readability"' in live and 'data-testid="live-coherence"' in live


# --- crowd simulation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("design", ["bws_tuples", "pairwise"])
def test_simulated_raters_complete_a_tuples_or_pairwise_study(make_study, design):
    study = make_study(design, raters_per_item=2, items_per_assignment=3, platform="prolific")
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "simulate_crowd", study.slug, "--raters", "2", "--platform", "prolific", "--seed", "7", stdout=out, stderr=err
    )
    assert "2/2 simulated raters completed" in out.getvalue(), (out.getvalue(), err.getvalue())
    model = BestWorstChoice if design == "bws_tuples" else Comparison
    assert model.objects.filter(assignment__study=study).count() == 2 * 3 * len(CRITERIA)
    assert set(Assignment.objects.filter(study=study).values_list("status", flat=True)) == {"submitted"}


@pytest.mark.parametrize("design", DIALOGUE_RATING_DESIGNS)
def test_simulated_raters_complete_a_dialogue_study(user, fed_corpus, design):
    study = dialogue_study(user, fed_corpus, design, publish=False, **dialogue_config(design))
    Study.objects.filter(pk=study.pk).update(platform="prolific", items_per_assignment=2)
    authoring.study_publish(study=Study.objects.get(pk=study.pk))
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "simulate_crowd", study.slug, "--raters", "2", "--platform", "prolific", "--seed", "3", stdout=out, stderr=err
    )
    assert "2/2 simulated raters completed" in out.getvalue(), (out.getvalue(), err.getvalue())
    ratings = Rating.objects.filter(assignment__study=study)
    assert ratings.exists() and not ratings.filter(conversation__isnull=True).exists()


def test_the_simulated_rater_never_picks_the_same_response_as_best_and_worst():
    from crowd.simulation import fill, parse_forms

    radios = "".join(
        f'<input type="radio" name="r0-{kind}-coherence" value="{v}">' for kind in ("best", "worst") for v in (11, 12)
    )
    form = parse_forms(f'<form method="post" action="/x/">{radios}</form>')[0]
    picks = [fill(form, random.Random(seed)) for seed in range(40)]
    assert all(p["r0-best-coherence"] != p["r0-worst-coherence"] for p in picks)
    assert {p["r0-best-coherence"] for p in picks} == {"11", "12"}


# --- an experiment mixing designs: report page, figures, API, downloads ------------------------------


def test_an_experiment_mixing_likert_pairwise_and_tuples_reports_and_exports_every_condition(
    client, api, user, make_study
):
    experiment = authoring.experiment_create(owner=user, title="Three designs")
    likert = make_study("likert", raters_per_item=2, items_per_assignment=6, experiment=experiment)
    pairs = make_study("pairwise", raters_per_item=2, items_per_assignment=48, experiment=experiment)
    tuples = make_study("bws_tuples", raters_per_item=2, items_per_assignment=48, experiment=experiment)
    rate_likert(likert)
    rate_pairs(pairs)
    rate_tuples(tuples)
    client.force_login(user)
    page = client.get(f"/experiments/{experiment.slug}/report/")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'id="bws-tuples"' in text and "pairwise-alpha" in text
    for url in re.findall(r'<img src="([^"]+\.svg[^"]*)"', text):
        assert client.get(html.unescape(url)).status_code == 200, url
    body = api.get(f"/api/experiments/{experiment.slug}/report/")
    assert body.status_code == 200
    report = body.json()
    assert {e["condition"] for e in report["bws_tuples"]} == {tuples.slug}
    assert [e["slug"] for e in report["pairwise"]] == [pairs.slug]
    assert likert.slug in {row["condition"] for row in report["tables"]["table1"]}
    csv_report = client.get(f"/experiments/{experiment.slug}/report.csv")
    assert csv_report.status_code == 200 and likert.slug in csv_report.content.decode()
    xlsx = client.get(f"/experiments/{experiment.slug}/report.xlsx")
    assert xlsx.status_code == 200
    sheets = openpyxl.load_workbook(io.BytesIO(xlsx.content), read_only=True).sheetnames
    assert "BWS tuples split-half" in sheets and any("airwise" in s or "Position bias" in s for s in sheets)
    exported = {}
    for fmt in ("csv", "jsonl", "xlsx"):
        response = client.get(f"/experiments/{experiment.slug}/export.{fmt}")
        assert response.status_code == 200, fmt
        exported[fmt] = b"".join(response.streaming_content) if response.streaming else response.content
    frame = pd.read_csv(io.StringIO(exported["csv"].decode()))
    assert set(frame["study"]) == {likert.slug, pairs.slug, tuples.slug}
    judged = frame[frame["design"] == "pairwise"]
    comparisons = Comparison.objects.filter(assignment__study=pairs)
    assert len(judged) == comparisons.count() and judged["value"].isna().all() and judged["response"].isna().all()
    assert set(judged["choice"]) <= {"left", "right", "tie"} and judged["left_system"].notna().all()
    assert frame.loc[frame["design"] == "likert", "choice"].isna().all()
    lines = [json.loads(line) for line in exported["jsonl"].decode().splitlines()]
    assert len(lines) == len(frame) and sum(line["design"] == "pairwise" for line in lines) == len(judged)
    sheet = openpyxl.load_workbook(io.BytesIO(exported["xlsx"]), read_only=True)["ratings"]
    rows = list(sheet.iter_rows(values_only=True))
    assert list(rows[0]) == list(frame.columns) and len(rows) - 1 == len(frame)


# --- the demo -----------------------------------------------------------------------------------------


def test_the_demo_loads_and_every_new_page_works_on_it(client):
    from studies.authoring.demo import DEMO_EXPERIMENT, demo_user

    call_command("load_demo", stdout=io.StringIO())
    client.force_login(demo_user())
    studies = list(Study.objects.filter(experiment__slug=DEMO_EXPERIMENT))
    assert len(studies) == 4
    for study in studies:
        for url in (
            f"/studies/{study.slug}/",
            f"/studies/{study.slug}/live/panel/",
            f"/studies/{study.slug}/edit/",
            f"/studies/{study.slug}/browse/",
            f"/studies/{study.slug}/report/",
            f"/studies/{study.slug}/export.xlsx",
        ):
            assert client.get(url).status_code == 200, url
        copy = editing.study_duplicate(study=study)
        assert copy.items.count() == study.items.count()
    assert client.get(f"/experiments/{DEMO_EXPERIMENT}/report/").status_code == 200


# --- dialogue units and the choice designs ----------------------------------------------------------


@pytest.mark.parametrize("design", REFUSED_ON_DIALOGUE)
def test_dialogue_units_refuse_the_designs_they_cannot_run_at_creation_and_on_edit(user, fed_corpus, design):
    experiment = authoring.experiment_create(owner=user, title="Refused")
    with pytest.raises(ValidationError) as error:
        authoring.study_create(experiment=experiment, title="t", design=design, unit="dialogue")
    assert "dialogue" in error.value.message_dict["unit"][0] and not experiment.studies.exists()
    study = dialogue_study(user, fed_corpus, "likert", publish=False)
    with pytest.raises(ValidationError) as error:
        editing.study_update(study=study, values={"design": design, "design_config": {}})
    assert "dialogue" in error.value.message_dict["design"][0]
    study.refresh_from_db()
    assert study.design == "likert" and study.items.exists()


def test_a_dialogue_bws_draft_changes_its_criteria_and_its_tuple_size(user, fed_corpus):
    study = dialogue_study(user, fed_corpus, "bws", publish=False, tuple_size=3)
    study, _ = editing.study_update(
        study=study, values={"design": "bws", "design_config": {"tuple_size": 3}, "criteria": ["coherence"]}
    )
    assert list(study.criteria.values_list("name", flat=True)) == ["coherence"] and study.items.exists()
    study, notes = editing.study_update(study=study, values={"design": "bws", "design_config": {"tuple_size": 4}})
    assert study.design_config["tuple_size"] == 4 and not study.items.exists() and "build them again" in notes[0]
    corpus = Conversation.objects.filter(corpus__slug=fed_corpus).first().corpus
    assert authoring.study_items_build(study=study, corpus=corpus, seed=1) == 8 // 4
    assert {i.item_conversations.count() for i in study.items.all()} == {4}


def admitted(study):
    """How many raters the study takes before it refuses more (every place taken)."""
    for n in range(500):
        try:
            start(study, f"cap{n}", seed=n)
        except AssignmentRefused:
            return n
    raise AssertionError("the study never filled")


@pytest.mark.parametrize("design", CHOICE_DESIGNS)
def test_the_pay_plan_counts_the_raters_a_choice_study_takes(make_study, design):
    study = make_study(design, raters_per_item=2, items_per_assignment=5)
    assert planning.pay_plan(study)["places"] == admitted(study) > 0


@pytest.mark.parametrize("design", DIALOGUE_DESIGNS)
def test_the_pay_plan_counts_the_raters_a_dialogue_study_takes(user, fed_corpus, design):
    study = dialogue_study(user, fed_corpus, design, **dialogue_config(design))
    Study.objects.filter(pk=study.pk).update(items_per_assignment=1)
    study.refresh_from_db()
    assert planning.pay_plan(study)["places"] == admitted(study) == study.items.count() * 2


def test_an_experiment_of_dialogue_conditions_reports_and_exports_them(client, api, user, fed_corpus):
    likert = dialogue_study(user, fed_corpus, "likert")
    bws = dialogue_study(user, fed_corpus, "bws", publish=False, tuple_size=3)
    Study.objects.filter(pk=bws.pk).update(experiment=likert.experiment)
    authoring.study_publish(study=Study.objects.get(pk=bws.pk))
    rate_likert(likert, raters=2)
    for i in range(2):
        assignment = start(bws, f"b{i}", seed=i)
        for slot in assignment.assignment_items.all():
            ranks = {cid: (n + i) % len(slot.response_order) + 1 for n, cid in enumerate(slot.response_order)}
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=dict.fromkeys(CRITERIA, ranks))
        answering.assignment_submit(assignment=assignment)
    slug = likert.experiment.slug
    client.force_login(user)
    page = client.get(f"/experiments/{slug}/report/")
    assert page.status_code == 200
    for url in re.findall(r'<img src="([^"]+\.svg[^"]*)"', page.content.decode()):
        assert client.get(html.unescape(url)).status_code == 200, url
    report = api.get(f"/api/experiments/{slug}/report/").json()
    assert {row["condition"] for row in report["tables"]["table1"]} == {likert.slug, bws.slug}
    for url in ("report.csv", "report.xlsx", "export.csv", "export.jsonl", "export.xlsx"):
        assert client.get(f"/experiments/{slug}/{url}").status_code == 200, url


@pytest.mark.parametrize(
    ("design", "says"),
    [
        ("likert", "For each dialogue you pick one point on a 5-point scale"),
        ("rme", "comes with a reference dialogue worth 100"),
        ("bws", "you put its 3 dialogues in order from best to worst"),
    ],
)
def test_the_rater_start_page_of_a_dialogue_study_explains_the_task_in_dialogues(
    client,
    user,
    fed_corpus,
    design,
    says,
):
    study = dialogue_study(
        user,
        fed_corpus,
        design,
        publish=False,
        **({"tuple_size": 3} if design == "bws" else {"points": 5} if design == "likert" else {}),
    )
    Study.objects.filter(pk=study.pk).update(platform="prolific")
    authoring.study_publish(study=Study.objects.get(pk=study.pk))
    page = client.get(f"/r/{study.slug}/?PROLIFIC_PID=fbeae7c18667b6987518f3ae&STUDY_ID=3696ad59777e09d5f2daacb5&SESSION_ID=ad667b78ba8ed0275868fcc1", follow=True).content.decode()
    explanation = re.search(r"<p>([^<]*)</p>", page[page.index("<main") :]).group(1)
    assert says in html.unescape(explanation), explanation
    assert "response" not in explanation
    count = re.search(r'data-testid="item-count">(.*?)</p>', page, re.S).group(1)
    assert ("sets of dialogues" if design == "bws" else "dialogues") in count and "conversations" not in count


@pytest.mark.parametrize("design", ["pairwise", "bws_tuples"])
def test_the_checks_crowd_and_preview_pages_of_a_choice_study_render(client, user, make_study, design):
    study = make_study(design, raters_per_item=2, items_per_assignment=6, platform="mturk")
    (rate_tuples if design == "bws_tuples" else rate_pairs)(study)
    client.force_login(user)
    for url in ("checks/", "crowd/", "preview/"):
        assert client.get(f"/studies/{study.slug}/{url}").status_code == 200, url


@pytest.mark.parametrize("design", DIALOGUE_DESIGNS)
def test_the_checks_crowd_and_preview_pages_of_a_dialogue_study_render(client, user, fed_corpus, design):
    study = dialogue_study(user, fed_corpus, design, **dialogue_config(design))
    if design == "likert":
        rate_likert(study, raters=1)
    client.force_login(user)
    for url in ("checks/", "crowd/", "preview/"):
        assert client.get(f"/studies/{study.slug}/{url}").status_code == 200, url


@pytest.mark.parametrize(("design", "unit"), RUNS)
def test_a_new_draft_without_items_renders_its_pages(client, user, design, unit):
    experiment = authoring.experiment_create(owner=user, title="Empty drafts")
    study = authoring.study_create(experiment=experiment, title="empty", design=design, unit=unit)
    client.force_login(user)
    codes = {
        url: client.get(f"/studies/{study.slug}/{url}").status_code
        for url in ("", "edit/", "browse/", "report/", "preview/")
    }
    assert codes == {"": 200, "edit/": 200, "browse/": 200, "report/": 200, "preview/": 404}
    assert planning.pay_plan(study)["places"] == 0
    copy = editing.study_duplicate(study=study)
    assert (copy.design, copy.unit, copy.items.count()) == (design, unit, 0)


@pytest.mark.parametrize(
    ("design", "noun"),
    [("pairwise", "pairs of responses"), ("bws_tuples", "sets of responses"), ("likert", "conversations")],
)
def test_the_rater_start_page_counts_what_each_screen_shows(client, make_study, design, noun):
    study = make_study(design, platform="prolific")
    page = client.get(f"/r/{study.slug}/?PROLIFIC_PID=fbeae7c18667b6987518f3ae&STUDY_ID=3696ad59777e09d5f2daacb5&SESSION_ID=ad667b78ba8ed0275868fcc1", follow=True).content.decode()
    count = re.search(r'data-testid="item-count">(.*?)</p>', page, re.S).group(1)
    assert noun in count


def test_simulated_raters_complete_a_pairwise_study_that_requires_a_reason(make_study):
    study = make_study("pairwise", raters_per_item=2, items_per_assignment=3, platform="prolific", reason="required")
    out, err = io.StringIO(), io.StringIO()
    call_command("simulate_crowd", study.slug, "--raters", "2", "--seed", "5", stdout=out, stderr=err)
    assert "2/2 simulated raters completed" in out.getvalue(), err.getvalue()
    reasons = Comparison.objects.filter(assignment__study=study).values_list("reason", flat=True)
    assert len(reasons) == 2 * 3 * len(CRITERIA) and all(r.strip() for r in reasons)


@pytest.mark.parametrize(
    ("design", "config"),
    [("bws_tuples", {"tuple_size": 3}), ("bws_tuples", {"seed": 9}), ("pairwise", {"pairs_per_conversation": 1})],
)
def test_a_draft_whose_item_building_settings_change_drops_its_stale_items(make_study, corpus, design, config):
    study = make_study(design, publish=False)
    before = study.items.count()
    study, notes = editing.study_update(
        study=study, values={"design": design, "design_config": {**study.design_config, **config}}
    )
    assert not study.items.exists() and notes and "build" in notes[0]
    authoring.study_items_build(
        study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"], reference_system="human"
    )
    authoring.study_publish(study=study)
    assert study.items.exists() and before
    if "tuple_size" in config:
        assert {i.item_responses.count() for i in study.items.all()} == {config["tuple_size"]}
    # Other settings (ties, reasons) leave the items alone.
    if design == "pairwise":
        draft = make_study(design, publish=False)
        draft, notes = editing.study_update(
            study=draft, values={"design": design, "design_config": {**draft.design_config, "allow_tie": False}}
        )
        assert draft.items.exists() and not notes


def test_the_edit_form_keeps_the_settings_it_does_not_show_and_the_items_built_from_them(client, user, make_study):
    study = make_study("bws_tuples", publish=False, seed=5, factor=3)
    config, items = dict(study.design_config), study.items.count()
    client.force_login(user)
    data = edit_form_post(client.get(f"/studies/{study.slug}/edit/").content.decode())
    data["title"] = "Renamed tuples"
    assert client.post(f"/studies/{study.slug}/edit/", data).status_code == 302
    study.refresh_from_db()
    assert (study.title, study.design_config, study.items.count()) == ("Renamed tuples", config, items)
