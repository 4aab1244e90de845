"""The demo's ACUTE-Eval experiment: the chat demo's two bots on loopback (``studies.chat.demo``: the
rule-based bot and the parrot, a second personality) each talk with themselves from a few openers
(``studies.chat.selfchat``); one ACUTE-Eval study compares their self-chats on the paper's four
questions, and simulated raters, who mostly prefer the rule bot (per-rater bias and noise), answer it.

Quality control as in the paper (Li, Weston and Roller 2019, section 4): two check pairs with a known
answer, each a coherent conversation against a degenerate one (a bot that repeats itself; one that
answers in off-topic single words), written through the checks page's service
(``studies.authoring.checks.check_item_create``) and shown to every rater. The attentive simulated raters
pick the coherent speaker; the last one (``CARELESS_RATER``) clicks at random, fast, fails the checks and
is flagged on the review page with the evidence."""
from __future__ import annotations

import ipaddress

import numpy as np

from studies.authoring import checks
from studies.authoring import services as authoring
from studies.chat import endpoints, selfchat
from studies.chat.addresses import address_problem
from studies.chat.demo import BOT_PORT, BOT_URL, SYSTEMS, ChatDemoSkipped, _bot_running
from studies.models import CheckKind, Experiment, Rater, Study, System
from studies.rating import answers as answering
from studies.rating import entry as rater_entry

DEMO_ACUTE_EXPERIMENT = "demo-acute"
OPENERS = ["Hello! How was your day?", "I like hiking in the hills.", "My name is Sam.", "I feel a bit tired today."]
SIMULATED_RATERS = 5
PREFERRED = "demo-rulebot"
CARELESS_RATER = SIMULATED_RATERS  # demo-acute-05 answers at random and fails the check pairs


def _turns(*lines: str) -> dict:
    """A check conversation shaped like the self-chats: the partner opens, the judged ``bot`` answers."""
    return {"speaker": "bot", "turns": [{"speaker": ("partner", "bot")[i % 2], "text": text}
                                        for i, text in enumerate(lines)]}


COHERENT_DAY = _turns("Hello! How was your day?",
                      "Pretty good, thanks! I walked by the river this morning. How was yours?",
                      "Busy, lots of meetings. I'm glad it's over.",
                      "Meetings can be tiring. Anything relaxing planned for the evening?",
                      "Maybe cook something and read a book.",
                      "That sounds lovely. What are you reading at the moment?")
REPEATING = _turns("I like hiking in the hills.", "I like hiking in the hills.", "Which hills do you go to?",
                   "I like hiking in the hills.", "Do you go alone or with friends?", "I like hiking in the hills.")
ONE_WORD = _turns("My name is Sam. What's yours?", "Banana.", "That's an unusual name! What do you do?", "Purple.",
                  "Sorry, I don't follow.", "Yes.")
COHERENT_TIRED = _turns("I feel a bit tired today.",
                        "Sorry to hear that. Did you sleep badly, or has it been a long day?",
                        "A long day at work, mostly.",
                        "Then an early night might help. What kind of work do you do?",
                        "I'm a nurse.", "That's demanding work. I hope tomorrow's shift is a quiet one.")
# (conversations, rules numbering them from 1): the coherent bot is the better speaker on every question
CHECK_PAIRS = (([COHERENT_DAY, REPEATING], [{"greater": 1, "than": 2}]),
               ([ONE_WORD, COHERENT_TIRED], [{"greater": 2, "than": 1}]))


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
    for conversations, rules in CHECK_PAIRS:
        checks.check_item_create(study=study, kind=CheckKind.GOLD, conversations=conversations, rules=rules)
    checks.study_checks_configure(study=study, per_assignment=len(CHECK_PAIRS))
    study = authoring.study_publish(study=study)
    _simulate(study, np.random.default_rng(seed))
    return experiment


def _simulate(study: Study, rng) -> None:
    """Attentive raters prefer the rule bot about 80% of the time (per-rater bias) and answer the check
    pairs right; the careless rater answers every question at random in a few seconds."""
    from studies.models import Conversation

    criteria = list(study.criteria.values_list("name", flat=True))
    known = {pk: rules[0]["greater"] for pk, rules in study.items.filter(check_kind__gt="")
             .values_list("pk", "check_rules")}  # check item -> the better conversation
    for number in range(1, SIMULATED_RATERS + 1):
        careless = number == CARELESS_RATER
        rater, _ = Rater.objects.get_or_create(platform=Study.Platform.INVITE, external_id=f"demo-acute-{number:02d}")
        assignment = rater_entry.assignment_start(study=study, rater=rater, seed=2000 + number)
        answering.assignment_consent(assignment=assignment)
        bias = rng.normal(0, 0.3)
        for slot in assignment.assignment_items.order_by("position"):
            left, right = slot.response_order
            systems = dict(Conversation.objects.filter(pk__in=[left, right]).values_list("pk", "metadata__system"))
            answers = {}
            for c in criteria:
                if careless:
                    prefer_left = rng.random() < 0.5
                elif slot.item_id in known:
                    prefer_left = left == known[slot.item_id]
                else:
                    prefer_left = (systems[left] == PREFERRED) == (rng.random() < 0.8 + bias / 4)
                answers[c] = {"choice": "left" if prefer_left else "right", "reason": ""}
            seconds = rng.gamma(2.0, 2.0) if careless else rng.gamma(4.0, 15.0)
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers,
                                     seconds=float(seconds))
        minutes = 1 if careless else 8
        answering.assignment_submit(assignment=assignment, total_seconds=float(rng.normal(minutes * 60, 10)))
