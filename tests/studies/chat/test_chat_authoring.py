"""A researcher sets up a chat study through the pages and through the API: the study form's chat
settings (shown for the chat unit only, checked with field-level messages), items built from systems
with endpoints (no corpus), publishing; the API's create takes ``unit_config`` and its items build takes
systems without a corpus; no page or API answer carries an endpoint's key."""
import pytest
from rest_framework.test import APIClient

from studies.authoring import services as authoring
from studies.models import Study
from tests.factories import token_for
from tests.problems import problem_fields
from tests.studies.chat.helpers import bot_system

pytestmark = pytest.mark.django_db


def test_chat_study_through_the_researcher_pages(client, user, local_bot, loopback_allowed):
    bot_system("page-rule", local_bot.url("rule"), key="sk-page-secret")
    bot_system("page-parrot", local_bot.url("parrot"))
    experiment = authoring.experiment_create(owner=user, title="Chats", slug="chats")
    client.force_login(user)
    form = client.get("/experiments/chats/studies/new/").content.decode()
    assert 'data-units="chat"' in form and "Turns before the rater may end the chat" in form
    base = {"title": "Compare two bots", "design": "bws", "unit": "chat", "criteria": "overall",
            "raters_per_item": 4, "items_per_assignment": 1, "platform": "invite"}
    refused = client.post("/experiments/chats/studies/new/", {**base, "chat_min_turns": 6, "chat_max_turns": 2})
    assert refused.status_code == 200 and "must be at least min_turns (6)" in refused.content.decode()
    assert not experiment.studies.exists()
    created = client.post("/experiments/chats/studies/new/", {**base, "chat_min_turns": 2, "chat_max_turns": 5,
                                                              "chat_message_max_chars": 300})
    study = experiment.studies.get()
    assert created.status_code == 302 and study.unit == "chat"
    assert study.unit_config == {"systems_per_chat": 2, "min_turns": 2, "max_turns": 5, "message_max_chars": 300,
                                 "messages_per_minute": 12}
    built = client.post(f"/studies/{study.slug}/", {"corpus": "", "systems": "page-rule, page-parrot"}, follow=True)
    assert "1 items built." in built.content.decode()
    assert list(study.items.get().item_systems.values_list("system__name", flat=True)) == ["page-rule", "page-parrot"]
    edit = client.get(f"/studies/{study.slug}/edit/").content.decode()
    assert 'name="chat_min_turns" value="2"' in edit and "sk-page-secret" not in edit
    client.post(f"/studies/{study.slug}/publish/")
    study.refresh_from_db()
    assert study.status == Study.Status.PUBLISHED
    assert "sk-page-secret" not in client.get(f"/studies/{study.slug}/").content.decode()


def test_chat_study_through_the_api(user, local_bot, loopback_allowed):
    bot_system("api-rule", local_bot.url("rule"), key="sk-api-secret")
    authoring.experiment_create(owner=user, title="API chats", slug="api-chats")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    refused = api.post("/api/studies/create/", {"experiment": "api-chats", "title": "t", "design": "likert",
                                                "unit": "chat", "unit_config": {"min_turns": 0}}, format="json")
    assert refused.status_code == 400 and "unit_config.min_turns" in problem_fields(refused)
    created = api.post("/api/studies/create/", {"experiment": "api-chats", "title": "t", "design": "likert",
                                                "unit": "chat", "unit_config": {"min_turns": 2}}, format="json")
    assert created.status_code == 201 and created.json()["unit_config"]["min_turns"] == 2
    slug = created.json()["slug"]
    built = api.post(f"/api/studies/{slug}/items/build/", {"systems": ["api-rule"]}, format="json")
    assert built.status_code == 200 and built.json() == {"items": 1}
    missing = api.post(f"/api/studies/{slug}/items/build/", {"systems": ["nobody"]}, format="json")
    assert missing.status_code == 400 and "nobody: no endpoint" in str(missing.json())
    for url in (f"/api/studies/{slug}/", "/api/schema/"):
        assert "sk-api-secret" not in api.get(url).content.decode()
