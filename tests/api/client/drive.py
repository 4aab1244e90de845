"""Drives a study end to end with the client openapi-python-client generated from Concord's schema (run by
tests/api/test_generated_client.py in the generator's own Python, which has httpx and attrs).

``python drive.py setup BASE TOKEN CORPUS_FILE`` creates an experiment, imports the file, creates a
study with nested criteria, builds its items, publishes it and makes an invite; prints JSON.
``python drive.py rate BASE - INVITE_URL`` takes part as a bot rater through the rater API, with no researcher
token: a session from the invitation link, every item answered from its own field list, the questionnaire
answered, submitted; prints JSON.
``python drive.py results BASE TOKEN STUDY`` reads the report and the CSV export; prints JSON."""
import csv
import io
import json
import sys
from urllib.parse import parse_qs, urlsplit

from concord_client import AuthenticatedClient, Client
from concord_client.api.experiments import experiments_create_create
from concord_client.api.imports import imports_create
from concord_client.api.rate import rater_answer, rater_items, rater_session_create, rater_submit
from concord_client.api.studies import (
    invite_create,
    studies_create_create,
    studies_items_build_create,
    studies_publish_create,
    studies_ratings_retrieve,
    studies_report_retrieve,
)
from concord_client.models import (
    CriterionRequest,
    DesignEnum,
    ExperimentCreateInputRequest,
    ImportInputRequest,
    InviteCreateInputRequest,
    RaterAnswerInputRequest,
    RaterAnswerInputRequestAnswers,
    RaterSessionInputRequest,
    RaterSessionInputRequestLink,
    RaterSubmitInputRequest,
    RaterSubmitInputRequestQuestionnaire,
    StudyCreateInputRequest,
    StudyItemsBuildInputRequest,
)
from concord_client.types import File


def ok(response, code=200):
    assert response.status_code == code, (response.status_code, response.content[:500])
    return response.parsed


def setup(client, corpus_file):
    experiment = ok(experiments_create_create.sync_detailed(
        client=client, body=ExperimentCreateInputRequest(title="Generated client"), idempotency_key="e2e-1"), 201)
    with open(corpus_file, "rb") as stream:
        imported = ok(imports_create.sync_detailed(client=client, body=ImportInputRequest(
            file=File(payload=io.BytesIO(stream.read()), file_name="small.jsonl"), corpus="e2e-corpus")), 201)
    study = ok(studies_create_create.sync_detailed(client=client, body=StudyCreateInputRequest(
        experiment=experiment.slug, title="Likert via client", design=DesignEnum.LIKERT, raters_per_item=1,
        items_per_assignment=6, criteria=[CriterionRequest(name="fluency", question="How fluent is it?"),
                                          CriterionRequest(name="coherence")])), 201)
    built = ok(studies_items_build_create.sync_detailed(slug=study.slug, client=client, body=StudyItemsBuildInputRequest(
        corpus=imported.corpus, systems=["seq2seq", "hred", "thred"], reference_system="human")))
    published = ok(studies_publish_create.sync_detailed(slug=study.slug, client=client))
    invite = ok(invite_create.sync_detailed(slug=study.slug, client=client,
                                            body=InviteCreateInputRequest(label="rater one")), 201)
    return {"experiment": experiment.slug, "corpus": imported.corpus, "study": study.slug,
            "criteria": [c.name for c in study.criteria], "items": built.items, "status": published.status.value,
            "invite_url": invite.url}


def answer(field, targets):
    """What the bot answers to one field: the scale's top point for the first response, lower after."""
    if field.kind.value == "scale":
        points = field.choices or [str(int(field.min_)), str(int(field.max_))]
        return points[max(0, len(points) - 1 - targets.index(field.target))]
    if field.kind.value in ("categorical", "choice", "best"):
        return field.choices[0]
    if field.kind.value == "worst":
        return field.choices[-1]
    if field.kind.value == "multilabel":
        return [field.choices[0]]
    return "A bot's reason."


def rate(client, invite_url):
    """Take part through the rater API: the study's key and the invite come from the link itself."""
    parts = urlsplit(invite_url)
    key = parts.path.rstrip("/").rpartition("/")[2]
    link = RaterSessionInputRequestLink.from_dict({"invite": parse_qs(parts.query)["invite"][0]})
    session = ok(rater_session_create.sync_detailed(key=key, client=client, body=RaterSessionInputRequest(
        link=link, consent=True, client_secret="generated-client-bot-secret")), 201)
    rater = {"token": session.token, "client": client, "x_concord_rater_key": session.key}
    items = ok(rater_items.sync_detailed(**rater, limit=1000))
    fields_answered = 0
    for item in items.results:
        targets = [target.key for target in item.targets]
        answers = RaterAnswerInputRequestAnswers.from_dict({f.name: answer(f, targets) for f in item.fields})
        fields_answered += len(item.fields)
        done = ok(rater_answer.sync_detailed(position=item.position, **rater,
                                             body=RaterAnswerInputRequest(answers=answers, active_ms=2500.0)))
        assert done.answered, done
    questionnaire = RaterSubmitInputRequestQuestionnaire.from_dict(
        {q.name: "no" if q.kind == "yes_no" else "" for q in session.questionnaire})
    submitted = ok(rater_submit.sync_detailed(**rater, body=RaterSubmitInputRequest(questionnaire=questionnaire)))
    return {"token": session.token, "items": len(items.results), "fields": fields_answered,
            "status": submitted.status, "completion_code": submitted.completion_code}


def results(client, study):
    report = studies_report_retrieve.sync_detailed(slug=study, client=client)
    assert report.status_code == 200, report.content[:300]
    export = studies_ratings_retrieve.sync_detailed(slug=study, client=client)
    assert export.status_code == 200, export.content[:300]
    body = json.loads(report.content)
    # the ratings each ICC table reads: one cell per condition and criterion, every rating in one of them
    tables = body.get("tables") or {}
    counted = [sum(cell.get("n_ratings") or 0 for cell in cells) for cells in tables.values()] if isinstance(
        tables, dict) else []
    rows = list(csv.DictReader(io.StringIO(export.content.decode())))
    return {"report_keys": sorted(body), "export_rows": len(rows), "report_ratings": max(counted, default=None)}


if __name__ == "__main__":
    action, base, token, argument = sys.argv[1:5]
    if action == "rate":  # a rater: nobody's token
        print(json.dumps(rate(Client(base_url=base, raise_on_unexpected_status=True), argument)))
        raise SystemExit(0)
    client = AuthenticatedClient(base_url=base, token=token, prefix="Token", raise_on_unexpected_status=True)
    print(json.dumps(setup(client, argument) if action == "setup" else results(client, argument)))
