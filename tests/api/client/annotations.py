"""Annotation studies through the generated client (run by tests/api/test_generated_client.py in the generator's
Python): no hand-written HTTP call.

``python annotations.py per_turn BASE TOKEN DIALOGUES CRITERION`` imports a dialogue file, makes a dialogue-unit
study asking the per-turn criterion (JSON: a criterion spec, e.g. ABC-Eval's behaviours), authors a per-turn check
dialogue and its settings, publishes it and makes two invitations; prints JSON.
``python annotations.py rate_turns BASE - INVITE_URL careful|careless`` takes part as a bot: careful ticks
"redundant" on a turn that repeats an earlier one and "follow-up" on a question; careless ticks nothing.
``python annotations.py turns_report BASE TOKEN STUDY`` reads the check list, the report's per-turn section, the
ratings export and the report's workbook (its per-turn sheet); prints JSON.
``python annotations.py spans BASE TOKEN EXPERIMENT CORPUS`` makes a response-unit study with a span criterion
on the corpus, publishes it, two invitations; ``rate_spans BASE - INVITE_URL N`` marks the first N words of each
target (labels in turn); ``spans_report BASE TOKEN STUDY`` reads every span page by page and the agreement.
``python annotations.py dataio BASE TOKEN LABEL_STUDIO_FILE POTATO_FILE`` imports a Label Studio task export
(its annotations become a closed study) and a Potato data file, and downloads the closed study's Label Studio
export; prints JSON."""
import csv
import io
import json
import re
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
    studies_report_download_retrieve,
    studies_report_retrieve,
    study_check_create,
    study_checks_list,
    study_checks_settings,
    study_label_studio_export,
    study_span_agreement,
    study_spans,
)
from concord_client.models import (
    CheckCreateInputRequest,
    CheckCreateInputRequestContextType1Item,
    CheckRuleRequest,
    CheckRuleRequestTurns,
    ChecksSettingsRequest,
    CriterionRequest,
    DesignEnum,
    ExperimentCreateInputRequest,
    ImportInputRequest,
    InviteCreateInputRequest,
    JudgementKindEnum,
    KindEnum,
    RaterAnswerInputRequest,
    RaterAnswerInputRequestAnswers,
    RaterSessionInputRequest,
    RaterSessionInputRequestLink,
    RaterSubmitInputRequest,
    RaterSubmitInputRequestQuestionnaire,
    StudiesReportDownloadRetrieveFormat,
    StudyCreateInputRequest,
    StudyItemsBuildInputRequest,
    UnitEnum,
)
from concord_client.types import UNSET, File
from drive import answer, ok

# A known bad dialogue for the check: the bot repeats the user (turn 1), then asks a follow-up question (turn 3).
CHECK_DIALOGUE = [{"speaker": "human", "text": "I love hiking."}, {"speaker": "model", "text": "I love hiking."},
                  {"speaker": "human", "text": "Where do you hike?"},
                  {"speaker": "model", "text": "Which hills do you like best?"}]
CHECK_TURNS = {"1": ["redundant"], "3": ["follow-up"]}
SPAN_LABELS = ["factual error", "off-topic"]


def upload(client, path, **extra):
    with open(path, "rb") as stream:
        return ok(imports_create.sync_detailed(client=client, body=ImportInputRequest(
            file=File(payload=io.BytesIO(stream.read()), file_name=path.rpartition("/")[2]), **extra)), 201)


def invites(client, study, n, label):
    return [ok(invite_create.sync_detailed(slug=study, client=client,
                                           body=InviteCreateInputRequest(label=f"{label} {i}")), 201).url
            for i in range(n)]


def session_of(client, invite_url, secret):
    parts = urlsplit(invite_url)
    key = parts.path.rstrip("/").rpartition("/")[2]
    link = RaterSessionInputRequestLink.from_dict({"invite": parse_qs(parts.query)["invite"][0]})
    session = ok(rater_session_create.sync_detailed(key=key, client=client, body=RaterSessionInputRequest(
        link=link, consent=True, client_secret=secret)), 201)
    return session, {"token": session.token, "client": client, "x_concord_rater_key": session.key}


def submit(session, rater):
    questionnaire = RaterSubmitInputRequestQuestionnaire.from_dict(
        {q.name: "no" if q.kind == "yes_no" else "" for q in session.questionnaire})
    return ok(rater_submit.sync_detailed(**rater, body=RaterSubmitInputRequest(questionnaire=questionnaire)))


# --- a per-turn study (ABC-Eval) with a check dialogue -------------------------------------------------------

