"""Shared by the rater API tests: entering a study over the API and answering an item from its own
field list, as a bot rater would (``studies.api.rater_views``)."""
from __future__ import annotations

from rest_framework.test import APIClient

from studies.rating import invites

SECRET = "a-bot-rater-secret-0001"


def enter(study, *, invite=None, secret: str = SECRET, consent=True, client: APIClient | None = None):
    """POST a session with an invite of ``study`` (a new one unless given); the response."""
    invite = invite or invites.invite_create(study=study)
    body = {"link": {"invite": invite.token}, "consent": consent, "client_secret": secret}
    return (client or APIClient()).post(f"/api/rate/studies/{study.rater_key}/sessions/", body, format="json")


def rater_client(session: dict) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_X_CONCORD_RATER_KEY=session["key"])
    return client


def base(session: dict) -> str:
    return f"/api/rate/assignments/{session['token']}/"


def valid_answers(item: dict, *, label: int = 0) -> dict:
    """An acceptable answer to every field of ``item``: the middle of a scale, ranks 1..n in letter order,
    the ``label``-th label, a text long enough, the left side, the first and last member."""
    answers: dict = {}
    for field in item["fields"]:
        kind, choices = field["kind"], field["choices"]
        if kind == "scale":
            answers[field["name"]] = int(choices[len(choices) // 2]) if choices else (field["min"] + field["max"]) / 2
        elif kind == "rank":
            answers[field["name"]] = 1 + [t["key"] for t in item["targets"]].index(field["target"])
        elif kind == "categorical":
            answers[field["name"]] = choices[label % len(choices)]
        elif kind == "multilabel":
            answers[field["name"]] = [choices[label % len(choices)]]
        elif kind == "per_turn":  # a turn's labels: none of the behaviours, or the first label
            answers[field["name"]] = [] if field["mode"] == "binary" else \
                ([choices[-1]] if field["many"] else choices[0])
        elif kind == "free_text":
            answers[field["name"]] = "x" * int(field["min"] or 1) + " a bot's note"
        elif kind == "spans":
            answers[field["name"]] = []  # nothing to mark
        elif kind in ("rationale", "reason"):
            answers[field["name"]] = "Because it reads well."
        elif kind == "choice":
            answers[field["name"]] = "left"
        elif kind == "best":
            answers[field["name"]] = choices[0]
        elif kind == "worst":
            answers[field["name"]] = choices[-1]
    return answers


def answer_every_item(client: APIClient, session: dict, **kwargs) -> list[dict]:
    """Answer every item of the session's assignment through the API; the items as answered."""
    done = []
    items = client.get(base(session) + "items/?limit=1000").json()["results"]
    for item in items:
        put = client.put(base(session) + f"items/{item['position']}/answer/",
                         {"answers": valid_answers(item, **kwargs), "active_ms": 1500}, format="json")
        assert put.status_code == 200, put.content[:800]
        done.append(put.json())
    return done


def questionnaire_answers(session: dict) -> dict:
    """An answer to every question of the study's questionnaire (the session lists them)."""
    return {q["name"]: "no" if q.get("kind") == "yes_no" else (q.get("choices") or ["none"])[0]
            for q in session["questionnaire"]}
