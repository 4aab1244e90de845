"""The notebook programme through the generated client (run by tests/api/test_generated_client.py in the
generator's Python): no hand-written HTTP call.

``python programme.py researcher BASE TOKEN BOT_URL CORPUS_SLUG`` sets up a bot endpoint (and tries it), a
chat-then-rate study with that bot, published, with an invitation; prints JSON.
``python programme.py chat BASE - INVITE_URL`` takes part as a bot rater through the rater API: it chats
with the system (turns, state, end) and rates each item, then submits; prints JSON.
``python programme.py review BASE TOKEN STUDY CORPUS_SLUG`` reads the review queue and the rater's evidence,
excludes and reinstates the rater, scores the study with two metrics and the whole corpus with one, and
reads the best-judge ranking; prints JSON."""
import json
import sys
import time
from urllib.parse import parse_qs, urlsplit

from concord_client import AuthenticatedClient, Client
from concord_client.api.experiments import experiments_create_create, judge_ranking
from concord_client.api.metrics import metrics_runs_create, metrics_runs_list, metrics_runs_retrieve
from concord_client.api.rate import (
    rater_answer,
    rater_chat_end,
    rater_chat_state,
    rater_chat_turn,
    rater_item,
    rater_items,
    rater_session_create,
    rater_submit,
)
from concord_client.api.studies import (
    assignment_list,
    invite_create,
    studies_create_create,
    studies_items_build_create,
    studies_publish_create,
    study_decision_revert,
    study_rater_decide,
    study_rater_evidence,
    study_review_queue,
)
from concord_client.api.systems import endpoint_create, endpoint_list, endpoint_try
from concord_client.models import (
    CriterionRequest,
    DesignEnum,
    EndpointListInputRequest,
    ExperimentCreateInputRequest,
    InviteCreateInputRequest,
    ProtocolEnum,
    RaterAnswerInputRequest,
    RaterAnswerInputRequestAnswers,
    RaterChatTurnInputRequest,
    RaterDecisionInputKindEnum,
    RaterDecisionInputRequest,
    RaterSessionInputRequest,
    RaterSessionInputRequestLink,
    RaterSubmitInputRequest,
    RaterSubmitInputRequestQuestionnaire,
    ScoringRunCreateInputRequest,
    StudyCreateInputRequest,
    StudyCreateInputRequestUnitConfig,
    StudyItemsBuildInputRequest,
    UnitEnum,
)
from drive import answer, ok


def researcher(client, bot_url):
    endpoint = ok(endpoint_create.sync_detailed(client=client, body=EndpointListInputRequest(
        system="gen-bot", protocol=ProtocolEnum.CONCORD, url=bot_url, key="a-secret-never-shown",
        timeout_seconds=5.0, retries=1)), 201)
    tried = ok(endpoint_try.sync_detailed(id=endpoint.id, client=client))
    listed = ok(endpoint_list.sync_detailed(client=client))
    experiment = ok(experiments_create_create.sync_detailed(
        client=client, body=ExperimentCreateInputRequest(title="Chat via client")), 201)
    study = ok(studies_create_create.sync_detailed(client=client, body=StudyCreateInputRequest(
        experiment=experiment.slug, title="Chat then rate", design=DesignEnum.LIKERT, unit=UnitEnum.CHAT,
        unit_config=StudyCreateInputRequestUnitConfig.from_dict({"min_turns": 2, "max_turns": 3}),
        raters_per_item=1, items_per_assignment=1, criteria=[CriterionRequest(name="engaging")])), 201)
    ok(studies_items_build_create.sync_detailed(slug=study.slug, client=client,
                                                body=StudyItemsBuildInputRequest(systems=[endpoint.system])))
    ok(studies_publish_create.sync_detailed(slug=study.slug, client=client))
    invite = ok(invite_create.sync_detailed(slug=study.slug, client=client,
                                            body=InviteCreateInputRequest(label="chat bot")), 201)
    return {"endpoint": endpoint.id, "system": endpoint.system, "has_key": endpoint.has_key,
            "listed": listed.count, "tried": tried.ok, "reply": tried.reply, "study": study.slug,
            "experiment": experiment.slug, "invite_url": invite.url}


