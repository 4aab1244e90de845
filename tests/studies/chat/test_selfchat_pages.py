"""Self-chat pages: linked from the navigation; a form with a field per setting (no JSON) whose problems
name the field; runs into a new or an existing corpus; the run page lists its conversations (each opened
as the corpus holds it, with its personas), its progress and why it stopped, with cancel and rerun; every
page and action is the owner's only (404)."""
import pytest

from studies import tasks
from studies.chat import selfchat
from studies.chat.local_bot import LocalBot
from studies.models import Corpus, SelfChatRun
from tests.studies.chat.test_selfchat import endpoint

pytestmark = pytest.mark.django_db
FORM = {"title": "Page run", "corpus": "", "system_a": "rule-a", "system_b": "rule-a", "openers": "Hi there\nI like tea",
        "conversations": 3, "turns": 2}


@pytest.fixture
def bot(loopback_allowed, user, monkeypatch):
    monkeypatch.setattr(tasks.selfchat_run, "delay", lambda run_id: None)
    with LocalBot() as server:
        endpoint("rule-a", server.url("rule"))
        endpoint("rule-b", server.url("rule"))
        yield server


def test_selfchat_page_is_linked_from_the_navigation(client, user):
    client.force_login(user)
    for path in ("/", "/selfchats/", "/systems/endpoints/"):
        assert 'href="/selfchats/">Self-chats</a>' in client.get(path, follow=True).content.decode()


def test_selfchat_form_has_a_field_per_setting_and_fills_an_existing_corpus(client, user, bot):
    client.force_login(user)
    page = client.get("/selfchats/").content.decode()
    for name in ("a_personas", "a_system_prompt", "a_temperature", "a_max_tokens", "b_top_p", "seed", "corpus"):
        assert f'name="{name}"' in page
    assert "bot_settings" not in page and "JSON" not in page
    first = client.post("/selfchats/", {**FORM, "seed": 5})
    assert first.status_code == 302
    run = SelfChatRun.objects.get()
    assert run.corpus.title == "Page run" and run.seed == 5
    second = client.post("/selfchats/", {
        **FORM, "title": "Second pair", "system_a": "rule-b", "corpus": run.corpus.slug,
        "a_personas": "I am a chef.\n\nI love the sea.\n", "b_personas": "I am shy.", "a_system_prompt": "Be kind.",
        "a_temperature": "0.7", "a_max_tokens": "64", "b_requests_per_minute": "30"})
    assert second.status_code == 302
    added = SelfChatRun.objects.get(title="Second pair")
    assert added.corpus_id == run.corpus_id and added.seed == 5
    assert added.personas == {"a": ["I am a chef.", "I love the sea."], "b": ["I am shy."]}
    assert added.bot_settings == {"a": {"system_prompt": "Be kind.", "temperature": 0.7, "max_tokens": 64},
                                  "b": {"requests_per_minute": 30}}
    assert Corpus.objects.filter(source_format="selfchat").count() == 1


def test_selfchat_form_problems_name_the_field_and_start_nothing(client, user, other_user, bot):
    theirs = Corpus.objects.create(slug="theirs", title="Theirs", source_format="selfchat", owner=other_user)
    client.force_login(user)
    page = client.post("/selfchats/", {**FORM, "a_temperature": "3", "b_max_tokens": "many", "corpus": theirs.slug,
                                       "a_personas": "x" * 2001, "openers": ""})
    text = page.content.decode()
    assert page.status_code == 400 and not SelfChatRun.objects.exists()
    assert "Bot A: temperature</a>: Ensure this value is less than or equal to 2" in text
    assert "Bot B: max tokens per reply</a>: Enter a whole number" in text
    assert "Corpus</a>: Select a valid choice" in text and "Opening contexts</a>: This field is required" in text
    assert "Traceback" not in text and "{" not in text.split("selfchat-errors")[1].split("</div>")[0]
    persona = client.post("/selfchats/", {**FORM, "a_personas": "x" * 2001})
    assert persona.status_code == 400 and "Bot A: personas</a>: line 1: at most 2000 characters" in persona.content.decode()


def test_selfchat_run_page_lists_its_conversations_progress_and_why_it_stopped(client, user, bot):
    client.force_login(user)
    client.post("/selfchats/", {**FORM, "b_personas": "I am shy."})
    run = selfchat.selfchat_run(run=SelfChatRun.objects.get())
    run.dialogues.filter(index=2).update(status="failed", error_side="b", error_kind="status", error="HTTP 500")
    SelfChatRun.objects.filter(pk=run.pk).update(status="failed", error="rule-b's endpoint failed")
    page = client.get(f"/selfchats/{run.pk}/").content.decode()
    for index in range(3):
        assert f'href="/selfchats/{run.pk}/conversations/{index}/"' in page
    assert "rule-b&#x27;s endpoint failed" in page and "bot B, status: HTTP 500" in page
    assert f'action="/selfchats/{run.pk}/rerun/"' in page and "<progress" in page
    conversation = client.get(f"/selfchats/{run.pk}/conversations/0/").content.decode()
    dialogue = run.dialogues.get(index=0)
    assert dialogue.opener in conversation and "I am shy." in conversation
    for turn in dialogue.conversation.turns:
        assert turn["text"].replace("'", "&#x27;") in conversation
    assert client.get(f"/selfchats/{run.pk}/conversations/9/").status_code == 404


def test_selfchat_cancel_from_the_run_page_then_run_again(client, user, bot):
    client.force_login(user)
    client.post("/selfchats/", FORM)
    run = SelfChatRun.objects.get()
    assert f'action="/selfchats/{run.pk}/cancel/"' in client.get(f"/selfchats/{run.pk}/").content.decode()
    assert client.post(f"/selfchats/{run.pk}/cancel/").status_code == 302
    run.refresh_from_db()
    assert run.status == SelfChatRun.Status.CANCELLED
    page = client.get(f"/selfchats/{run.pk}/").content.decode()
    assert "Cancelled by the researcher" in page and f'action="/selfchats/{run.pk}/cancel/"' not in page
    again = client.post(f"/selfchats/{run.pk}/cancel/", follow=True).content.decode()
    assert "nothing is left to stop" in again
    client.post(f"/selfchats/{run.pk}/rerun/")
    run.refresh_from_db()
    assert run.status == SelfChatRun.Status.QUEUED


def test_selfchat_pages_of_another_researcher_are_404(client, user, other_user, bot):
    client.force_login(user)
    client.post("/selfchats/", FORM, follow=True)
    run = SelfChatRun.objects.get()
    client.force_login(other_user)
    for path in (f"/selfchats/{run.pk}/", f"/selfchats/{run.pk}/conversations/0/"):
        assert client.get(path).status_code == 404
    for path in (f"/selfchats/{run.pk}/cancel/", f"/selfchats/{run.pk}/rerun/"):
        assert client.post(path).status_code == 404
    run.refresh_from_db()
    assert run.status == SelfChatRun.Status.QUEUED
    mine = client.get("/selfchats/").content.decode()
    assert "Page run" not in mine and run.corpus.slug not in mine  # nor offered as a corpus to fill
