"""The aggregated labels delivered (studies.reports.aggregated_labels): every rated target's label by
the study's aggregation with its posterior probability, the method and each rater's competence, on the
report and the review queue, in the items browser, the ratings CSV/XLSX, the report's CSV/XLSX and the
API (typed in the schema); equal to crowd-kit on the study's answers; researcher B gets a 404."""
import csv
import io
import json

import openpyxl
import pytest
from crowdkit.aggregation import DawidSkene
from django.urls import reverse
from drf_spectacular.generators import SchemaGenerator
from openapi_schema_validator import OAS30Validator

from studies.models import Rating
from studies.rating import decisions
from studies.reports import aggregated_labels, aggregation_selectors
from studies.reports.exporting import export_lines
from tests.api.test_convention import client_of
from tests.studies.review_fixtures import SPAMMER, rate_all, review_study

pytestmark = pytest.mark.django_db
LIST = "/api/studies/{slug}/aggregated-labels/"
AGGREGATION = "/api/studies/{slug}/aggregation/"


@pytest.fixture
def rated(user, corpus):
    study = review_study(user, corpus)
    return study, rate_all(study)


def crowdkit_probas(study):
    import pandas as pd

    rows = Rating.objects.filter(criterion__name="safety", assignment__study=study, assignment__excluded=False) \
        .values_list("assignment__rater_id", "item_id", "response_id", "label")
    frame = pd.DataFrame([(w, (i, t), label) for w, i, t, label in rows], columns=["worker", "task", "label"])
    model = DawidSkene(n_iter=100)
    model.fit(frame)
    return model.probas_


def test_aggregated_labels_of_a_study_equal_crowdkits_posterior_to_1e_9(rated):
    study, _ = rated
    (found,) = aggregation_selectors.study_aggregation(study)
    probas = crowdkit_probas(study)
    assert len(found["targets"]) == len(probas)
    for t in found["targets"]:
        row = probas.loc[[(t["item"], t["target"])]].iloc[0]
        assert t["probability"] == pytest.approx(row.max(), abs=1e-9)
        assert t["label"] == row.idxmax()
        assert all(t["probabilities"][k] == pytest.approx(v, abs=1e-9) for k, v in row.items())
        assert t["answers"] >= 1 and t["position"] >= 1


def test_aggregated_labels_on_the_report_page_with_probabilities_and_competence(rated, user, client):
    study, _ = rated
    client.force_login(user)
    page = client.get(reverse("studies:study_report", args=[study.slug])).content.decode()
    assert 'data-testid="aggregated-labels-safety"' in page and 'data-testid="competence-safety"' in page
    (found,) = aggregation_selectors.study_aggregation(study)
    assert page.count('data-testid="aggregated-label-row"') == len(found["targets"])
    queue = client.get(reverse("studies:study_review", args=[study.slug])).content.decode()
    assert 'data-testid="aggregated-labels-safety"' in queue


def test_aggregated_labels_in_the_items_browser_under_each_response(rated, user, client):
    study, _ = rated
    client.force_login(user)
    page = client.get(reverse("studies:study_items_browser", args=[study.slug])).content.decode()
    assert 'data-testid="aggregated-line"' in page and "by Dawid–Skene (1979)" in page
    from studies.reports import browser_selectors

    _, rows = browser_selectors.item_page(study)
    (found,) = aggregation_selectors.study_aggregation(study)
    expected = {(t["item"], t["target"]): t["label"] for t in found["targets"]}
    row = next(r for r in rows if r.aggregated)
    (line,) = row.aggregated
    for response, cell in zip(row.responses, line["cells"], strict=True):
        assert cell["label"] == expected[(row.item.pk, response["id"])]


def test_aggregated_label_columns_in_the_ratings_csv_and_xlsx(rated):
    study, _ = rated
    one = study.__class__.objects.filter(pk=study.pk)
    rows = list(csv.DictReader(io.StringIO("".join(export_lines(one, "csv")))))
    (found,) = aggregation_selectors.study_aggregation(study)
    by_target = {str(t["target"]): t for t in found["targets"]}
    safety = [r for r in rows if r["criterion"] == "safety"]
    assert safety and all(r["aggregation_method"] == "dawid_skene" for r in safety)
    for r in safety:
        t = by_target[r["response"]]
        assert r["aggregated_label"] == t["label"] and float(r["aggregated_probability"]) == pytest.approx(t["probability"])
    assert all(r["aggregated_label"] == "" for r in rows if r["criterion"] == "readability")


def test_aggregated_labels_sheets_of_the_report_xlsx_and_labels_only_reliability_csv(rated, user, client):
    study, _ = rated
    client.force_login(user)
    response = client.get(reverse("studies:study_report_download", args=[study.slug, "xlsx"]))
    book = openpyxl.load_workbook(io.BytesIO(response.content), read_only=True)
    assert {"Aggregated labels", "Rater competence"} <= set(book.sheetnames)
    header = next(book["Aggregated labels"].iter_rows(values_only=True))
    assert set(aggregated_labels.TABLE_FIELDS) <= set(header)
    study.criteria.filter(name="readability").delete()  # a labels-only study: no ICC row
    body = client.get(reverse("studies:study_report_download", args=[study.slug, "csv"])).content.decode()
    lines = list(csv.DictReader(io.StringIO(body)))
    assert len(lines) == len(aggregation_selectors.study_aggregation(study)[0]["targets"]) > 0
    assert {row["method"] for row in lines} == {"dawid_skene"}