def chat(client, invite_url):
    parts = urlsplit(invite_url)
    key = parts.path.rstrip("/").rpartition("/")[2]
    session = ok(rater_session_create.sync_detailed(key=key, client=client, body=RaterSessionInputRequest(
        link=RaterSessionInputRequestLink.from_dict({"invite": parse_qs(parts.query)["invite"][0]}), consent=True,
        client_secret="generated-client-chat-bot")), 201)
    rater = {"token": session.token, "client": client, "x_concord_rater_key": session.key}
    turns = 0
    for listed in ok(rater_items.sync_detailed(**rater, limit=1000)).results:
        state = ok(rater_chat_state.sync_detailed(position=listed.position, **rater))
        for n, text in enumerate(["Hello! How are you today?", "What do you like to do on weekends?"]):
            state = ok(rater_chat_turn.sync_detailed(position=listed.position, **rater,
                                                     body=RaterChatTurnInputRequest(text=text, client_id=f"m{n}")))
            while state.waiting:  # replies in the background: follow the state
                time.sleep(0.2)
                state = ok(rater_chat_state.sync_detailed(position=listed.position, **rater))
        turns += sum(len(side.turns) for side in state.sides)
        ended = ok(rater_chat_end.sync_detailed(position=listed.position, **rater))
        assert ended.ended, ended
        item = ok(rater_item.sync_detailed(position=listed.position, **rater))
        targets = [target.key for target in item.targets]
        answers = RaterAnswerInputRequestAnswers.from_dict({f.name: answer(f, targets) for f in item.fields})
        assert ok(rater_answer.sync_detailed(position=listed.position, **rater,
                                             body=RaterAnswerInputRequest(answers=answers))).answered
    questionnaire = RaterSubmitInputRequestQuestionnaire.from_dict(
        {q.name: "no" if q.kind == "yes_no" else "" for q in session.questionnaire})
    submitted = ok(rater_submit.sync_detailed(**rater, body=RaterSubmitInputRequest(questionnaire=questionnaire)))
    return {"token": session.token, "turns": turns, "status": submitted.status,
            "completion_code": submitted.completion_code}


def _finished(client, run):
    for _ in range(300):
        if run.status in ("done", "failed", "cancelled"):
            return run
        time.sleep(0.2)
        run = ok(metrics_runs_retrieve.sync_detailed(id=run.id, client=client))
    return run


def review(client, study, corpus):
    rater_id = ok(assignment_list.sync_detailed(slug=study, client=client)).results[0].rater_id
    queue = ok(study_review_queue.sync_detailed(slug=study, client=client))
    evidence = ok(study_rater_evidence.sync_detailed(slug=study, rater=rater_id, client=client))
    excluded = ok(study_rater_decide.sync_detailed(slug=study, rater=rater_id, client=client, body=RaterDecisionInputRequest(
        kind=RaterDecisionInputKindEnum.EXCLUDE, reason="a check of the review through the client")), 201)
    reverted = ok(study_decision_revert.sync_detailed(slug=study, decision=excluded.id, client=client))
    runs = [_finished(client, ok(metrics_runs_create.sync_detailed(client=client, body=ScoringRunCreateInputRequest(
        metric_model=model, study=study)), 201)) for model in ("readability", "cosine_last")]
    whole = _finished(client, ok(metrics_runs_create.sync_detailed(client=client, body=ScoringRunCreateInputRequest(
        metric_model="readability", corpus=corpus)), 201))
    listed = ok(metrics_runs_list.sync_detailed(client=client, corpus=corpus))
    return {"rater": rater_id, "queue_raters": len(queue.raters), "flags": len(evidence.flags),
            "evidence_assignment": evidence.assignment, "excluded": excluded.kind, "reverted": not reverted.standing,
            "runs": [r.status for r in runs], "corpus_run": [whole.status, whole.done, whole.total],
            "corpus_runs_listed": listed.count}


def ranking(client, experiment, study):
    found = ok(judge_ranking.sync_detailed(slug=experiment, client=client, study=study))
    return {"models": sorted(found.models), "rankings": [[r.condition, r.criterion, r.best, [row.metric for row in r.rows]]
                                                          for r in found.rankings]}


if __name__ == "__main__":
    action, base, token, *rest = sys.argv[1:]
    if action == "chat":  # a rater: nobody's token
        print(json.dumps(chat(Client(base_url=base, raise_on_unexpected_status=True), rest[0])))
        raise SystemExit(0)
    client = AuthenticatedClient(base_url=base, token=token, prefix="Token", raise_on_unexpected_status=True)
    actions = {"researcher": researcher, "review": review, "ranking": ranking}
    print(json.dumps(actions[action](client, *rest)))
