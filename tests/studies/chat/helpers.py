"""Building chat studies for the tests: systems with endpoints on the local bot server, a published
chat study, and a started assignment."""
from __future__ import annotations

import numpy as np
from django.contrib.auth import get_user_model
from django.utils import timezone

from studies.authoring import services
from studies.chat import endpoints
from studies.chat import services as chatting
from studies.models import Assignment, AssignmentItem, Study, System
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating.entry import rater_get_or_create


def bot_system(name: str, url: str, *, owner=None, protocol: str = "concord", key: str = "", timeout: float = 2.0,
               retries: int = 1) -> System:
    """A system with an endpoint of ``owner`` (default: the researcher "alice", the ``user`` fixture's,
    who owns the studies the chat tests build)."""
    system, _ = System.objects.get_or_create(name=name)
    if owner is None:
        owner = get_user_model().objects.get_or_create(username="alice")[0]
    endpoints.endpoint_set(owner=owner, system=system, protocol=protocol, url=url, model_name=f"{name}-model", key=key,
                           timeout_seconds=timeout, retries=retries)
    return system


def chat_study(owner, systems: list[str], *, unit_config: dict | None = None, design: str = "likert",
               design_config: dict | None = None, raters_per_item: int = 3, items_per_assignment: int = 1,
               publish: bool = True) -> Study:
    experiment = services.experiment_create(owner=owner, title=f"Chat study {len(systems)}")
    study = services.study_create(experiment=experiment, title="Chat with a bot", design=design, unit="chat",
                                  design_config=design_config, raters_per_item=raters_per_item,
                                  items_per_assignment=items_per_assignment,
                                  unit_config={"min_turns": 2, "max_turns": 4, **(unit_config or {})})
    services.study_items_build(study=study, systems=systems)
    if publish:
        services.study_publish(study=study)
    return study


def started_assignment(study: Study, worker: str = "w1") -> Assignment:
    """An assignment holding every item of the study (built directly: the service tests need no entry path)."""
    rater = rater_get_or_create(platform="invite", external_id=worker)
    assignment = Assignment.objects.create(study=study, rater=rater, experiment=study.experiment, seed=7,
                                           started_at=timezone.now(), consented_at=timezone.now())
    AssignmentItem.objects.bulk_create([
        AssignmentItem(assignment=assignment, item=item, position=i, response_order=[])
        for i, item in enumerate(study.items.order_by("position"))])
    return assignment


LINES = ["Hello!", "I like long walks by the sea.", "I feel a bit tired today.", "What is the weather like?"]


def chat_and_rate(study: Study, worker: str, seed: int, *, finish: bool = True, good_system: str = ""):
    """A rater through the real entry path: each item's chat (2 to 4 of ``LINES``), ended, then rated on
    every criterion (higher for ``good_system``, on a 5-point scale), and the assignment submitted.
    ``finish=False`` stops in the first chat (still open)."""
    rng = np.random.default_rng(seed)
    assignment = rater_entry.assignment_start(study=study, rater=rater_get_or_create(platform="invite",
                                                                                     external_id=worker), seed=seed)
    answering.assignment_consent(assignment=assignment)
    for slot in assignment.assignment_items.order_by("position"):
        chats = chatting.chat_open(assignment=assignment, item_id=slot.item_id)
        for i, line in enumerate(rng.permutation(LINES)[: int(rng.integers(2, 5))]):
            chatting.chat_turn_post(assignment=assignment, item_id=slot.item_id, text=str(line), client_id=str(i))
        if not finish:
            return assignment
        chatting.chat_end(assignment=assignment, item_id=slot.item_id)
        answers = {}
        for criterion in study.criteria.values_list("name", flat=True):
            if study.unit_config.get("systems_per_chat", 1) == 2:  # ranked: the good system first
                ordered = sorted(chats, key=lambda c: c.system.name != good_system)
                answers[criterion] = {c.conversation_id: rank for rank, c in enumerate(ordered, start=1)}
            else:
                answers[criterion] = {c.conversation_id: int(np.clip((4 if c.system.name == good_system else 2)
                                                                     + rng.integers(-1, 2), 1, 5)) for c in chats}
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=5.0)
    return answering.assignment_submit(assignment=assignment)
