"""The demo's chat-then-rate study: ``load_demo`` starts the rule-based bot on loopback for the load (or
uses the one ``demo_serve`` runs), simulated raters chat with the rule bot and the parrot through the real
services and rate each conversation; it is idempotent; and the study takes a real rater afterwards."""
import pytest
from django.core.management import call_command

from studies.chat.demo import DEMO_CHAT_EXPERIMENT, SIMULATED_RATERS, chat_demo_load
from studies.chat.local_bot import LocalBot
from studies.models import Assignment, Chat, Experiment, Rating, Study

pytestmark = pytest.mark.django_db


def test_chat_demo_loads_chats_and_ratings_against_its_loopback_bot(user, loopback_allowed):
    with LocalBot() as probe:  # a free port for this test's demo bot (8765 may be busy on a shared machine)
        port = probe.port
    experiment = chat_demo_load(owner=user, port=port)
    assert experiment.slug == DEMO_CHAT_EXPERIMENT
    study = experiment.studies.get()
    assert study.unit == "chat" and study.status == "published"
    chats = Chat.objects.filter(item__study=study)
    assert chats.count() == 2 * SIMULATED_RATERS and not chats.exclude(status=Chat.Status.ENDED).exists()
    assert {c.system.name for c in chats} == {"demo-rulebot", "demo-parrot"}
    parrot = chats.filter(system__name="demo-parrot").first().conversation.turns
    assert parrot[1]["text"] == f"You said: {parrot[0]['text']}"  # the real bot answered
    assert Assignment.objects.filter(study=study, status="submitted").count() == SIMULATED_RATERS
    ratings = Rating.objects.filter(assignment__study=study)
    assert ratings.count() == 2 * SIMULATED_RATERS * study.criteria.count()
    mean = {name: sum(v) / len(v) for name in ("demo-rulebot", "demo-parrot")
            for v in [list(ratings.filter(conversation__chat__system__name=name).values_list("value", flat=True))]}
    assert mean["demo-rulebot"] > mean["demo-parrot"]  # the simulated raters prefer the rule bot
    assert chat_demo_load(owner=user, port=port) is None  # idempotent
    assert study.invites.count() == 1


def test_load_demo_command_loads_both_demos_and_prints_the_chat_link(loopback_allowed, capsys):
    from studies.authoring.demo import DEMO_EXPERIMENT

    with LocalBot() as probe:  # a free port for the command's bot
        port = probe.port
    call_command("load_demo", chat_bot_port=port)
    out = capsys.readouterr().out
    assert f"Chat with them yourself: /r/c/{Study.objects.get(slug='demo-chat').rater_key}/?invite=" in out
    assert Experiment.objects.filter(slug__in=[DEMO_EXPERIMENT, DEMO_CHAT_EXPERIMENT]).count() == 2
    call_command("load_demo", chat_bot_port=port)
    assert "The chat demo is already loaded." in capsys.readouterr().out


def test_chat_demo_is_skipped_with_its_reason_where_loopback_is_not_allowed(user, settings, capsys):
    from studies.chat.demo import ChatDemoSkipped

    settings.CHAT_ALLOWED_NETWORKS = []  # as in production
    with pytest.raises(ChatDemoSkipped, match="CONCORD_CHAT_ALLOWED_NETWORKS"):
        chat_demo_load(owner=user)
    assert not Experiment.objects.filter(slug=DEMO_CHAT_EXPERIMENT).exists()