def per_turn(client, dialogues_file, criterion_json):
    spec = json.loads(criterion_json)
    imported = upload(client, dialogues_file, corpus="per-turn-dialogues")
    experiment = ok(experiments_create_create.sync_detailed(
        client=client, body=ExperimentCreateInputRequest(title="Per-turn via client")), 201)
    criterion = CriterionRequest(name=spec["name"], question=spec["question"], kind=JudgementKindEnum.PER_TURN,
                                 options=spec["options"])
    study = ok(studies_create_create.sync_detailed(client=client, body=StudyCreateInputRequest(
        experiment=experiment.slug, title="ABC-Eval via client", design=DesignEnum.LIKERT, unit=UnitEnum.DIALOGUE,
        raters_per_item=2, items_per_assignment=imported.conversations, criteria=[criterion])), 201)
    built = ok(studies_items_build_create.sync_detailed(slug=study.slug, client=client,
                                                        body=StudyItemsBuildInputRequest(corpus=imported.corpus)))
    check = ok(study_check_create.sync_detailed(slug=study.slug, client=client, body=CheckCreateInputRequest(
        kind=KindEnum.GOLD, context=[CheckCreateInputRequestContextType1Item(**turn) for turn in CHECK_DIALOGUE],
        rules=[CheckRuleRequest(criterion=spec["name"], response=1, turns=CheckRuleRequestTurns.from_dict(CHECK_TURNS),
                                min_match=1.0)])), 201)
    settings = ok(study_checks_settings.sync_detailed(slug=study.slug, client=client,
                                                      body=ChecksSettingsRequest(per_assignment=1, min_pass_rate=1.0)))
    ok(studies_publish_create.sync_detailed(slug=study.slug, client=client))
    return {"corpus": imported.corpus, "format": imported.format_, "conversations": imported.conversations,
            "study": study.slug, "items": built.items, "check": check.id, "check_kind": check.kind.value,
            "check_rules": [r.to_dict() for r in check.rules],
            "check_turns": [[t.speaker, t.text] for t in check.turns], "per_assignment": settings.per_assignment,
            "invite_urls": invites(client, study.slug, 2, "per-turn bot")}


def turn_labels(text, earlier, careful):
    """What the bot ticks on one judged turn."""
    if not careful:
        return []
    labels = ["redundant"] if text in earlier else []
    return labels + (["follow-up"] if text.rstrip().endswith("?") else [])


def rate_turns(client, invite_url, how):
    session, rater = session_of(client, invite_url, f"generated-per-turn-bot-{how}")
    answered = []  # per item: the labels by turn
    for item in ok(rater_items.sync_detailed(**rater, limit=1000)).results:
        # the dialogue judged: the target's own turns, else the item's context (a dialogue-unit item)
        turns = {target.key: [turn.text for turn in target.turns or item.context] for target in item.targets}
        answers = {}
        for field in item.fields:
            if field.kind.value == "per_turn":
                texts = turns[field.target]
                answers[field.name] = turn_labels(texts[field.turn], texts[:field.turn], how == "careful")
            else:
                answers[field.name] = answer(field, [t.key for t in item.targets])
        done = ok(rater_answer.sync_detailed(position=item.position, **rater, body=RaterAnswerInputRequest(
            answers=RaterAnswerInputRequestAnswers.from_dict(answers), active_ms=3000.0)))
        assert done.answered, done
        answered.append({str(f.turn): answers[f.name] for f in item.fields if f.kind.value == "per_turn"})
    submitted = submit(session, rater)
    return {"token": session.token, "status": submitted.status, "answers": answered}


def turns_report(client, study):
    from openpyxl import load_workbook

    listed = ok(study_checks_list.sync_detailed(slug=study, client=client))
    report = ok(studies_report_retrieve.sync_detailed(slug=study, client=client))
    sections = [{"criterion": c.criterion, "mode": c.mode, "turns": c.turns, "dialogues": c.dialogues,
                 "raters": c.raters,
                 "rates": [[b.label, [[s.system, s.count, s.n, s.rate] for s in b.systems], b.test.p, b.test.df]
                           for b in c.rates],
                 "agreement": [[a.label, a.alpha, a.raw_agreement, a.pairs] for a in c.agreement.per_label],
                 "units": c.agreement.units} for c in report.per_turn]
    export = studies_ratings_retrieve.sync_detailed(slug=study, client=client)
    assert export.status_code == 200, export.content[:300]
    rows = list(csv.DictReader(io.StringIO(export.content.decode())))
    workbook = studies_report_download_retrieve.sync_detailed(slug=study, client=client,
                                                              format_=StudiesReportDownloadRetrieveFormat.XLSX)
    assert workbook.status_code == 200, workbook.content[:300]
    book = load_workbook(io.BytesIO(workbook.content), read_only=True)
    sheet = next(name for name in book.sheetnames if name.lower().startswith("per-turn"))
    values = list(book[sheet].values)
    sheet_rows = [dict(zip(values[0], row, strict=True)) for row in values[1:]]
    return {"checks": [[c.id, c.kind.value, [r.to_dict() for r in c.rules]] for c in listed.results], "checks_count": listed.count,
            "flagged": listed.flagged, "per_assignment": listed.settings.per_assignment, "per_turn": sections,
            "export_columns": list(rows[0]) if rows else [], "export_rows": len(rows),
            "sheet": [[r["criterion"], r["behaviour"], r["system"], r["count"], r["turns"]] for r in sheet_rows]}


