"""The report pages' files and switches through the API: report CSV/XLSX and figures (a study's and an
experiment's), the experiment-wide ratings export, a chat study's transcripts, the live reliability rule,
human vs metric and the prediction-powered estimates as files, drawing more items, and the model card's
action. Each answers what its page answers (the same bytes where the page gives a file); bad parameters are
400s naming them; another researcher's study or experiment is a 404."""
import csv
import io
from unittest import mock

import openpyxl
import pytest
from django.urls import reverse

from metrics.scoring import selectors, services
from studies.authoring.demo import demo_load
from studies.models import Study
from tests.api.test_convention import client_of
from tests.factories import UserFactory
from tests.metrics.test_ppi_views import corpus12, scored  # noqa: F401 - fixtures
from tests.problems import problem_fields
from tests.studies.chat.test_chat_views import chat_slot  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(user, client):
    experiment = demo_load()
    experiment.collaborators.add(user)
    client.force_login(user)
    return experiment, experiment.studies.order_by("pk").first()


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def _sheets(content: bytes) -> dict[str, list[tuple]]:
    book = openpyxl.load_workbook(io.BytesIO(content), read_only=True)
    return {name: list(book[name].iter_rows(values_only=True)) for name in book.sheetnames}


def test_report_download_api_gives_the_pages_csv_and_xlsx(api, client, demo):
    experiment, study = demo
    for table in ("icc", "system_scores"):
        got = api.get(f"/api/studies/{study.slug}/report/download/", {"table": table})
        page = client.get(reverse("studies:study_report_download", args=[study.slug, "csv"]), {"table": table})
        assert got.status_code == 200 and got["Content-Type"].startswith("text/csv"), got.content[:300]
        assert got.content == page.content and len(got.content.splitlines()) > 1
        assert "no-store" in got["Cache-Control"]
    got = api.get(f"/api/experiments/{experiment.slug}/report/download/", {"format": "xlsx"})
    page = client.get(reverse("studies:experiment_report_download", args=[experiment.slug, "xlsx"]))
    assert got.status_code == 200 and _sheets(got.content) == _sheets(page.content)
    assert {"ICC", "System scores", "ANOVA"} <= set(_sheets(got.content))


def test_report_download_api_refuses_bad_parameters_by_name(api, demo):
    _, study = demo
    url = f"/api/studies/{study.slug}/report/download/"
    for params, field in (({"format": "pdf"}, "format"), ({"table": "nope"}, "table"), ({"colour": "red"}, "colour")):
        response = api.get(url, params)
        assert response.status_code == 400 and field in problem_fields(response), params


def test_report_figure_api_gives_the_pages_svg(api, client, demo):
    experiment, study = demo
    got = api.get(f"/api/experiments/{experiment.slug}/report/figures/icc/")
    page = client.get(reverse("studies:experiment_report_figure", args=[experiment.slug, "icc"]))
    assert got.status_code == 200 and got["Content-Type"] == "image/svg+xml"
    # the same figure (matplotlib names its clip paths at random: compare what is drawn)
    assert b"<svg" in got.content and got.content.count(b"<path") == page.content.count(b"<path") > 0
    criterion = study.criteria.order_by("pk").first().name
    ranking = api.get(f"/api/studies/{study.slug}/report/figures/ranking-{criterion}/")
    assert ranking.status_code == 200 and b"<svg" in ranking.content
    missing = api.get(f"/api/studies/{study.slug}/report/figures/ranking-nosuchcriterion/")
    assert missing.status_code == 404 and missing.json()["status"] == 404


def test_experiment_ratings_api_gives_every_conditions_ratings_as_the_page(api, client, demo):
    experiment, _ = demo
    for export_format in ("csv", "jsonl"):
        got = api.get(f"/api/experiments/{experiment.slug}/ratings/", {"format": export_format})
        page = client.get(reverse("studies:experiment_export", args=[experiment.slug, export_format]))
        body = _body(got)  # a stream: read once
        assert got.status_code == 200 and body == _body(page) and body
    rows = list(csv.DictReader(io.StringIO(_body(api.get(f"/api/experiments/{experiment.slug}/ratings/")).decode())))
    studies = {row["study"] for row in rows}
    assert studies == set(experiment.studies.values_list("slug", flat=True)) and len(studies) > 1
    bad = api.get(f"/api/experiments/{experiment.slug}/ratings/", {"format": "pdf"})
    assert bad.status_code == 400 and "format" in problem_fields(bad)


