"""The demo's chat-then-rate study: raters chat with two small bots on loopback (``studies.chat.local_bot``,
started by ``demo_serve`` on port 8765): a rule-based one and a parrot that repeats what it is told.
Simulated raters chat with both through the real services (the bot is started here for the load if it
is not running) and rate each conversation, so the report and the human-vs-metric page have chats to
show; real raters can then try the invite link.

The simulated raters prefer the rule bot (its replies follow on from what was said) to the parrot, with
per-rater bias and noise, on a 5-point scale."""
from __future__ import annotations

import ipaddress

import numpy as np
from django.db import transaction

from studies.authoring import services as authoring
from studies.chat import endpoints
from studies.chat import services as chat
from studies.chat.addresses import address_problem
from studies.models import Experiment, Rater, Study, System
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating.invites import invite_create

DEMO_CHAT_EXPERIMENT = "demo-chat"
BOT_PORT = 8765
BOT_URL = "http://127.0.0.1:{port}/{bot}/chat"
SYSTEMS = {"demo-rulebot": ("rule", 0.8), "demo-parrot": ("parrot", -0.8)}  # name -> (local bot, quality)
SIMULATED_RATERS = 6
RATER_LINES = [
    "Hello!", "My name is Sam.", "I like long walks by the sea.", "I feel a bit tired today.",
    "What is the weather like?", "Do you have any hobbies?", "I love cooking Italian food.", "Goodbye!",
]


class ChatDemoSkipped(Exception):
    """The chat demo cannot be loaded here; the message says why."""


def _bot_running(port: int):
    """A local bot for the load: the demo's own if one answers on ``port``, else one started here."""
    from studies.chat.local_bot import LocalBot

    try:
        return LocalBot(port=port).start()
    except OSError:  # the port is taken: demo_serve's bot is up already
        return None


def chat_demo_load(*, owner, seed: int = 25, port: int = BOT_PORT) -> Experiment | None:
    """Create the chat demo (idempotent: None if it is already there). ChatDemoSkipped when this
    deployment does not allow its loopback bot (``CHAT_ALLOWED_NETWORKS``), as production settings do not."""
    if Experiment.objects.filter(slug=DEMO_CHAT_EXPERIMENT).exists():
        return None
    if address_problem(ipaddress.ip_address("127.0.0.1"), endpoints.allowed_networks()):
        raise ChatDemoSkipped("its bot answers on 127.0.0.1, which CONCORD_CHAT_ALLOWED_NETWORKS does not allow here "
                              "(the demo settings, config.settings.local, allow it)")
    bot = _bot_running(port)
    try:
        experiment, study = _study_create(owner, port)
        _simulate(study, np.random.default_rng(seed))
    finally:
        if bot is not None:
            bot.stop()
    return experiment


@transaction.atomic
def _study_create(owner, port: int) -> tuple[Experiment, Study]:
    for name, (bot, _) in SYSTEMS.items():
        system, _ = System.objects.get_or_create(name=name, defaults={"description": f"the local {bot} bot"})
        endpoints.endpoint_set(owner=owner, system=system, protocol="concord", url=BOT_URL.format(port=port, bot=bot),
                               model_name=bot, timeout_seconds=5, retries=1)
    experiment = authoring.experiment_create(
        owner=owner, title="Demo: chat with a bot, then rate the conversation", slug=DEMO_CHAT_EXPERIMENT,
        description="Raters chat with two small bots on this machine, then rate each whole conversation.")
    study = authoring.study_create(
        experiment=experiment, title="Demo chat-then-rate", design="likert", design_config={"points": 5},
        unit="chat", unit_config={"min_turns": 3, "max_turns": 6}, slug="demo-chat",
        raters_per_item=SIMULATED_RATERS + 4, items_per_assignment=2,
        instructions="Chat with each system for a few turns about anything you like, then rate the conversation.")
    authoring.study_items_build(study=study, systems=list(SYSTEMS))
    study = authoring.study_publish(study=study)
    invite_create(study=study, label="try it yourself", expires_in_days=365)
    return experiment, study


def _simulate(study: Study, rng) -> None:
    criteria = list(study.criteria.values_list("name", flat=True))
    for number in range(1, SIMULATED_RATERS + 1):
        rater, _ = Rater.objects.get_or_create(platform=Study.Platform.INVITE, external_id=f"demo-chatter-{number:02d}")
        assignment = rater_entry.assignment_start(study=study, rater=rater, seed=1000 + number)
        answering.assignment_consent(assignment=assignment)
        bias = rng.normal(0, 0.4)
        for slot in assignment.assignment_items.order_by("position"):
            [opened] = chat.chat_open(assignment=assignment, item_id=slot.item_id)
            lines = rng.permutation(RATER_LINES)[: int(rng.integers(3, 6))]
            for i, line in enumerate(lines):
                chat.chat_turn_post(assignment=assignment, item_id=slot.item_id, text=str(line), client_id=f"demo-{i}")
            chat.chat_end(assignment=assignment, item_id=slot.item_id)
            quality = SYSTEMS[opened.system.name][1]
            answers = {c: {opened.conversation_id: int(np.clip(round(3 + 1.2 * (quality + bias) + rng.normal(0, 0.5)),
                                                               1, 5))} for c in criteria}
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers,
                                     seconds=float(rng.gamma(4.0, 10.0)))
        answering.assignment_submit(assignment=assignment, total_seconds=float(rng.normal(6 * 60, 60)),
                                    questionnaire={"prior_rating_experience": bool(rng.random() < 0.4),
                                                   "prior_agent_experience": bool(rng.random() < 0.8)})
