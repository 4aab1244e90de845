"""A researcher's endpoints are their own (the audit's high finding replayed): researcher B,
holding the chat permission, reads, lists, re-points and tries A's endpoint, builds items and
publishes with A's system; nothing of A's is shown, changed or reached. Two real local bot servers
stand for A's bot and B's: B's server never receives A's key. Admins see all."""
import importlib

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Permission
from django.urls import reverse
from rest_framework.test import APIClient

from studies.authoring import services as authoring
from studies.chat import endpoints, selectors
from studies.chat import services as chatting
from studies.chat.local_bot import LocalBot
from studies.errors import StudyStateError
from studies.models import Chat, System, SystemEndpoint
from tests.factories import UserFactory, token_for
from tests.problems import problem_fields
from tests.studies.chat.helpers import bot_system, chat_study, started_assignment

pytestmark = pytest.mark.django_db
A_KEY = "sk-alice-only-7f3e"


@pytest.fixture
def b_bot():
    with LocalBot() as bot:
        yield bot


@pytest.fixture
def alice_endpoint(user, local_bot, loopback_allowed):
    bot_system("alice-bot", local_bot.url("rule"), owner=user, key=A_KEY)
    return SystemEndpoint.objects.get(owner=user, system__name="alice-bot")


@pytest.fixture
def bob(other_user, client):
    other_user.user_permissions.add(Permission.objects.get(codename="change_systemendpoint"))
    client.force_login(other_user)
    return other_user


