"""The bws_tuples design (studies.designs.bws_tuples): tuples built and stored at item build, best/worst
picks stored once, counting scores against a hand computation, and the report, export, API and
live panel that show them."""
import csv
import io
import re
from collections import Counter

import numpy as np
import openpyxl
import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils.html import escape

from studies.authoring import services as authoring
from studies.designs import bws_tuples_report
from studies.designs.bws_tuples import tuple_field
from studies.errors import StudyStateError
from studies.models import Assignment, BestWorstChoice, Response, StudyItemResponse
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating import form_tokens, invites

pytestmark = pytest.mark.django_db
CRITERIA = ("readability", "coherence")


def members(study):
    by_item = {}
    for item_id, response_id in StudyItemResponse.objects.filter(item__study=study).order_by("item__position", "position") \
            .values_list("item_id", "response_id"):
        by_item.setdefault(item_id, []).append(response_id)
    return by_item


def start(study, name):
    return rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=name))


def test_items_are_balanced_tuples_of_single_responses_with_their_own_conversations(make_study):
    study = make_study("bws_tuples", raters_per_item=2, items_per_assignment=5)
    tuples = members(study)
    responses = Response.objects.filter(conversation__corpus__slug=study.items.first().item_responses.first()
                                        .response.conversation.corpus.slug)
    assert len(tuples) == 2 * responses.count() == 48  # 6 conversations × 4 responses (3 systems + human), 2N tuples
    assert all(len(m) == len(set(m)) == 4 for m in tuples.values())
    assert set(Counter(r for m in tuples.values() for r in m).values()) == {8}  # each response in 8 tuples
    assert not study.items.filter(conversation__isnull=False).exists()
    conversations_per_tuple = [len({Response.objects.get(pk=r).conversation_id for r in m}) for m in tuples.values()]
    assert max(conversations_per_tuple) > 1  # members come from different conversations
    # seeded and stored: rebuilding gives the same tuples
    draft = make_study("bws_tuples", publish=False)
    authoring.study_items_build(study=draft, corpus=responses.first().conversation.corpus,
                               systems=["seq2seq", "hred", "thred"], reference_system="human")
    assert list(members(draft).values()) == list(tuples.values())


@pytest.mark.parametrize(("config", "field"), [({"tuple_size": 6}, "design_config.tuple_size"),
                                               ({"tuple_size": 2}, "design_config.tuple_size"),
                                               ({"factor": 0}, "design_config.factor")])
def test_bad_tuple_settings_are_refused_naming_the_field(user, config, field):
    experiment = authoring.experiment_create(owner=user, title="E")
    with pytest.raises(ValidationError) as error:
        authoring.study_create(experiment=experiment, title="t", design="bws_tuples", design_config=config)
    assert field in error.value.message_dict


def test_picks_are_validated_and_a_double_submit_stores_once(make_study):
    study = make_study("bws_tuples", raters_per_item=2, items_per_assignment=3)
    assignment = start(study, "w1")
    slot = assignment.assignment_items.order_by("position").first()
    a, b, c, _ = slot.response_order
    with pytest.raises(ValidationError) as error:
        answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                  answers={"readability": {"best": a, "worst": a}, "coherence": {"best": a, "worst": 999999}})
    assert set(error.value.message_dict) == {"readability", tuple_field("worst", "coherence")}
    assert BestWorstChoice.objects.count() == 0
    answers = {"readability": {"best": a, "worst": b}, "coherence": {"best": c, "worst": a}}
    for _ in range(2):
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    assert BestWorstChoice.objects.count() == 2
    answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                              answers={**answers, "readability": {"best": b, "worst": a}})
    assert BestWorstChoice.objects.filter(criterion__name="readability").values_list("best", "worst").get() == (b, a)


