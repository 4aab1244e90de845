"""Drives a study end to end with the client openapi-python-client generated from Concord's schema (run by
tests/api/test_generated_client.py in the generator's own Python, which has httpx and attrs).

``python drive.py setup BASE TOKEN CORPUS_FILE`` creates an experiment, imports the file, creates a
study with nested criteria, builds its items, publishes it and makes an invite; prints JSON.
``python drive.py results BASE TOKEN STUDY`` reads the report and the CSV export; prints JSON."""
import io
import json
import sys

from concord_client import AuthenticatedClient
from concord_client.api.experiments import experiments_create_create
from concord_client.api.imports import imports_create
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


def results(client, study):
    report = studies_report_retrieve.sync_detailed(slug=study, client=client)
    assert report.status_code == 200, report.content[:300]
    export = studies_ratings_retrieve.sync_detailed(slug=study, client=client)
    assert export.status_code == 200, export.content[:300]
    return {"report_keys": sorted(json.loads(report.content)), "export_lines": export.content.decode().count("\n")}


if __name__ == "__main__":
    action, base, token, argument = sys.argv[1:5]
    client = AuthenticatedClient(base_url=base, token=token, prefix="Token", raise_on_unexpected_status=True)
    print(json.dumps(setup(client, argument) if action == "setup" else results(client, argument)))
