"""Self-chats to ACUTE-Eval through the API alone, as a notebook user goes: two local bots
(studies.chat.local_bot) self-chat into one corpus (POST /api/selfchats/, the job run as a worker would),
an ACUTE-Eval study with the paper's four questions built on it, a check pair (a good conversation against
one where the bot repeats itself) through the checks API, four bot raters through the rater API (one
careless: one side throughout, caught by the check pair and flagged in the review queue), and the
report's win rates, exact p and significance marks, which leave the check pair out, checked against SciPy
on the stored judgments."""
import pytest

from studies import tasks
from studies.chat.local_bot import LocalBot
from studies.designs.acute import ACUTE_CRITERIA
from studies.models import Assignment, Comparison, Conversation
from tests.api.rater_helpers import base, enter, questionnaire_answers, rater_client
from tests.studies.chat.test_selfchat import endpoint

pytestmark = pytest.mark.django_db
OPENERS = ["Hi, my name is Ada.", "I like hiking in the hills.", "I feel tired today."]
GOOD = [{"speaker": "user", "text": "hi, what do you do for fun?"},
        {"speaker": "bot", "text": "I climb on weekends. Do you like the outdoors?"},
        {"speaker": "user", "text": "yes, hiking"}, {"speaker": "bot", "text": "Nice! Which trail did you walk last?"}]
REPEATING = "user: hi, what do you do for fun?\nbot: i dont know\nuser: any hobbies?\nbot: i dont know"


@pytest.fixture
def eager_post(monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(tasks.selfchat_run, "delay", lambda run_id: tasks.selfchat_run(run_id))

    def post(api, path, body):
        with django_capture_on_commit_callbacks(execute=True):
            return api.post(path, body, format="json")
    return post


def good_side(slot) -> str:
    """The side of the check pair's good conversation (written first, ``check-<n>-1``)."""
    first = Conversation.objects.get(pk=slot.response_order[0])
    return "left" if first.external_id.endswith("-1") else "right"


def rate(study, worker: str, *, careless: bool) -> Assignment:
    """A bot rater: the rulebot's side on every question and the check pair's good conversation, with
    reasons; careless: one side throughout without reading, the side the check pair's repeating bot
    happens to be shown on, so that the known answer catches them."""
    session = enter(study, secret=f"secret-of-{worker}-0001").json()
    client = rater_client(session)
    assignment = Assignment.objects.get(token=session["token"])
    slots = list(assignment.assignment_items.select_related("item").order_by("position"))
    [check] = [slot for slot in slots if slot.item.check_kind]
    always = {"left": "right", "right": "left"}[good_side(check)]
    for slot in slots:
        systems = [Conversation.objects.get(pk=pk).metadata["system"] for pk in slot.response_order]
        if careless:
            side = always
        elif slot.item.check_kind:
            side = good_side(slot)
        else:
            side = "left" if systems[0] == "rulebot" else "right"
        item = client.get(base(session) + f"items/{slot.position}/").json()
        answers = {f["name"]: side if f["kind"] == "choice" else "The marked speaker reads better."
                   for f in item["fields"]}
        put = client.put(base(session) + f"items/{slot.position}/answer/", {"answers": answers, "active_ms": 2000},
                         format="json")
        assert put.status_code == 200, put.content[:500]
    done = client.post(base(session) + "submit/", {"questionnaire": questionnaire_answers(session)}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "submitted"
    assignment.refresh_from_db()
    return assignment


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
    pair = api.post(f"/api/studies/{slug}/checks/create/", {
        "kind": "gold", "conversations": [{"turns": GOOD, "speaker": "bot"}, REPEATING],
        "rules": [{"greater": 1, "than": 2}]}, format="json")
    assert pair.status_code == 201, pair.content[:500]
    assert pair.json()["rules"] == [{"greater": 1, "than": 2}]
    assert [c["speaker"] for c in pair.json()["conversations"]] == ["bot", "bot"]
    listed = api.get(f"/api/studies/{slug}/checks/").json()["results"]
    assert [i["id"] for i in listed] == [pair.json()["id"]]
    assert api.post(f"/api/studies/{slug}/publish/").status_code == 200
    from studies.models import Study

    stored = Study.objects.get(slug=slug)
    assert [c.question for c in stored.criteria.order_by("position")] == [c["question"] for c in ACUTE_CRITERIA]
    done = [rate(stored, f"rater-{n}", careless=n == 3) for n in range(4)]
    assert [(a.checks_shown, a.checks_passed, a.checks_failed) for a in done] == [(1, 1, False)] * 3 + [(1, 0, True)]
    assert Comparison.objects.filter(assignment__study=stored).count() == 4 * 7 * 4  # six pairs and the check
    regular = Comparison.objects.filter(assignment__study=stored, item__check_kind="").count()
    assert regular == 4 * 6 * 4
    queue = api.get(f"/api/studies/{slug}/review/").json()["raters"]
    assert [r["rater"] for r in queue if r["checks_failed"]] == [done[3].rater_id]
    assert [r["rater"] for r in queue if any(f["key"] == "checks" for f in r["raised"])] == [done[3].rater_id]
    report = api.get(f"/api/studies/{slug}/report/").json()
    section = report["acute"][0]
    assert section["n"] == regular
    assert section["checks"] == {"pairs": 1, "judgments": 4 * 4, "scored_raters": 4, "failed_raters": 1}
    assert [c["criterion"] for c in section["criteria"]] == [c["name"] for c in ACUTE_CRITERIA]
    for criterion in section["criteria"]:
        wins = {"rulebot": 0, "parrotbot": 0}
        for left, right, choice in Comparison.objects.filter(criterion__study=stored, item__check_kind="",
                                                             criterion__name=criterion["criterion"]).values_list(
                "left_conversation__metadata__system", "right_conversation__metadata__system", "choice"):
            wins[left if choice == "left" else right] += 1
        assert sum(wins.values()) == regular // len(ACUTE_CRITERIA)  # the check pair's judgments left out
        assert wins["rulebot"] >= 18  # three careful raters x six items
        row = criterion["win_rates"][0]
        assert (row["system_a"], row["system_b"]) == ("parrotbot", "rulebot")
        assert (row["wins_a"], row["wins_b"], row["ties"]) == (wins["parrotbot"], wins["rulebot"], 0)
        p = binomtest(wins["parrotbot"], wins["parrotbot"] + wins["rulebot"], 0.5).pvalue
        assert row["p"] == pytest.approx(p, abs=1e-9)
        assert row["win_rate_a"] == pytest.approx(wins["parrotbot"] / 24, abs=1e-9)
        assert row["mark"] == ("***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "") != ""