def test_report_files_api_of_another_researchers_study_or_experiment_is_404(demo, other_user):
    experiment, study = demo
    other = client_of(other_user)
    for url in (f"/api/studies/{study.slug}/report/download/", f"/api/experiments/{experiment.slug}/report/download/",
                f"/api/studies/{study.slug}/report/figures/icc/", f"/api/experiments/{experiment.slug}/report/figures/icc/",
                f"/api/experiments/{experiment.slug}/ratings/", f"/api/studies/{study.slug}/chats/",
                f"/api/studies/{study.slug}/live/"):
        response = other.get(url)
        assert response.status_code == 404 and response.json()["status"] == 404, url
    assert other.put(f"/api/studies/{study.slug}/live/", {"target": 0.7}, format="json").status_code == 404
    assert other.post(f"/api/studies/{study.slug}/items/extend/", {"count": 1}, format="json").status_code == 404


def test_chat_transcripts_api_streams_the_pages_lines(api, client, user, other_user, chat_slot, local_bot):  # noqa: F811
    import json

    from studies.chat import services as chat

    assignment, position = chat_slot
    item_id = assignment.assignment_items.get(position=position).item_id
    chat.chat_open(assignment=assignment, item_id=item_id)
    chat.chat_turn_post(assignment=assignment, item_id=item_id, text="I feel great", client_id="1")
    study = assignment.study
    got = api.get(f"/api/studies/{study.slug}/chats/")
    assert got.status_code == 200 and got["Content-Type"].startswith("application/x-ndjson")
    body = b"".join(got.streaming_content)
    client.force_login(user)
    assert body == b"".join(client.get(reverse("chat:transcripts_export", args=[study.slug])).streaming_content)
    [line] = [json.loads(x) for x in body.decode().splitlines()]
    assert [t["text"] for t in line["turns"]] == ["I feel great", "Why do you feel great?"]
    assert line["rater"].startswith("R-") and local_bot.url("rule") not in body.decode()
    assert client_of(other_user).get(f"/api/studies/{study.slug}/chats/").status_code == 404


def test_chat_transcripts_api_of_a_study_without_chats_is_404(api, make_study):
    study = make_study("likert")
    response = api.get(f"/api/studies/{study.slug}/chats/")
    assert response.status_code == 404 and "chat" in response.json()["detail"]


def test_live_rule_api_reads_and_sets_the_rule_as_the_study_page(api, make_study):
    study = make_study("likert")
    url = f"/api/studies/{study.slug}/live/"
    first = api.get(url)
    assert first.status_code == 200 and first.json() == {"target": 0.8, "form": "ICC(A,k)", "close_when_reached": False,
                                                         "closed": False}
    saved = api.put(url, {"target": 0.7, "form": "ICC(C,k)", "close_when_reached": True}, format="json")
    assert saved.status_code == 200 and saved.json()["closed"] is False  # no ratings: the target is not reached
    study.refresh_from_db()
    assert study.live_config == {"target": 0.7, "form": "ICC(C,k)", "close_when_reached": True}
    assert study.status == Study.Status.PUBLISHED
    for body, field in (({"target": 1.5}, "target"), ({"target": 0.5, "form": "ICC(1)"}, "form"),
                        ({"target": 0.5, "colour": "red"}, "colour"), ({}, "target")):
        refused = api.put(url, body, format="json")
        assert refused.status_code == 400 and field in problem_fields(refused), body
    study.refresh_from_db()
    assert study.live_config["target"] == 0.7  # nothing changed by the refusals


def test_live_rule_api_of_a_design_without_a_live_icc_is_refused_under_live_config(api, make_study):
    study = make_study("pairwise")
    for response in (api.get(f"/api/studies/{study.slug}/live/"),
                     api.put(f"/api/studies/{study.slug}/live/", {"target": 0.7}, format="json")):
        assert response.status_code == 400 and "live_config" in problem_fields(response)


