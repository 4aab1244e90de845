"""LLM judges as metric models (metrics.judging.services, metrics.implementations.llm_judge): made from a
researcher's own OpenAI-compatible endpoint and a criterion of their study, scoring a study through the
ordinary resumable scoring run against a real local judge server, missing answers stored as nothing,
tokens and cost in the run's log, the cache, and nobody else's judge or endpoint usable."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from metrics.implementations.llm_judge import LLMJudge
from metrics.judging import services as judge_services
from metrics.judging.local_judge import LocalJudge, rule_score
from metrics.models import JudgeAnswer, MetricModel, MetricScore
from metrics.scoring import judges, selectors, services
from studies.chat.keys import key_encrypt
from studies.models import Response, System, SystemEndpoint

pytestmark = pytest.mark.django_db


def endpoint_of(owner, url: str, *, protocol: str = "openai", key: str = "sk-alice", name: str = "judge-a"):
    fields = {f.name for f in SystemEndpoint._meta.get_fields()}
    extra = {"owner": owner} if "owner" in fields else {}
    system = System.objects.create(name=name)
    return SystemEndpoint.objects.create(system=system, protocol=protocol, url=url, model_name="rule-judge",
                                         key_encrypted=key_encrypt(key) if key else "", **extra)


@pytest.fixture
def judge(loopback_allowed):
    with LocalJudge() as server:
        yield server


@pytest.fixture
def likert(make_study):
    return make_study("likert", points=5)


def _judge_model(user, study, server, behaviour="good", **options):
    endpoint = endpoint_of(user, server.url(behaviour))
    criterion = study.criteria.order_by("position").first().name
    return judges.judge_model_create(owner=user, endpoint_id=endpoint.pk, study=study, criterion=criterion,
                                             **options)


def _run(model, study):
    return services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))


def test_llm_judge_model_snapshots_the_study_criterion(user, likert, judge):
    model = _judge_model(user, likert, judge, price_prompt_per_million=2.0)
    criterion = likert.criteria.order_by("position").first()
    assert model.owner == user and model.metric.key == "llm_judge" and model.metric.kind == "judge"
    assert model.config["criterion"]["question"] == criterion.question
    assert model.config["criterion"]["points"] == [1, 2, 3, 4, 5] and model.config["level"] == "turn"
    assert model.name == f"judge-{likert.slug}-{criterion.name}"[:80]


def test_llm_judge_model_refuses_field_by_field_and_makes_nothing(user, likert, judge):
    concord = endpoint_of(user, judge.url(), protocol="concord", name="concord-bot")
    with pytest.raises(ValidationError) as caught:
        judges.judge_model_create(owner=user, endpoint_id=concord.pk, study=likert, criterion="nope",
                                          name="Bad Name!", concurrency=0)
    errors = caught.value.message_dict
    assert "OpenAI-compatible" in errors["endpoint"][0]
    assert "has no criterion 'nope'" in errors["criterion"][0] and likert.criteria.first().name in errors["criterion"][0]
    assert set(errors) == {"endpoint", "criterion", "name", "concurrency"}
    assert not MetricModel.objects.filter(metric__key="llm_judge").exists()


def test_llm_judge_scores_a_study_and_counts_tokens(user, likert, judge):
    model = _judge_model(user, likert, judge, price_prompt_per_million=1.0)
    run = _run(model, likert)
    responses = Response.objects.filter(pk__in=selectors.run_responses(run))
    assert run.status == "done" and run.done == run.total == responses.count() > 0
    for response in responses:
        expected = rule_score(f"\nResponse:\n{response.text}\n\nEvaluation form")
        assert MetricScore.objects.get(metric_model=model, response=response).value == float(expected)
    assert JudgeAnswer.objects.count() == len(judge.requests) == responses.count()
    assert "prompt + " in run.log and "completion tokens" in run.log and "cost 0.00" in run.log
    (_, headers, body), *_ = judge.requests
    assert headers["Authorization"] == "Bearer sk-alice" and body["temperature"] == 0.0


def test_llm_judge_refusals_store_no_score_and_say_why(user, likert, judge):
    model = _judge_model(user, likert, judge, behaviour="refuse")
    run = _run(model, likert)
    assert MetricScore.objects.filter(metric_model=model).count() == 0  # missing, never 0
    assert f"missing, no score stored: refused {run.total}" in run.log


def test_llm_judge_logprobs_give_the_weighted_score(user, likert, judge):
    model = _judge_model(user, likert, judge, behaviour="logprobs", logprobs=True)
    _run(model, likert)
    values = set(MetricScore.objects.filter(metric_model=model).values_list("value", flat=True))
    assert values and not all(float(v).is_integer() for v in values)  # expectations between the points
    assert all(judge.requests[i][2]["logprobs"] is True for i in range(len(judge.requests)))


def test_llm_judge_resumes_after_a_killed_worker_and_pays_once(user, likert, judge, monkeypatch):
    model = _judge_model(user, likert, judge, concurrency=2)  # batches of 4
    real, calls = LLMJudge._judge, {"n": 0}

    def dies_in_the_third_batch(self, inputs):
        calls["n"] += 1
        if calls["n"] == 3:
            real(self, inputs)  # the judge answered (and was cached) but the worker died before storing
            raise RuntimeError("worker killed")
        return real(self, inputs)

    monkeypatch.setattr(LLMJudge, "_judge", dies_in_the_third_batch)
    run = services.scoring_run_create(metric_model=model, study=likert, enqueue=False)
    with pytest.raises(RuntimeError):
        services.scoring_run_execute(run=run)
    assert MetricScore.objects.filter(metric_model=model).count() == 8
    monkeypatch.setattr(LLMJudge, "_judge", real)
    run.refresh_from_db()
    resumed = services.scoring_run_execute(run=run)
    assert resumed.status == "done" and resumed.attempts == 2
    assert MetricScore.objects.filter(metric_model=model).count() == resumed.total
    assert len(judge.requests) == resumed.total  # the third batch's answers came from the cache


def test_llm_judge_of_another_researcher_is_invisible(user, other_user, likert, judge, client):
    model = _judge_model(user, likert, judge)
    assert model not in selectors.metric_models_usable_by(other_user)
    assert model in selectors.metric_models_usable_by(user)
    client.force_login(other_user)
    assert client.get(f"/metrics/models/{model.name}/").status_code == 404
    assert model.name not in client.get("/metrics/").content.decode()


def test_llm_judge_run_stops_when_the_owner_lost_the_endpoint(user, likert, judge):
    model = _judge_model(user, likert, judge)
    SystemEndpoint.objects.all().delete()
    with pytest.raises(ValueError, match="no longer its owner's"):
        _run(model, likert)
    assert judge.requests == []


def test_llm_judge_endpoint_of_another_researcher_cannot_be_used(user, other_user, likert, judge, make_study):
    """B names A's endpoint for a judge of B's own study: refused by field, nothing made, nothing sent."""
    from studies.authoring import services as authoring

    a_endpoint = endpoint_of(user, judge.url())
    b_study = make_study("likert", points=5, experiment=authoring.experiment_create(owner=other_user, title="B's"))
    with pytest.raises(ValidationError) as caught:
        judges.judge_model_create(owner=other_user, endpoint_id=a_endpoint.pk, study=b_study,
                                          criterion=b_study.criteria.first().name)
    assert "no endpoint of yours" in caught.value.message_dict["endpoint"][0]
    assert not MetricModel.objects.filter(metric__key="llm_judge").exists() and judge.requests == []


def test_llm_judge_endpoint_given_to_someone_else_stops_the_judge(user, other_user, likert, judge):
    model = _judge_model(user, likert, judge)
    SystemEndpoint.objects.update(owner=other_user)  # the key is no longer the judge owner's to send
    with pytest.raises(ValueError, match="no longer its owner's"):
        _run(model, likert)
    assert judge.requests == []


def test_llm_judge_endpoint_api_creates_scores_and_refuses_others(user, other_user, likert, judge, api):
    from rest_framework.test import APIClient

    from tests.factories import token_for

    endpoint = endpoint_of(user, judge.url())
    criterion = likert.criteria.first().name
    created = api.post("/api/metrics/judges/", {"endpoint": endpoint.pk, "study": likert.slug, "criterion": criterion},
                       format="json")
    assert created.status_code == 201, created.content
    name = created.json()["name"]
    bad = api.post("/api/metrics/judges/", {"endpoint": endpoint.pk, "study": likert.slug, "criterion": "nope"},
                   format="json")
    assert bad.status_code == 400 and "criterion" in bad.content.decode()
    run = api.post("/api/metrics/runs/", {"metric_model": name, "study": likert.slug}, format="json")
    assert run.status_code == 201
    bob = APIClient()
    bob.credentials(HTTP_AUTHORIZATION=f"Token {token_for(other_user)}")
    assert name not in bob.get("/api/metrics/models/").content.decode()
    assert bob.get(f"/api/metrics/models/{name}/").status_code == 404
    assert bob.post("/api/metrics/judges/", {"endpoint": endpoint.pk, "study": likert.slug, "criterion": criterion},
                    format="json").status_code == 404  # not B's study
    assert MetricModel.objects.filter(metric__key="llm_judge").count() == 1


def test_llm_judge_create_command_names_the_field(user, likert, judge):
    import io

    from django.core.management import CommandError, call_command

    endpoint = endpoint_of(user, judge.url())
    out = io.StringIO()
    call_command("judge_create", "--owner", user.username, "--endpoint", str(endpoint.pk), "--study", likert.slug,
                 "--criterion", likert.criteria.first().name, "--name", "my-judge", stdout=out)
    assert "Judge my-judge" in out.getvalue() and MetricModel.objects.get(name="my-judge").owner == user
    with pytest.raises(CommandError, match="--criterion: "):
        call_command("judge_create", "--owner", user.username, "--endpoint", str(endpoint.pk), "--study",
                     likert.slug, "--criterion", "nope")


def test_llm_judge_demo_scores_the_likert_demo(loopback_allowed):
    """make demo: the demo's rule-based judge scores the Likert demo study (with log-probabilities); run
    again, it makes no second judge."""
    import io

    from django.core.management import call_command

    from studies.authoring.demo import demo_load

    demo_load()
    out = io.StringIO()
    call_command("demo_judge", "--port", "0", stdout=out)
    model = MetricModel.objects.get(metric__key="llm_judge")
    assert model.owner.username == "researcher" and model.config["logprobs"] is True
    scored = MetricScore.objects.filter(metric_model=model).count()
    assert scored > 0 and f"{scored} of {scored} responses scored" in out.getvalue()
    call_command("demo_judge", "--port", "0", stdout=io.StringIO())
    assert MetricModel.objects.filter(metric__key="llm_judge").count() == 1
    assert MetricScore.objects.filter(metric_model=model).count() == scored


def test_llm_judge_made_from_the_metrics_page_only_with_your_endpoint(user, other_user, likert, judge, client):
    endpoint = endpoint_of(user, judge.url())
    client.force_login(user)
    page = client.get("/metrics/").content.decode()
    assert 'id="make-judge"' in page and f'<option value="{endpoint.pk}">judge-a (rule-judge)</option>' in page
    criterion = likert.criteria.first().name
    made = client.post("/metrics/judges/start/", {"endpoint": endpoint.pk, "study": likert.slug, "criterion": criterion},
                       follow=True)
    assert "made: choose it" in made.content.decode()
    assert MetricModel.objects.get(metric__key="llm_judge").owner == user
    refused = client.post("/metrics/judges/start/", {"endpoint": endpoint.pk, "study": likert.slug,
                                                     "criterion": "nope"}, follow=True)
    assert "criterion: " in refused.content.decode()
    client.force_login(other_user)
    other_page = client.get("/metrics/").content.decode()
    assert f'<option value="{endpoint.pk}">' not in other_page and "you have none yet" in other_page
    assert client.post("/metrics/judges/start/", {"endpoint": endpoint.pk, "study": likert.slug,
                                                  "criterion": criterion}).status_code == 404  # not B's study
    assert MetricModel.objects.filter(metric__key="llm_judge").count() == 1


def test_llm_judge_cache_answers_a_batch_in_one_query(judge, django_assert_num_queries):
    """A scoring batch asks the cache for every prompt: one query for all of them, stored or not."""
    from metrics.judging.client import JudgeEndpoint
    from metrics.judging.prompt import JudgeCriterion
    from metrics.judging.run import JudgeInput, judge_all
    from studies.chat.addresses import networks_parse

    criterion = JudgeCriterion(name="c", question="Is it coherent?")
    endpoint = JudgeEndpoint(url=judge.url(), model="m")
    inputs = [JudgeInput(("Plans?",), "word " * n) for n in range(8)]
    loopback = networks_parse(["127.0.0.1/32"])
    judge_all(endpoint, criterion, inputs[:4], cache=judge_services.JudgeCache(), allowed=loopback)
    with django_assert_num_queries(1):
        cache = judge_services.JudgeCache()
        cache.preload([])  # nothing asked: no query
        results = judge_all(endpoint, criterion, inputs[:4], cache=cache, allowed=loopback)
    assert all(r.cached for r in results) and len(judge.requests) == 4