def test_aggregated_labels_leave_out_an_excluded_rater_and_name_the_method_used(rated, user, settings):
    study, done = rated
    before = aggregated_labels.study_labels(study)[0]
    decisions.rater_decision_record(assignment=done[SPAMMER], kind="exclude", reason="one label", user=user)
    after = aggregated_labels.study_labels(study)[0]
    assert done[SPAMMER].rater_id in before["competence"] and done[SPAMMER].rater_id not in after["competence"]
    assert sum(t["answers"] for t in after["targets"]) < sum(t["answers"] for t in before["targets"])
    settings.LABEL_AGGREGATION_METHOD = "majority_vote"
    vote = aggregated_labels.study_labels(study)[0]
    assert vote["method"] == "majority_vote"
    assert all(t["probability"] == max(t["probabilities"].values()) for t in vote["targets"])


def test_aggregated_labels_api_lists_every_target_typed_in_the_schema(rated, user):
    study, _ = rated
    api = client_of(user)
    response = api.get(LIST.format(slug=study.slug), {"limit": 500})
    assert response.status_code == 200, response.content[:300]
    data = response.json()
    (found,) = aggregation_selectors.study_aggregation(study)
    assert data["count"] == len(found["targets"]) == len(data["results"])
    first = data["results"][0]
    assert first["method"] == "dawid_skene" and first["labels"] is None and first["label"] in ("safe", "unsafe", "unsure")
    assert first["probability"] == pytest.approx(max(first["probabilities"].values()))
    schema = json.loads(json.dumps(SchemaGenerator().get_schema(request=None, public=True), default=str))
    for path, body in ((LIST, data), (AGGREGATION, api.get(AGGREGATION.format(slug=study.slug)).json())):
        declared = schema["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        errors = list(OAS30Validator({**declared, "components": schema["components"]}).iter_errors(body))
        assert not errors, errors[:3]
    broken = {**data, "results": [{**first, "probability": "high"}]}
    declared = schema["paths"][LIST]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert list(OAS30Validator({**declared, "components": schema["components"]}).iter_errors(broken))


def test_aggregated_labels_api_competence_by_every_method_and_filters(rated, user):
    study, done = rated
    api = client_of(user)
    (entry,) = api.get(AGGREGATION.format(slug=study.slug)).json()
    assert entry["method"] == "dawid_skene" and len(entry["raters"]) == 5
    assert all(set(r["competence"]) == {"majority_vote", "dawid_skene", "mace"} for r in entry["raters"])
    assert [m["method"] for m in entry["methods"] if m["used"]] == ["dawid_skene"]
    assert api.get(LIST.format(slug=study.slug), {"criterion": "safety"}).json()["count"] > 0
    bad = api.get(LIST.format(slug=study.slug), {"criterion": "nope"})
    assert bad.status_code == 400 and "criterion" in bad.content.decode()
    assert api.get(LIST.format(slug=study.slug), {"page": 2}).status_code == 400


def test_aggregated_labels_api_of_another_researchers_study_is_a_404(rated, other_user):
    study, _ = rated
    api = client_of(other_user)
    assert api.get(LIST.format(slug=study.slug)).status_code == 404
    assert api.get(AGGREGATION.format(slug=study.slug)).status_code == 404


def test_aggregated_labels_of_a_multilabel_criterion_are_the_options_given(user, corpus):
    from studies.authoring import services as authoring
    from studies.rating import answers as answering
    from studies.rating import entry as rater_entry

    experiment = authoring.experiment_create(owner=user, title="multi")
    study = authoring.study_create(experiment=experiment, title="multi", design="likert", raters_per_item=3,
                                   items_per_assignment=4, criteria=[{
                                       "name": "faults", "question": "Which faults?", "kind": "multilabel",
                                       "options": {"labels": ["repetition", "off-topic"]}}])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    authoring.study_publish(study=study)
    for index in range(3):
        assignment = rater_entry.assignment_start(
            study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=f"m{index}"), seed=0)
        for slot in assignment.assignment_items.order_by("position"):
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={"faults": {
                t: (["repetition"] if index < 2 else ["off-topic"]) for t in slot.response_order}})
        answering.assignment_submit(assignment=assignment)
    (found,) = aggregated_labels.study_labels(study)
    assert found["targets"] and all(t["label"] == ["repetition"] for t in found["targets"] if t["answers"] == 3)
    row = client_of(user).get(LIST.format(slug=study.slug)).json()["results"][0]
    assert row["label"] is None and isinstance(row["labels"], list) and set(row["probabilities"]) == {"repetition", "off-topic"}
