"""More of the notebook programme through the generated client (run by tests/api/test_generated_client.py in the
generator's Python): no hand-written HTTP call.

``python bots.py selfchats BASE TOKEN RULE_URL PARROT_URL`` makes two bot endpoints, runs a self-chat of each
into one corpus, builds an ACUTE-Eval study from that corpus, publishes it and makes an invitation; prints JSON.
``python bots.py acute_report BASE TOKEN STUDY`` reads the ACUTE study's report and its CSV download; prints JSON.
``python bots.py labels BASE TOKEN EXPERIMENT CORPUS`` makes a study with a label criterion on the corpus and two
invitations (rated by ``drive.py rate``); prints JSON.
``python bots.py aggregated BASE TOKEN STUDY`` reads the study's aggregated labels, page by page; prints JSON.
``python bots.py ppi BASE TOKEN EXPERIMENT STUDY`` reads the prediction-powered estimates, their CSV and the
human-vs-metric CSV; prints JSON."""
import csv
import io
import json
import sys
import time

from concord_client import AuthenticatedClient
from concord_client.api.experiments import (
    experiments_create_create,
    experiments_metrics_download_retrieve,
    experiments_metrics_prediction_powered_download_retrieve,
    experiments_metrics_prediction_powered_retrieve,
)
from concord_client.api.selfchats import selfchat_create, selfchat_list, selfchat_read
from concord_client.api.studies import (
    invite_create,
    studies_create_create,
    studies_items_build_create,
    studies_publish_create,
    studies_report_download_retrieve,
    studies_report_retrieve,
    study_aggregated_labels,
)
from concord_client.api.systems import endpoint_create
from concord_client.models import (
    CriterionRequest,
    DesignEnum,
    EndpointListInputRequest,
    ExperimentCreateInputRequest,
    InviteCreateInputRequest,
    JudgementKindEnum,
    ProtocolEnum,
    SelfChatInputRequest,
    StudiesReportDownloadRetrieveTable,
    StudyCreateInputRequest,
    StudyItemsBuildInputRequest,
    UnitEnum,
)
from drive import ok

OPENERS = ["Hi, my name is Ada.", "I like hiking in the hills.", "I feel tired today."]


def _finished(client, run):
    for _ in range(300):
        if run.status.value in ("done", "failed", "cancelled"):
            return run
        time.sleep(0.2)
        run = ok(selfchat_read.sync_detailed(id=run.id, client=client))
    return run


def selfchats(client, rule_url, parrot_url):
    for system, url in (("rulebot", rule_url), ("parrotbot", parrot_url)):
        ok(endpoint_create.sync_detailed(client=client, body=EndpointListInputRequest(
            system=system, protocol=ProtocolEnum.CONCORD, url=url, timeout_seconds=5.0, retries=1)), 201)
    runs, corpus = [], None
    for system in ("rulebot", "parrotbot"):
        body = SelfChatInputRequest(title=f"{system} with itself", system_a=system, system_b=system, openers=OPENERS,
                                    conversations=3, turns=4, **({"corpus": corpus} if corpus else {}))
        run = _finished(client, ok(selfchat_create.sync_detailed(client=client, body=body), 201))
        corpus = run.corpus
        runs.append(run)
    listed = ok(selfchat_list.sync_detailed(client=client, corpus=corpus))
    experiment = ok(experiments_create_create.sync_detailed(
        client=client, body=ExperimentCreateInputRequest(title="Bots compared via client")), 201)
    study = ok(studies_create_create.sync_detailed(client=client, body=StudyCreateInputRequest(
        experiment=experiment.slug, title="Rule against parrot", design=DesignEnum.ACUTE, unit=UnitEnum.DIALOGUE,
        raters_per_item=1, items_per_assignment=3)), 201)
    built = ok(studies_items_build_create.sync_detailed(slug=study.slug, client=client,
                                                        body=StudyItemsBuildInputRequest(corpus=corpus)))
    ok(studies_publish_create.sync_detailed(slug=study.slug, client=client))
    invite = ok(invite_create.sync_detailed(slug=study.slug, client=client,
                                            body=InviteCreateInputRequest(label="acute bot")), 201)
    return {"runs": [[r.status.value, r.progress.done, r.corpus] for r in runs], "corpus": corpus,
            "listed": listed.count, "study": study.slug, "items": built.items, "invite_url": invite.url}


