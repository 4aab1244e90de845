"""The demo's ACUTE-Eval experiment: the chat demo's two bots on loopback (``studies.chat.demo``: the
rule-based bot and the parrot, a second personality) each talk with themselves from a few openers
(``studies.chat.selfchat``); one ACUTE-Eval study compares their self-chats on the paper's four
questions, and simulated raters, who mostly prefer the rule bot (per-rater bias and noise), answer it."""
from __future__ import annotations

import ipaddress

import numpy as np

from studies.authoring import services as authoring
from studies.chat import endpoints, selfchat
from studies.chat.addresses import address_problem
from studies.chat.demo import BOT_PORT, BOT_URL, SYSTEMS, ChatDemoSkipped, _bot_running
from studies.models import Experiment, Rater, Study, System
from studies.rating import answers as answering
from studies.rating import entry as rater_entry

DEMO_ACUTE_EXPERIMENT = "demo-acute"
OPENERS = ["Hello! How was your day?", "I like hiking in the hills.", "My name is Sam.", "I feel a bit tired today."]
SIMULATED_RATERS = 5
PREFERRED = "demo-rulebot"


def acute_demo_load(*, owner, seed: int = 35, port: int = BOT_PORT, conversations: int = 4,
                    turns: int = 6) -> Experiment | None:
    """Create the ACUTE demo (idempotent: None if it is already there); ChatDemoSkipped where the
    deployment does not allow its loopback bots."""
    if Experiment.objects.filter(slug=DEMO_ACUTE_EXPERIMENT).exists():
        return None
    if address_problem(ipaddress.ip_address("127.0.0.1"), endpoints.allowed_networks()):
        raise ChatDemoSkipped("its bots answer on 127.0.0.1, which CONCORD_CHAT_ALLOWED_NETWORKS does not allow here")
    bot = _bot_running(port)
    try:
        for name, (kind, _) in SYSTEMS.items():
            system, _ = System.objects.get_or_create(name=name, defaults={"description": f"the local {kind} bot"})
            if not endpoints.endpoints_of(owner.pk).filter(system=system).exists():
                endpoints.endpoint_set(owner=owner, system=system, protocol="concord", url=BOT_URL.format(port=port, bot=kind),
                                       model_name=kind, timeout_seconds=5, retries=1)
        corpus = None
        for name in SYSTEMS:
            run = selfchat.selfchat_create(owner=owner, title="Demo self-chats", system_a=name, system_b=name,
                                           openers=OPENERS, conversations=conversations, turns=turns, corpus=corpus,
                                           queue=False)
            run = selfchat.selfchat_run(run=run)
            corpus = run.corpus
    finally:
        if bot is not None:
            bot.stop()
    experiment = authoring.experiment_create(
        owner=owner, title="Demo: ACUTE-Eval over self-chats", slug=DEMO_ACUTE_EXPERIMENT,
        description="Two demo bots each talk with themselves; raters compare whole conversations side by side.")
    study = authoring.study_create(experiment=experiment, title="Demo ACUTE-Eval", design="acute", unit="dialogue",
                                   slug="demo-acute", raters_per_item=SIMULATED_RATERS, items_per_assignment=20,
                                   design_config={"reason": "optional"})
    authoring.study_items_build(study=study, corpus=corpus)
    study = authoring.study_publish(study=study)
    _simulate(study, np.random.default_rng(seed))
    return experiment


def _simulate(study: Study, rng) -> None:
    from studies.models import Conversation

    criteria = list(study.criteria.values_list("name", flat=True))
    for number in range(1, SIMULATED_RATERS + 1):
        rater, _ = Rater.objects.get_or_create(platform=Study.Platform.INVITE, external_id=f"demo-acute-{number:02d}")
        assignment = rater_entry.assignment_start(study=study, rater=rater, seed=2000 + number)
        answering.assignment_consent(assignment=assignment)
        bias = rng.normal(0, 0.3)
        for slot in assignment.assignment_items.order_by("position"):
            left, right = slot.response_order
            systems = dict(Conversation.objects.filter(pk__in=[left, right]).values_list("pk", "metadata__system"))
            answers = {}
            for c in criteria:
                prefer_left = (systems[left] == PREFERRED) == (rng.random() < 0.8 + bias / 4)
                answers[c] = {"choice": "left" if prefer_left else "right", "reason": ""}
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers,
                                     seconds=float(rng.gamma(4.0, 15.0)))
        answering.assignment_submit(assignment=assignment, total_seconds=float(rng.normal(8 * 60, 60)))