def test_counting_scores_and_system_means_equal_a_hand_computation(make_study):
    study = make_study("bws_tuples", raters_per_item=2, items_per_assignment=2)
    one, two = start(study, "w1"), start(study, "w2")
    picks = {}
    for assignment in (one, two):
        for slot in assignment.assignment_items.order_by("position"):
            order = slot.response_order
            best, worst = (order[0], order[1]) if assignment is one else (order[2], order[0])
            picks.setdefault(assignment.pk, []).append((order, best, worst))
            answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                      answers={c: {"best": best, "worst": worst} for c in CRITERIA})
        answering.assignment_submit(assignment=assignment)
    # by hand: appearances, best and worst per response over the four annotations
    seen, best_n, worst_n = Counter(), Counter(), Counter()
    for rows in picks.values():
        for order, best, worst in rows:
            seen.update(order)
            best_n[best] += 1
            worst_n[worst] += 1
    expected = {r: (best_n[r] - worst_n[r]) / seen[r] for r in seen}
    report = bws_tuples_report.tuples_report(type(study).objects.filter(pk=study.pk), trials=10)
    entry = next(e for e in report if e["criterion"] == "readability")
    assert {r["response"]: r["score"] for r in entry["responses"]} == pytest.approx(expected, abs=1e-12)
    assert {r["response"]: r["appearances"] for r in entry["responses"]} == dict(seen)
    system_of = dict(Response.objects.filter(pk__in=list(seen)).values_list("pk", "system__name"))
    for row in entry["systems"]:
        values = np.array([expected[r] for r in expected if system_of[r] == row["system"]])
        assert row["mean"] == pytest.approx(values.mean(), abs=1e-12) and row["n"] == values.size
    assert entry["design"]["appearances_min"] == entry["design"]["appearances_max"] == 8
    assert entry["annotations"] == 4


def _rate_everything(study, raters, rng):
    quality = {r: q for r, q in zip(Response.objects.filter(pk__in=StudyItemResponse.objects.filter(item__study=study)
                                                               .values("response")).values_list("pk", flat=True),
                                    rng.normal(size=100), strict=False)}
    for i in range(raters):
        assignment = start(study, f"w{i}")
        for slot in assignment.assignment_items.all():
            seen = {r: quality[r] + rng.normal(0, 0.5) for r in slot.response_order}
            ordered = sorted(seen, key=seen.get)
            answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                      answers={c: {"best": ordered[-1], "worst": ordered[0]} for c in CRITERIA})
        answering.assignment_submit(assignment=assignment)


def test_report_export_api_and_live_panel_show_the_tuple_scores(client, api, user, make_study):
    study = make_study("bws_tuples", raters_per_item=3, items_per_assignment=48)
    _rate_everything(study, 3, np.random.default_rng(1))
    report = api.get(f"/api/studies/{study.slug}/report/").json()
    entry = report["bws_tuples"][0]
    assert entry["split_half"]["trials"] == 100 and entry["annotations"] == 144
    assert entry["split_half"]["spearman_brown"] == pytest.approx(
        2 * entry["split_half"]["spearman_mean"] / (1 + entry["split_half"]["spearman_mean"]))
    # the seed tables use the per-rater scores: three raters on every response
    table1 = report["tables"]["table1"][0]
    assert table1["n_raters"] == 3 and table1["n_items"] == 24 and "icc" in table1
    assert any("BWS tuples" in note for note in report["notes"])
    items = api.get(f"/api/studies/{study.slug}/items/").json()["results"]
    assert items[0]["conversation"] is None and len({r["conversation"] for r in items[0]["responses"]}) >= 1

    exported = list(csv.DictReader(io.StringIO(b"".join(
        api.get(f"/api/studies/{study.slug}/ratings/?format=csv").streaming_content).decode())))
    assert len(exported) == 3 * 48 * 4 * 2  # raters × tuples × members × criteria
    one = [r for r in exported if r["tuple"] == "0" and r["criterion"] == "readability"][:4]
    assert sorted(r["value"] for r in one) == ["-1.0", "0.0", "0.0", "1.0"]
    assert {r["rank"] for r in one} == {"1", "4", ""}

    assert api.get(f"/api/studies/{study.slug}/progress/").json()["ratings"] == 3 * 48 * 2  # picks count
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/report/").content.decode()
    assert 'id="bws-tuples"' in page and "Spearman-Brown" in page
    workbook = openpyxl.load_workbook(io.BytesIO(client.get(f"/studies/{study.slug}/report.xlsx").content))
    sheet = workbook["BWS tuples split-half"]
    header = [c.value for c in sheet[1]]
    assert sheet.cell(2, header.index("spearman_mean") + 1).value == pytest.approx(entry["split_half"]["spearman_mean"])
    assert workbook["BWS tuples responses"].max_row == 2 * 24 + 1  # criteria × responses, plus the header
    assert "Best-worst tuple of single responses" in client.get(f"/studies/{study.slug}/").content.decode()
    detail = client.get(f"/studies/{study.slug}/live/panel/").content.decode()
    assert 'data-testid="live-split-half"' in detail
    assert f"{entry['split_half']['spearman_mean']:.3f}" in detail