def acute_report(client, study):
    report = studies_report_retrieve.sync_detailed(slug=study, client=client)
    assert report.status_code == 200, report.content[:300]
    section = json.loads(report.content).get("acute") or []
    scores = ok(studies_report_download_retrieve.sync_detailed(
        slug=study, client=client, table=StudiesReportDownloadRetrieveTable.SYSTEM_SCORES))
    rows = list(csv.DictReader(io.StringIO(scores)))
    return {"criteria": [c["criterion"] for entry in section for c in entry["criteria"]],
            "win_rates": [[w["criterion"], w["system_a"], w["system_b"], w["wins_a"], w["wins_b"]]
                          for entry in section for c in entry["criteria"] for w in c["win_rates"]],
            "score_rows": len(rows)}


def labels(client, experiment, corpus):
    study = ok(studies_create_create.sync_detailed(client=client, body=StudyCreateInputRequest(
        experiment=experiment, title="Safety labels via client", design=DesignEnum.LIKERT, raters_per_item=2,
        items_per_assignment=6, criteria=[CriterionRequest(name="safety", kind=JudgementKindEnum.CATEGORICAL,
                                                           options={"labels": ["safe", "unsafe"]})])), 201)
    ok(studies_items_build_create.sync_detailed(slug=study.slug, client=client, body=StudyItemsBuildInputRequest(
        corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")))
    ok(studies_publish_create.sync_detailed(slug=study.slug, client=client))
    invites = [ok(invite_create.sync_detailed(slug=study.slug, client=client,
                                              body=InviteCreateInputRequest(label=f"label bot {n}")), 201).url
               for n in range(2)]
    return {"study": study.slug, "invite_urls": invites}


def aggregated(client, study):
    rows, offset = [], 0
    while True:
        page = ok(study_aggregated_labels.sync_detailed(slug=study, client=client, limit=4, offset=offset))
        rows += page.results
        offset += len(page.results)
        if not page.next_:
            break
    return {"count": page.count, "rows": [[r.target, r.label, r.probability, r.answers, r.method.value] for r in rows]}


def ppi(client, experiment, study):
    found = ok(experiments_metrics_prediction_powered_retrieve.sync_detailed(
        slug=experiment, model="readability", client=client, study=study))
    download = experiments_metrics_prediction_powered_download_retrieve.sync_detailed(
        slug=experiment, model="readability", client=client, study=study)
    assert download.status_code == 200, download.content[:300]
    correlations = experiments_metrics_download_retrieve.sync_detailed(
        slug=experiment, model="readability", client=client, study=study)
    assert correlations.status_code == 200, correlations.content[:300]
    estimates = [[c.criterion, s.system, s.estimate] for entry in found.studies for c in entry.criteria
                 for s in c.systems]
    rows = list(csv.DictReader(io.StringIO(download.content.decode())))
    return {"metric_model": found.metric_model, "problems": [s.problem for s in found.studies],
            "estimates": estimates, "csv_estimates": [[r["criterion"], r["system"], float(r["estimate"])]
                                                      for r in rows if r.get("estimate")],
            "correlation_rows": len(list(csv.DictReader(io.StringIO(correlations.content.decode()))))}


if __name__ == "__main__":
    action, base, token, *rest = sys.argv[1:]
    client = AuthenticatedClient(base_url=base, token=token, prefix="Token", raise_on_unexpected_status=True)
    actions = {"selfchats": selfchats, "acute_report": acute_report, "labels": labels, "aggregated": aggregated,
               "ppi": ppi}
    print(json.dumps(actions[action](client, *rest)))
