"""Self-chats through the API (the services the pages call): start runs of two pairs of bots into one
corpus, with each bot's personas and settings as typed fields; list, read, page through the
conversations; cancel and rerun; problems named by field in the one envelope, nothing written; another
researcher's run is a 404 on every path and never listed; the routes typed in the schema."""
import pytest

from studies import tasks
from studies.chat.local_bot import LocalBot
from studies.models import Conversation, Corpus, SelfChatRun
from tests.api.test_convention import client_of
from tests.problems import problem_fields
from tests.studies.chat.test_selfchat import endpoint

pytestmark = pytest.mark.django_db
BODY = {"title": "API self-chats", "system_a": "rule-a", "system_b": "rule-a", "openers": ["Hi, I am Ada.", "I like tea."],
        "conversations": 3, "turns": 2}


@pytest.fixture
def bots(loopback_allowed, user):
    with LocalBot() as server:
        endpoint("rule-a", server.url("rule"))
        endpoint("parrot-b", server.url("parrot"))
        yield server


@pytest.fixture
def eager(monkeypatch, django_capture_on_commit_callbacks):
    """The queued job runs at once, as a worker would, once the request commits."""
    monkeypatch.setattr(tasks.selfchat_run, "delay", lambda run_id: tasks.selfchat_run(run_id))

    def post(api, path, body=None, **kw):
        with django_capture_on_commit_callbacks(execute=True):
            return api.post(path, body, format="json", **kw)
    return post


@pytest.fixture
def queued(monkeypatch):
    monkeypatch.setattr(tasks.selfchat_run, "delay", lambda run_id: None)


def test_selfchat_api_two_pairs_of_bots_into_one_corpus_with_personas(api, bots, eager):
    first = eager(api, "/api/selfchats/", {**BODY, "seed": 4, "bot_a": {"personas": ["I am a chef.", "I sail."],
                                                                      "temperature": 0.5}})
    assert first.status_code == 201 and first.json()["status"] == "queued"
    made = api.get(f"/api/selfchats/{first.json()['id']}/").json()  # the job ran once the request committed
    assert made["status"] == "done" and made["progress"]["done"] == 3 and made["seed"] == 4
    assert made["bots"]["a"]["settings"] == {"temperature": 0.5}
    assert made["bots"]["a"]["personas"] == ["I am a chef.", "I sail."] and made["bots"]["b"]["speaker"] == "rule-a-2"
    second = eager(api, "/api/selfchats/", {**BODY, "title": "Parrot", "system_a": "parrot-b", "system_b": "parrot-b",
                                           "corpus": made["corpus"], "bot_b": {"personas": ["I am shy."]}})
    assert second.status_code == 201 and second.json()["corpus"] == made["corpus"] and second.json()["seed"] == 4
    systems = sorted(Conversation.objects.filter(corpus__slug=made["corpus"]).values_list("metadata__system", flat=True))
    assert systems == ["parrot-b"] * 3 + ["rule-a"] * 3
    listed = api.get("/api/selfchats/", {"corpus": made["corpus"], "limit": 1}).json()
    assert listed["count"] == 2 and [r["title"] for r in listed["results"]] == ["Parrot"] and listed["next"]
    read = api.get(f"/api/selfchats/{made['id']}/").json()
    assert read["title"] == "API self-chats" and read["progress"]["turns_stored"] == 6


def test_selfchat_api_conversations_show_opener_personas_and_turns(api, bots, eager):
    run = eager(api, "/api/selfchats/", {**BODY, "bot_a": {"personas": ["I am a chef."]}}).json()
    page = api.get(f"/api/selfchats/{run['id']}/conversations/", {"limit": 2}).json()
    assert page["count"] == 3 and [c["index"] for c in page["results"]] == [0, 1]
    entry = page["results"][0]
    stored = Conversation.objects.get(external_id=entry["conversation"])
    assert entry["personas"] == {"a": "I am a chef."} and entry["status"] == "done"
    assert entry["turns"][0] == {"speaker": "rule-a-2", "text": entry["opener"], "opener": True}
    assert [t["text"] for t in entry["turns"]] == [t["text"] for t in stored.turns]
    assert stored.metadata["personas"] == {"a": "I am a chef.", "b": ""}
    assert api.get(f"/api/selfchats/{run['id']}/conversations/", {"status": "failed"}).json()["count"] == 0
    bad = api.get(f"/api/selfchats/{run['id']}/conversations/", {"status": "lost"})
    assert bad.status_code == 400 and "status" in problem_fields(bad)