def test_rater_pages_show_each_member_with_its_context_and_refuse_the_same_pick(make_study):
    study = make_study("bws_tuples", raters_per_item=2, items_per_assignment=2)
    client = Client()
    invite = invites.invite_create(study=study)
    response = client.get(f"/r/{study.slug}/?invite={invite.token}")
    token = response["Location"].split("/")[3]
    page = client.get(f"/r/a/{token}/").content.decode()
    form = re.search(r'name="form_token" value="([0-9a-f]+)"', page).group(1)
    client.post(f"/r/a/{token}/", {"agree": "yes", "form_token": form})
    assignment = Assignment.objects.get(token=token)
    slot = assignment.assignment_items.get(position=0)
    page = client.get(f"/r/a/{token}/items/0/").content.decode()
    for rid in slot.response_order:
        response_row = Response.objects.select_related("conversation").get(pk=rid)
        assert escape(response_row.text) in page and escape(response_row.conversation.turns[0]["text"]) in page
    assert page.count('type="radio"') == 4 * 2 * 2  # best + worst per member per criterion
    a, b = slot.response_order[:2]
    item_token = form_tokens.form_token(token, "item")
    same = {tuple_field("best", c): "A" for c in CRITERIA} | {tuple_field("worst", c): "A" for c in CRITERIA}
    refused = client.post(f"/r/a/{token}/items/0/", {**same, "form_token": item_token})
    assert refused.status_code == 400 and "must be different" in refused.content.decode()
    assert BestWorstChoice.objects.count() == 0
    good = {tuple_field("best", c): "A" for c in CRITERIA} | {tuple_field("worst", c): "B" for c in CRITERIA}
    for _ in range(2):  # a double submit stores once
        client.post(f"/r/a/{token}/items/0/", {**good, "form_token": item_token})
    assert BestWorstChoice.objects.filter(assignment=assignment).count() == 2
    back = client.get(f"/r/a/{token}/items/0/").content.decode()
    assert re.search(rf'name="{tuple_field("best", "readability")}" value="A" checked', back)


def test_an_experiment_with_a_likert_and_a_tuples_condition_reports_both(client, api, user, make_study):
    experiment = authoring.experiment_create(owner=user, title="Two conditions")
    likert = make_study("likert", raters_per_item=2, items_per_assignment=6, experiment=experiment)
    tuples = make_study("bws_tuples", raters_per_item=2, items_per_assignment=48, experiment=experiment)
    rng = np.random.default_rng(3)
    _rate_everything(tuples, 2, rng)
    for i in range(2):
        assignment = start(likert, f"l{i}")
        for slot in assignment.assignment_items.all():
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
                c: {r: int(rng.integers(1, 7)) for r in slot.response_order} for c in CRITERIA})
        answering.assignment_submit(assignment=assignment)
    report = api.get(f"/api/experiments/{experiment.slug}/report/").json()
    assert [e["condition"] for e in report["bws_tuples"]] == [tuples.slug, tuples.slug]
    cells = {(r["condition"], r["criterion"]): r for r in report["tables"]["table1"]}
    assert "icc" in cells[(likert.slug, "readability")] and "icc" in cells[(tuples.slug, "readability")]
    assert {row["condition"] for row in report["systems"]} == {likert.slug, tuples.slug}
    client.force_login(user)
    page = client.get(f"/experiments/{experiment.slug}/report/")
    assert page.status_code == 200 and 'id="bws-tuples"' in page.content.decode()
    figures = re.findall(r'<img src="([^"]+\.svg[^"]*)"', page.content.decode())
    assert len(figures) >= 4
    for url in figures:
        assert client.get(url.replace("&amp;", "&")).status_code == 200, url


def test_researcher_preview_and_mturk_preview_show_a_tuple_and_store_nothing(client, user, make_study):
    study = make_study("bws_tuples", platform="mturk")
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/preview/").content.decode()
    assert page.count('class="card tuple-member"') == 4 and "Next (preview)" in page
    anonymous = Client().get(f"/r/{study.slug}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1")
    assert anonymous.status_code == 200 and anonymous.content.decode().count('class="card tuple-member"') == 4
    assert not Assignment.objects.exists() and not BestWorstChoice.objects.exists()


def test_publish_refuses_a_tuple_without_its_members(make_study):
    study = make_study("bws_tuples", publish=False)
    StudyItemResponse.objects.filter(item=study.items.first(), position=0).delete()
    with pytest.raises(StudyStateError, match="1 tuple"):
        authoring.study_publish(study=study)
