"""The ACUTE-Eval demo: self-chats of the demo's two bots (real local bot server) compared by simulated
raters; the report ranks the rule bot above the parrot; loading twice changes nothing. Its two check
pairs (coherent against degenerate) are authored like the checks page's, kept out of the results, and
fail exactly the careless simulated rater, whom the review page flags with the evidence."""
import pytest
from django.test import Client

from studies.authoring import checks
from studies.chat.acute_demo import (
    CARELESS_RATER,
    CHECK_PAIRS,
    COHERENT_DAY,
    COHERENT_TIRED,
    DEMO_ACUTE_EXPERIMENT,
    acute_demo_load,
)
from studies.designs.acute_report import acute_report
from studies.models import Assignment, Comparison, Conversation, Experiment, SelfChatRun, Study
from studies.reports import rater_evidence, review_queue

pytestmark = pytest.mark.django_db


def test_acute_demo_self_chats_and_simulated_raters_prefer_the_rule_bot(user, local_bot, loopback_allowed):
    experiment = acute_demo_load(owner=user, port=local_bot.port, conversations=3, turns=4)
    assert experiment.slug == DEMO_ACUTE_EXPERIMENT
    assert set(SelfChatRun.objects.values_list("status", flat=True)) == {"done"}
    study = experiment.studies.get()
    corpus = Conversation.objects.filter(selfchat__run__owner=user)
    assert corpus.count() == 6 and study.items.filter(check_kind="").count() == 3
    shown = 3 + len(CHECK_PAIRS)  # every rater sees the three pairs and both check pairs
    assert Comparison.objects.filter(assignment__study=study).count() == 5 * shown * 4
    [entry] = acute_report(Study.objects.filter(pk=study.pk), resamples=20)
    for criterion in entry["criteria"]:
        assert criterion["bt"]["strengths"][0]["system"] == "demo-rulebot"
    assert acute_demo_load(owner=user, port=local_bot.port) is None
    assert Experiment.objects.filter(slug=DEMO_ACUTE_EXPERIMENT).count() == 1


def test_acute_demo_check_pairs_stay_out_of_the_results_and_flag_only_the_careless_rater(
        user, local_bot, loopback_allowed):
    study = acute_demo_load(owner=user, port=local_bot.port, conversations=3, turns=4).studies.get()

    authored = checks.study_check_items(study)  # as the checks page lists them
    assert len(authored) == len(CHECK_PAIRS) and {c["kind"] for c in authored} == {"gold"}
    for item, (conversations, rules) in zip(authored, CHECK_PAIRS, strict=True):
        assert [c["turns"] for c in item["conversations"]] == [c["turns"] for c in conversations]
        assert item["rules"] == rules
    better = {item.pk: Conversation.objects.get(pk=item.check_rules[0]["greater"]).turns
              for item in study.items.filter(check_kind__gt="")}
    assert sorted(better.values(), key=str) == sorted([COHERENT_DAY["turns"], COHERENT_TIRED["turns"]], key=str)

    check_judgments = Comparison.objects.filter(item__study=study, item__check_kind__gt="").count()
    regular = Comparison.objects.filter(item__study=study, item__check_kind="").count()
    assert check_judgments == 5 * len(CHECK_PAIRS) * 4
    [entry] = acute_report(Study.objects.filter(pk=study.pk), resamples=20)
    assert entry["n"] == regular
    assert entry["checks"] == {"pairs": len(CHECK_PAIRS), "judgments": check_judgments, "scored_raters": 5,
                               "failed_raters": 1}
    for criterion in entry["criteria"]:  # no "attention-check" system among the compared ones
        assert {r[side] for r in criterion["win_rates"] for side in ("system_a", "system_b")} == \
            {"demo-rulebot", "demo-parrot"}

    done = {a.rater.external_id: a for a in Assignment.objects.filter(study=study).select_related("rater")}
    careless = f"demo-acute-{CARELESS_RATER:02d}"
    assert {name for name, a in done.items() if a.checks_failed} == {careless}
    assert all(a.checks_shown == len(CHECK_PAIRS) for a in done.values())
    assert all(a.checks_passed == len(CHECK_PAIRS) for name, a in done.items() if name != careless)
    [flagged] = review_queue.flagged_raters(study)
    assert flagged["assignment"].pk == done[careless].pk
    evidence = rater_evidence.rater_evidence(study, done[careless].rater_id)
    assert len(evidence["checks"]) == len(CHECK_PAIRS) and not all(c["passed"] for c in evidence["checks"])
    assert next(f for f in evidence["flags"] if f.key == "checks").raised

    client = Client()
    client.force_login(user)
    review = client.get(f"/studies/{study.slug}/review/").content.decode()
    names = {name: rater_evidence.rater_name(study, a, raw_ids=False) for name, a in done.items()}
    assert names[careless] in review
    assert not any(shown in review for name, shown in names.items() if name != careless)
    report = client.get(f"/studies/{study.slug}/report/").content.decode()
    assert 'data-testid="acute-check-pairs"' in report and f"{len(CHECK_PAIRS)} check pairs" in report
