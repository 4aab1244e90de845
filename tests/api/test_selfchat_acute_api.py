"""Self-chats to ACUTE-Eval through the API alone, as a notebook user goes: two local bots
(studies.chat.local_bot) self-chat into one corpus (POST /api/selfchats/, the job run as a worker would),
an ACUTE-Eval study with the paper's four questions built on it, four bot raters through the rater API
(one careless: always the left side), and the report's win rates, exact p and significance marks
checked against SciPy on the stored judgments."""
import pytest

from studies import tasks
from studies.chat.local_bot import LocalBot
from studies.designs.acute import ACUTE_CRITERIA
from studies.models import Assignment, Comparison, Conversation
from tests.api.rater_helpers import base, enter, questionnaire_answers, rater_client
from tests.studies.chat.test_selfchat import endpoint

pytestmark = pytest.mark.django_db
OPENERS = ["Hi, my name is Ada.", "I like hiking in the hills.", "I feel tired today."]


@pytest.fixture
def eager_post(monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(tasks.selfchat_run, "delay", lambda run_id: tasks.selfchat_run(run_id))

    def post(api, path, body):
        with django_capture_on_commit_callbacks(execute=True):
            return api.post(path, body, format="json")
    return post


def rate(study, worker: str, *, careless: bool) -> None:
    """A bot rater: the rulebot's side on every question (careless: always the left), with reasons."""
    session = enter(study, secret=f"secret-of-{worker}-0001").json()
    client = rater_client(session)
    assignment = Assignment.objects.get(token=session["token"])
    for slot in assignment.assignment_items.order_by("position"):
        systems = [Conversation.objects.get(pk=pk).metadata["system"] for pk in slot.response_order]
        side = "left" if careless or systems[0] == "rulebot" else "right"
        item = client.get(base(session) + f"items/{slot.position}/").json()
        answers = {f["name"]: side if f["kind"] == "choice" else "The marked speaker reads better."
                   for f in item["fields"]}
        put = client.put(base(session) + f"items/{slot.position}/answer/", {"answers": answers, "active_ms": 2000},
                         format="json")
        assert put.status_code == 200, put.content[:500]
    done = client.post(base(session) + "submit/", {"questionnaire": questionnaire_answers(session)}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "submitted"


def test_selfchat_to_acute_through_the_api_two_bots_four_raters_one_careless(api, loopback_allowed, eager_post):
    from scipy.stats import binomtest

    with LocalBot() as server:
        endpoint("rulebot", server.url("rule"))
        endpoint("parrotbot", server.url("parrot"))
        body = {"openers": OPENERS, "conversations": 6, "turns": 4, "bot_a": {"personas": ["I am a chef."]}}
        first = eager_post(api, "/api/selfchats/", {**body, "title": "Rule bot", "system_a": "rulebot",
                                                     "system_b": "rulebot"})
        assert first.status_code == 201
        corpus = first.json()["corpus"]
        second = eager_post(api, "/api/selfchats/", {**body, "title": "Parrot bot", "system_a": "parrotbot",
                                                      "system_b": "parrotbot", "corpus": corpus})
        assert second.status_code == 201
    runs = api.get("/api/selfchats/", {"corpus": corpus}).json()["results"]
    assert [(r["status"], r["progress"]["done"]) for r in runs] == [("done", 6), ("done", 6)]
    experiment = api.post("/api/experiments/create/", {"title": "Bots compared"}, format="json").json()
    study = api.post("/api/studies/create/", {
        "experiment": experiment["slug"], "title": "Rule against parrot", "design": "acute", "unit": "dialogue",
        "raters_per_item": 4, "items_per_assignment": 6}, format="json")
    assert study.status_code == 201, study.json()
    slug = study.json()["slug"]
    built = api.post(f"/api/studies/{slug}/items/build/", {"corpus": corpus}, format="json")
    assert built.status_code == 200 and built.json()["items"] == 6
    assert api.post(f"/api/studies/{slug}/publish/").status_code == 200
    from studies.models import Study

    stored = Study.objects.get(slug=slug)
    assert [c.question for c in stored.criteria.order_by("position")] == [c["question"] for c in ACUTE_CRITERIA]
    for n in range(4):
        rate(stored, f"rater-{n}", careless=n == 3)
    assert Comparison.objects.filter(assignment__study=stored).count() == 4 * 6 * 4
    section = api.get(f"/api/studies/{slug}/report/").json()["acute"][0]
    assert [c["criterion"] for c in section["criteria"]] == [c["name"] for c in ACUTE_CRITERIA]
    for criterion in section["criteria"]:
        wins = {"rulebot": 0, "parrotbot": 0}
        for left, right, choice in Comparison.objects.filter(criterion__study=stored,
                                                             criterion__name=criterion["criterion"]).values_list(
                "left_conversation__metadata__system", "right_conversation__metadata__system", "choice"):
            wins[left if choice == "left" else right] += 1
        assert wins["rulebot"] >= 18  # three careful raters x six items
        row = criterion["win_rates"][0]
        assert (row["system_a"], row["system_b"]) == ("parrotbot", "rulebot")
        assert (row["wins_a"], row["wins_b"], row["ties"]) == (wins["parrotbot"], wins["rulebot"], 0)
        p = binomtest(wins["parrotbot"], wins["parrotbot"] + wins["rulebot"], 0.5).pvalue
        assert row["p"] == pytest.approx(p, abs=1e-9)
        assert row["win_rate_a"] == pytest.approx(wins["parrotbot"] / 24, abs=1e-9)
        assert row["mark"] == ("***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "") != ""