def test_selfchat_api_problems_are_named_by_field_and_nothing_is_written(api, other_user, bots, queued):
    theirs = Corpus.objects.create(slug="theirs", title="Theirs", source_format="selfchat", owner=other_user)
    typed = api.post("/api/selfchats/", {**BODY, "conversations": 0, "bot_a": {"temperature": 3},
                                         "bot_b": {"personas": ["ok", ""]}, "openers": []}, format="json")
    fields = problem_fields(typed)
    assert typed.status_code == 400 and {"conversations", "bot_a.temperature", "bot_b.personas.1",
                                         "openers"} <= set(fields)
    unknown = api.post("/api/selfchats/", {**BODY, "bot_a": {"colour": "red"}}, format="json")
    assert unknown.status_code == 400 and "unknown field" in problem_fields(unknown)["bot_a.colour"][0]
    service = api.post("/api/selfchats/", {**BODY, "system_b": "ghost", "bot_b": {"personas": ["x" * 10]}},
                       format="json")
    assert service.status_code == 400 and "ghost" in problem_fields(service)["system_b"][0]
    corpus = api.post("/api/selfchats/", {**BODY, "corpus": theirs.slug}, format="json")
    assert corpus.status_code == 400 and set(problem_fields(corpus)) == {"corpus"}
    assert not SelfChatRun.objects.exists() and Corpus.objects.count() == 1


def test_selfchat_api_cancel_and_rerun(api, bots, queued):
    run = api.post("/api/selfchats/", BODY, format="json").json()
    assert run["status"] == "queued"
    cancelled = api.post(f"/api/selfchats/{run['id']}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = api.post(f"/api/selfchats/{run['id']}/cancel/")
    assert again.status_code == 409 and "nothing is left to stop" in again.json()["detail"]
    assert api.get("/api/selfchats/", {"status": "cancelled"}).json()["count"] == 1
    rerun = api.post(f"/api/selfchats/{run['id']}/rerun/")
    assert rerun.status_code == 200 and rerun.json()["status"] == "queued"
    SelfChatRun.objects.filter(pk=run["id"]).update(status="done")
    assert api.post(f"/api/selfchats/{run['id']}/rerun/").status_code == 409


def test_selfchat_api_an_idempotency_key_makes_one_run(api, bots, queued):
    first = api.post("/api/selfchats/", BODY, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    replay = api.post("/api/selfchats/", BODY, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == replay.status_code == 201 and replay["Idempotent-Replayed"] == "true"
    assert SelfChatRun.objects.count() == 1 and replay.json()["id"] == first.json()["id"]


def test_selfchat_api_another_researchers_run_is_404_on_every_path(api, other_user, bots, queued):
    run = api.post("/api/selfchats/", BODY, format="json").json()
    bob = client_of(other_user)
    for path in (f"/api/selfchats/{run['id']}/", f"/api/selfchats/{run['id']}/conversations/"):
        response = bob.get(path)
        assert response.status_code == 404 and response["Content-Type"] == "application/problem+json"
    for path in (f"/api/selfchats/{run['id']}/cancel/", f"/api/selfchats/{run['id']}/rerun/"):
        assert bob.post(path).status_code == 404
    assert bob.get("/api/selfchats/").json()["count"] == 0
    into_alices = bob.post("/api/selfchats/", {**BODY, "corpus": run["corpus"]}, format="json")
    assert into_alices.status_code == 400 and "corpus" in problem_fields(into_alices)
    assert SelfChatRun.objects.get().status == "queued"


def test_selfchat_api_routes_are_typed_in_the_schema(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operations = {op["operationId"]: op for path in schema["paths"].values() for op in path.values()
                  if isinstance(op, dict) and "operationId" in op}
    for name in ("selfchat_list", "selfchat_create", "selfchat_read", "selfchat_conversation_list",
                 "selfchat_cancel", "selfchat_rerun"):
        assert name in operations
    components = schema["components"]["schemas"]
    assert {"temperature", "personas", "max_tokens"} <= set(components["SelfChatBotInputRequest"]["properties"])
    output = components["SelfChatOutput"]["properties"]
    assert output["bots"]["allOf"][0]["$ref"].endswith("/SelfChatBotsOutput")
    assert output["progress"]["allOf"][0]["$ref"].endswith("/SelfChatProgress")
    assert set(components["SelfChatProgress"]["properties"]) >= {"done", "failed", "turns_stored", "turns_total"}
