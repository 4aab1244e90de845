"""The ACUTE-Eval demo: self-chats of the demo's two bots (real local bot server) compared by simulated
raters; the report ranks the rule bot above the parrot; loading twice changes nothing."""
import pytest

from studies.chat.acute_demo import DEMO_ACUTE_EXPERIMENT, acute_demo_load
from studies.designs.acute_report import acute_report
from studies.models import Comparison, Conversation, Experiment, SelfChatRun, Study

pytestmark = pytest.mark.django_db


def test_acute_demo_self_chats_and_simulated_raters_prefer_the_rule_bot(user, local_bot, loopback_allowed):
    experiment = acute_demo_load(owner=user, port=local_bot.port, conversations=3, turns=4)
    assert experiment.slug == DEMO_ACUTE_EXPERIMENT
    assert set(SelfChatRun.objects.values_list("status", flat=True)) == {"done"}
    study = experiment.studies.get()
    corpus = Conversation.objects.filter(selfchat__run__owner=user)
    assert corpus.count() == 6 and study.items.count() == 3
    assert Comparison.objects.filter(assignment__study=study).count() == 5 * 3 * 4
    [entry] = acute_report(Study.objects.filter(pk=study.pk), resamples=20)
    for criterion in entry["criteria"]:
        assert criterion["bt"]["strengths"][0]["system"] == "demo-rulebot"
    assert acute_demo_load(owner=user, port=local_bot.port) is None
    assert Experiment.objects.filter(slug=DEMO_ACUTE_EXPERIMENT).count() == 1