def test_items_extend_api_draws_more_items_once(api, other_user, scored):  # noqa: F811
    study, _ = scored
    url = f"/api/studies/{study.slug}/items/extend/"
    added = api.post(url, {"count": 2, "expected_items": 8}, format="json")
    assert added.status_code == 200, added.content[:300]
    assert added.json() == {"added": 2, "items": 10, "corpus": "twelve"} and study.items.count() == 10
    again = api.post(url, {"count": 2, "expected_items": 8}, format="json")  # the same request sent twice
    assert again.status_code == 400 and "sent twice" in " ".join(problem_fields(again)["count"])
    for body, field in (({"count": "many"}, "count"), ({"count": 0}, "count"), ({"count": 50}, "count"),
                        ({"count": 1, "colour": "red"}, "colour")):
        refused = api.post(url, body, format="json")
        assert refused.status_code == 400 and field in problem_fields(refused), body
    assert study.items.count() == 10
    assert client_of(other_user).post(url, {"count": 1}, format="json").status_code == 404 and study.items.count() == 10


def test_ppi_download_api_gives_the_pages_files(api, client, user, other_user, scored):  # noqa: F811
    study, model = scored
    experiment = study.experiment
    client.force_login(user)
    url = f"/api/experiments/{experiment.slug}/metrics/{model.name}/prediction-powered/download/"
    got = api.get(url)
    page = client.get(reverse("metrics:ppi_download", args=[experiment.slug, model.name, "csv"]))
    assert got.status_code == 200 and got.content == page.content
    rows = list(csv.DictReader(io.StringIO(got.content.decode())))
    assert rows and {row["study"] for row in rows} == {study.slug}
    xlsx = api.get(url, {"format": "xlsx", "alpha": "0.1"})
    page = client.get(reverse("metrics:ppi_download", args=[experiment.slug, model.name, "xlsx"]), {"alpha": "0.1"})
    assert xlsx.status_code == 200 and _sheets(xlsx.content) == _sheets(page.content)
    for params, field in (({"alpha": "2"}, "alpha"), ({"format": "pdf"}, "format"), ({"colour": "red"}, "colour")):
        refused = api.get(url, params)
        assert refused.status_code == 400 and field in problem_fields(refused), params
    assert client_of(other_user).get(url).status_code == 404


def test_human_metric_download_api_is_the_json_reports_rows(api, other_user, scored):  # noqa: F811
    study, model = scored
    experiment = study.experiment
    url = f"/api/experiments/{experiment.slug}/metrics/{model.name}/"
    got = api.get(url + "download/")
    assert got.status_code == 200 and got["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(got.content.decode())))
    report = selectors.human_metric_report(experiment.studies.all(), model)
    expected = [(cell["condition"], cell["criterion"], level.split("_")[0], method)
                for cell in report["cells"] for level in ("response_level", "system_level") for method in cell[level]]
    assert [(r["condition"], r["criterion"], r["level"], r["method"]) for r in rows][:len(expected)] == expected
    assert expected and float(rows[0]["r"]) == pytest.approx(report["cells"][0]["response_level"][rows[0]["method"]]["r"])
    assert api.get(url + "download/", {"colour": "red"}).status_code == 400
    assert client_of(other_user).get(url + "download/").status_code == 404


def test_model_card_api_queues_the_card_for_staff_only(api):
    model = services.metric_model_default(key="readability")
    staff = client_of(UserFactory(username="admin-card", is_staff=True))
    with mock.patch("metrics.tasks.model_card_build.delay") as queued:
        refused = api.post(f"/api/metrics/models/{model.name}/card/")
        assert refused.status_code == 403 and refused.json()["status"] == 403 and not queued.called
        done = staff.post(f"/api/metrics/models/{model.name}/card/")
        assert done.status_code == 202 and done.json() == {"model": model.name, "queued": True}
        queued.assert_called_once_with(model.pk)
        assert staff.post("/api/metrics/models/no-such-model/card/").status_code == 404