def _api(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    return api


def _headers_seen(bot) -> list[dict]:
    return [r["headers"] for r in bot.requests]


def test_b_reads_lists_repoints_and_tries_a_endpoint_and_reaches_nothing(client, bob, alice_endpoint, local_bot,
                                                                         b_bot):
    before = SystemEndpoint.objects.values().get(pk=alice_endpoint.pk)
    listed = client.get(reverse("chat:endpoint_list"))
    assert listed.status_code == 200
    html = listed.content.decode()
    assert "alice-bot" not in html and local_bot.url("rule") not in html and "No endpoint yet" in html
    assert client.get(reverse("chat:endpoint_edit", args=[alice_endpoint.pk])).status_code == 404
    repointed = client.post(reverse("chat:endpoint_edit", args=[alice_endpoint.pk]), {
        "system": "alice-bot", "protocol": "concord", "url": b_bot.url("rule"), "timeout_seconds": 5, "retries": 0})
    assert repointed.status_code == 404
    assert client.post(reverse("chat:endpoint_try", args=[alice_endpoint.pk])).status_code == 404
    assert SystemEndpoint.objects.values().get(pk=alice_endpoint.pk) == before  # nothing changed
    assert b_bot.requests == [] and local_bot.requests == []  # nobody's server was called
    # B makes an endpoint of his own under the same (shared) system name: a second endpoint, A's untouched.
    created = client.post(reverse("chat:endpoint_new"), {
        "system": "alice-bot", "protocol": "concord", "url": b_bot.url("rule"), "timeout_seconds": 5, "retries": 0})
    assert created.status_code == 302
    mine = SystemEndpoint.objects.get(owner=bob)
    assert mine.pk != alice_endpoint.pk and mine.system_id == alice_endpoint.system_id and not mine.has_key
    assert SystemEndpoint.objects.values().get(pk=alice_endpoint.pk) == before
    tried = client.post(reverse("chat:endpoint_try", args=[mine.pk]), follow=True).content.decode()
    assert "Hello! What would you like to talk about today?" in tried
    assert len(b_bot.requests) == 1 and "Authorization" not in _headers_seen(b_bot)[0]
    assert A_KEY not in str(b_bot.requests) and local_bot.requests == []
    # B's list shows his endpoint, never A's URL.
    html = client.get(reverse("chat:endpoint_list")).content.decode()
    assert b_bot.url("rule") in html and local_bot.url("rule") not in html


def test_selectors_scope_endpoints_and_systems(user, other_user, alice_endpoint, b_bot):
    admin = UserFactory(username="root", is_superuser=True, is_staff=True)
    assert list(selectors.endpoints_visible_to(user)) == [alice_endpoint]
    assert list(selectors.endpoints_visible_to(other_user)) == []
    assert list(selectors.chat_systems_usable_by(other_user)) == []
    assert [s.name for s in selectors.chat_systems_usable_by(user)] == ["alice-bot"]
    bot_system("alice-bot", b_bot.url("rule"), owner=other_user)
    assert [e.owner for e in selectors.endpoints_visible_to(other_user)] == [other_user]
    assert [s.name for s in selectors.chat_systems_usable_by(other_user)] == ["alice-bot"]
    assert selectors.endpoints_visible_to(admin).count() == 2  # admins see all ...
    assert list(selectors.chat_systems_usable_by(admin)) == []  # ... and use only their own


def test_b_cannot_build_items_with_a_system_through_the_api(other_user, alice_endpoint, local_bot):
    authoring.experiment_create(owner=other_user, title="B's chats", slug="b-chats")
    api = _api(other_user)
    created = api.post("/api/studies/create/", {"experiment": "b-chats", "title": "t", "design": "likert",
                                                "unit": "chat"}, format="json")
    assert created.status_code == 201
    slug = created.json()["slug"]
    refused = api.post(f"/api/studies/{slug}/items/build/", {"systems": ["alice-bot"]}, format="json")
    unknown = api.post(f"/api/studies/{slug}/items/build/", {"systems": ["no-such-bot"]}, format="json")
    assert refused.status_code == 400 == unknown.status_code
    # The same words for A's system as for one nobody has: nothing says A has an endpoint for it.
    assert problem_fields(refused)["systems"][0].replace("alice-bot", "X") == problem_fields(unknown)["systems"][0].replace(
        "no-such-bot", "X")
    assert local_bot.url("rule") not in str(refused.json())
    assert local_bot.requests == []


def test_items_built_by_a_collaborator_use_the_owner_endpoint_without_showing_it(client, user, bob, alice_endpoint,
                                                                                 local_bot, b_bot):
    """The documented choice: a collaborator may *use* the experiment owner's endpoints in that
    experiment, never see, change or try them; the chats call the owner's endpoint."""
    bot_system("alice-bot", b_bot.url("rule"), owner=bob, key="sk-bob")  # B's own, same system name
    experiment = authoring.experiment_create(owner=user, title="Shared chats")
    experiment.collaborators.add(bob)
    study = authoring.study_create(experiment=experiment, title="c", design="likert", unit="chat",
                                   unit_config={"min_turns": 1, "max_turns": 3})
    built = _api(bob).post(f"/api/studies/{study.slug}/items/build/", {"systems": ["alice-bot"]}, format="json")
    assert built.status_code == 200
    authoring.study_publish(study=study)
    assert client.get(reverse("chat:endpoint_edit", args=[alice_endpoint.pk])).status_code == 404
    assignment = started_assignment(study)
    item_id = study.items.get().pk
    chatting.chat_open(assignment=assignment, item_id=item_id)
    assert chatting.chat_turn_post(assignment=assignment, item_id=item_id, text="hello", client_id="1").replies == 1
    assert [h.get("Authorization") for h in _headers_seen(local_bot)] == [f"Bearer {A_KEY}"]
    assert b_bot.requests == []  # the collaborator's own endpoint is not what A's study calls


def test_a_study_whose_owner_lost_the_endpoint_neither_publishes_nor_calls_another_key(user, other_user,
                                                                                       alice_endpoint, local_bot,
                                                                                       b_bot):
    draft = chat_study(user, ["alice-bot"], publish=False)
    running = chat_study(user, ["alice-bot"])
    # An admin gives A's endpoint to B (or A deletes it and B has one of that name): A's studies lose it.
    SystemEndpoint.objects.filter(pk=alice_endpoint.pk).update(owner=other_user, url=b_bot.url("rule"))
    with pytest.raises(StudyStateError, match="alice-bot: no endpoint of this experiment's owner"):
        authoring.study_publish(study=draft)
    assignment = started_assignment(running)
    item_id = running.items.get().pk
    chatting.chat_open(assignment=assignment, item_id=item_id)
    outcome = chatting.chat_turn_post(assignment=assignment, item_id=item_id, text="hello", client_id="1")
    assert outcome.failures == 1 and outcome.replies == 0
    assert Chat.objects.get(assignment=assignment).error_kind == "key"
    assert b_bot.requests == [] and local_bot.requests == []


def test_admins_see_and_change_every_endpoint_but_never_its_key(client, user, alice_endpoint, local_bot):
    admin = UserFactory(username="root", is_superuser=True, is_staff=True)
    client.force_login(admin)
    html = client.get(reverse("chat:endpoint_list")).content.decode()
    assert "alice-bot" in html and "alice" in html
    page = client.get(reverse("chat:endpoint_edit", args=[alice_endpoint.pk]))
    assert page.status_code == 200 and A_KEY not in page.content.decode()
    saved = client.post(reverse("chat:endpoint_edit", args=[alice_endpoint.pk]), {
        "system": "alice-bot", "protocol": "concord", "url": local_bot.url("parrot"), "timeout_seconds": 4,
        "retries": 0})
    assert saved.status_code == 302
    changed = SystemEndpoint.objects.get(pk=alice_endpoint.pk)
    assert changed.owner == user and changed.url == local_bot.url("parrot")  # still A's, key kept
    assert endpoints.endpoint_for_call(changed).key == A_KEY
    assert SystemEndpoint.objects.count() == 1


def test_the_migration_gives_each_endpoint_to_the_one_researcher_using_it(user, other_user, local_bot,
                                                                          loopback_allowed):
    migration = importlib.import_module("studies.migrations.0016_endpoint_owner")
    solo, shared, unused = (System.objects.create(name=n) for n in ("solo", "shared", "unused"))
    for system in (solo, shared, unused):
        endpoints.endpoint_set(owner=user, system=system, protocol="concord", url=local_bot.url("rule"), key="sk-old")
    endpoints.endpoint_set(owner=other_user, system=shared, protocol="concord", url=local_bot.url("rule"))
    chat_study(user, ["solo", "shared"], publish=False)
    chat_study(other_user, ["shared"], publish=False)
    # As they were before owners: one endpoint per system, nobody's.
    SystemEndpoint.objects.filter(owner=other_user).delete()
    SystemEndpoint.objects.update(owner=None)
    keys_before = dict(SystemEndpoint.objects.values_list("system__name", "key_encrypted"))
    migration.endpoints_to_owners(django_apps, None)
    owners = dict(SystemEndpoint.objects.values_list("system__name", "owner__username"))
    assert owners == {"solo": "alice", "shared": None, "unused": None}  # several or none: admins only
    assert dict(SystemEndpoint.objects.values_list("system__name", "key_encrypted")) == keys_before
    assert endpoints.endpoint_for_call(SystemEndpoint.objects.get(system=solo)).key == "sk-old"


def test_b_study_page_and_publish_never_take_a_system_or_a_study(client, user, bob, alice_endpoint, local_bot):
    experiment = authoring.experiment_create(owner=bob, title="B's page chats")
    study = authoring.study_create(experiment=experiment, title="b", design="likert", unit="chat")
    page = client.post(reverse("studies:study_detail", args=[study.slug]), {"systems": "alice-bot"})
    assert "alice-bot: no endpoint of this experiment" in page.content.decode()
    assert not study.items.exists()
    a_draft = chat_study(user, ["alice-bot"], publish=False)
    published = _api(bob).post(f"/api/studies/{a_draft.slug}/publish/", {}, format="json")
    assert published.status_code == 404
    a_draft.refresh_from_db()
    assert a_draft.status == "draft" and local_bot.requests == []


def test_an_admin_gives_an_admin_only_endpoint_to_its_researcher_key_kept(client, user, other_user, local_bot,
                                                                          loopback_allowed):
    system = System.objects.create(name="legacy")
    endpoints.endpoint_set(owner=None, system=system, protocol="concord", url=local_bot.url("rule"), key="sk-legacy")
    endpoint = SystemEndpoint.objects.get(system=system)
    form = {"system": "legacy", "protocol": "concord", "url": local_bot.url("rule"), "timeout_seconds": 5,
            "retries": 0}
    other_user.user_permissions.add(Permission.objects.get(codename="change_systemendpoint"))
    client.force_login(other_user)  # a researcher can neither see it nor give it to themselves
    assert client.post(reverse("chat:endpoint_edit", args=[endpoint.pk]), {**form, "owner": "bob"}).status_code == 404
    admin = UserFactory(username="root", is_superuser=True, is_staff=True)
    client.force_login(admin)
    assert client.post(reverse("chat:endpoint_edit", args=[endpoint.pk]),
                       {**form, "owner": "nobody"}).status_code == 400
    assert client.post(reverse("chat:endpoint_edit", args=[endpoint.pk]), {**form, "owner": "alice"}).status_code == 302
    given = SystemEndpoint.objects.get(pk=endpoint.pk)
    assert given.owner == user and endpoints.endpoint_for_call(given).key == "sk-legacy"
    assert [s.name for s in selectors.chat_systems_usable_by(user)] == ["legacy"]
    # A researcher's edit form has no owner field: what they post there changes no owner.
    user.user_permissions.add(Permission.objects.get(codename="change_systemendpoint"))
    client.force_login(user)
    assert 'name="owner"' not in client.get(reverse("chat:endpoint_edit", args=[endpoint.pk])).content.decode()
    client.post(reverse("chat:endpoint_edit", args=[endpoint.pk]), {**form, "owner": "bob"})
    assert SystemEndpoint.objects.get(pk=endpoint.pk).owner == user