# --- a span study ---------------------------------------------------------------------------------------------

def spans(client, experiment, corpus):
    study = ok(studies_create_create.sync_detailed(client=client, body=StudyCreateInputRequest(
        experiment=experiment, title="Spans via client", design=DesignEnum.LIKERT, raters_per_item=2,
        items_per_assignment=6, criteria=[CriterionRequest(name="errors", question="Mark what is wrong",
                                                           kind=JudgementKindEnum.SPANS,
                                                           options={"labels": SPAN_LABELS, "overlap": False})])), 201)
    built = ok(studies_items_build_create.sync_detailed(slug=study.slug, client=client, body=StudyItemsBuildInputRequest(
        corpus=corpus, systems=["seq2seq", "hred"])))
    ok(studies_publish_create.sync_detailed(slug=study.slug, client=client))
    return {"study": study.slug, "items": built.items, "invite_urls": invites(client, study.slug, 2, "span bot")}


def words(text, n):
    """The first ``n`` words of ``text`` as spans, the labels in turn."""
    return [{"start": m.start(), "end": m.end(), "label": SPAN_LABELS[i % len(SPAN_LABELS)]}
            for i, m in enumerate(re.finditer(r"\w+", text)) if i < n]


def rate_spans(client, invite_url, n):
    session, rater = session_of(client, invite_url, f"generated-span-bot-{n}")
    marked = []
    for item in ok(rater_items.sync_detailed(**rater, limit=1000)).results:
        texts = {target.key: target.text for target in item.targets}
        answers = {f.name: words(texts[f.target], int(n)) if f.kind.value == "spans" else
                   answer(f, list(texts)) for f in item.fields}
        ok(rater_answer.sync_detailed(position=item.position, **rater, body=RaterAnswerInputRequest(
            answers=RaterAnswerInputRequestAnswers.from_dict(answers))))
        marked += [[texts[f.target], s["start"], s["end"], s["label"]] for f in item.fields if f.kind.value == "spans"
                   for s in answers[f.name]]
    submitted = submit(session, rater)
    return {"token": session.token, "status": submitted.status, "marked": marked}


def spans_report(client, study):
    rows, offset = [], 0
    while True:
        page = ok(study_spans.sync_detailed(slug=study, client=client, limit=7, offset=offset))
        rows += page.results
        offset += len(page.results)
        if not page.next_:
            break
    agreement = ok(study_span_agreement.sync_detailed(slug=study, client=client))
    return {"count": page.count,
            "rows": [[r.source.value, r.rater, r.target, r.turn, r.start, r.end, r.label, r.text] for r in rows],
            "agreement": [{"criterion": a.criterion, "labels": a.labels, "ratings": a.ratings, "raters": a.raters,
                           "token": [a.token.alpha, a.token.fleiss_kappa, a.token.cohen_kappa, a.token.raw_agreement,
                                     a.token.tokens, a.token.method],
                           "exact": [a.exact.f1, a.exact.pairs, a.exact.spans],
                           "overlap": [a.overlap.f1, a.overlap.pairs, a.overlap.spans]} for a in agreement]}


# --- Label Studio and Potato ---------------------------------------------------------------------------------

def dataio(client, label_studio_file, potato_file):
    imported = upload(client, label_studio_file, corpus="from-label-studio")
    exported = ok(study_label_studio_export.sync_detailed(slug=imported.benchmark_study, client=client))
    potato = upload(client, potato_file, corpus="from-potato", judged_speaker="Bot")
    results = []
    for task in exported.tasks:
        for annotation in task.annotations:
            for result in annotation.result:
                value = result.value
                given = next(v for v in (value.rating, value.number, value.choices, value.text) if v is not UNSET)
                results.append([task.data.system, task.data.response, annotation.completed_by, result.from_name,
                                result.type_.value, given])
    return {"label_studio": {"corpus": imported.corpus, "format": imported.format_,
                             "conversations": imported.conversations, "responses": imported.responses,
                             "study": imported.benchmark_study, "ratings": imported.ratings},
            "potato": {"corpus": potato.corpus, "format": potato.format_, "conversations": potato.conversations,
                       "unit": potato.unit.value if potato.unit else None},
            "label_config": exported.label_config, "tasks": len(exported.tasks), "results": results}


if __name__ == "__main__":
    action, base, token, *rest = sys.argv[1:]
    if action.startswith("rate_"):  # a rater: nobody's token
        rater_client = Client(base_url=base, raise_on_unexpected_status=True)
        print(json.dumps({"rate_turns": rate_turns, "rate_spans": rate_spans}[action](rater_client, *rest)))
        raise SystemExit(0)
    client = AuthenticatedClient(base_url=base, token=token, prefix="Token", raise_on_unexpected_status=True)
    actions = {"per_turn": per_turn, "turns_report": turns_report, "spans": spans, "spans_report": spans_report,
               "dataio": dataio}
    print(json.dumps(actions[action](client, *rest)))
