"""Scoring runs over the API: ``POST /api/metrics/runs/`` takes a ``corpus`` and scores the whole corpus
(every response, as prediction-powered inference needs), runs are listed and filtered, LLM judges are
listed; a study or corpus of another researcher is a 404 and their runs are never listed."""
import pytest

from config.celery import app as celery_app
from metrics.models import MetricScore, ScoringRun
from metrics.scoring import services
from studies.models import Response
from tests.api.test_convention import client_of
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


@pytest.fixture
def eager():
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = False


def test_corpus_scoring_through_the_api_scores_every_response(api, corpus, eager, django_capture_on_commit_callbacks):
    services.metric_model_default(key="readability")
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post("/api/metrics/runs/", {"metric_model": "readability", "corpus": corpus.slug}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["corpus"] == corpus.slug and created.json()["study"] is None
    done = api.get(f"/api/metrics/runs/{created.json()['id']}/").json()
    responses = Response.objects.filter(conversation__corpus=corpus).count()
    assert done["status"] == "done" and done["total"] == responses > 0
    assert MetricScore.objects.filter(response__conversation__corpus=corpus).count() == responses


def test_corpus_scoring_needs_a_study_or_a_corpus_not_both(api, corpus, make_study):
    services.metric_model_default(key="readability")
    study = make_study("likert")
    for body in ({"metric_model": "readability"},
                 {"metric_model": "readability", "study": study.slug, "corpus": corpus.slug}):
        response = api.post("/api/metrics/runs/", body, format="json")
        assert response.status_code == 400 and "study" in problem_fields(response)
    assert not ScoringRun.objects.exists()


def test_scoring_runs_are_listed_and_filtered(api, corpus, make_study):
    services.metric_model_default(key="readability")
    study = make_study("likert")
    api.post("/api/metrics/runs/", {"metric_model": "readability", "corpus": corpus.slug}, format="json")
    api.post("/api/metrics/runs/", {"metric_model": "readability", "study": study.slug}, format="json")
    listed = api.get("/api/metrics/runs/").json()
    assert listed["count"] == 2
    assert [r["corpus"] for r in api.get("/api/metrics/runs/", {"corpus": corpus.slug}).json()["results"]] == [corpus.slug]
    assert api.get("/api/metrics/runs/", {"status": "queued"}).json()["count"] == 2
    bad = api.get("/api/metrics/runs/", {"status": "sleeping"})
    assert bad.status_code == 400 and "status" in problem_fields(bad)


def test_corpus_scoring_of_another_researchers_corpus_is_404(api, corpus, other_user):
    services.metric_model_default(key="readability")
    bob = client_of(other_user)
    response = bob.post("/api/metrics/runs/", {"metric_model": "readability", "corpus": corpus.slug}, format="json")
    assert response.status_code == 404 and not ScoringRun.objects.exists()
    api.post("/api/metrics/runs/", {"metric_model": "readability", "corpus": corpus.slug}, format="json")
    assert bob.get("/api/metrics/runs/").json()["count"] == 0
    assert bob.get(f"/api/metrics/runs/{ScoringRun.objects.get().pk}/").status_code == 404


def test_judges_are_listed_for_their_owner_only(api, other_user, user, make_study, loopback_allowed):
    from metrics.scoring.judges import judge_model_create
    from tests.studies.chat.helpers import bot_system

    study = make_study("likert")
    system = bot_system("judge-bot", "http://127.0.0.1:9/v1", protocol="openai")
    endpoint = system.endpoints.get(owner=user)
    judge_model_create(owner=user, endpoint_id=endpoint.pk, study=study, criterion=study.criteria.first().name)
    listed = api.get("/api/metrics/judges/").json()
    assert listed["count"] == 1 and listed["results"][0]["metric"] == "llm_judge"
    assert client_of(other_user).get("/api/metrics/judges/").json()["count"] == 0
