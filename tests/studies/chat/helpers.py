"""Building chat studies for the tests: systems with endpoints on the local bot server, a published
chat study, and a started assignment."""
from __future__ import annotations

from django.utils import timezone

from studies.authoring import services
from studies.chat import endpoints
from studies.chat import services as chat_services
from studies.models import Assignment, AssignmentItem, Study, System
from studies.rating.entry import rater_get_or_create


def bot_system(name: str, url: str, *, protocol: str = "concord", key: str = "", timeout: float = 2.0,
               retries: int = 1) -> System:
    system, _ = System.objects.get_or_create(name=name)
    endpoints.endpoint_set(system=system, protocol=protocol, url=url, model_name=f"{name}-model", key=key,
                           timeout_seconds=timeout, retries=retries)
    return system


def chat_study(owner, systems: list[str], *, unit_config: dict | None = None, design: str = "likert",
               design_config: dict | None = None, raters_per_item: int = 3, items_per_assignment: int = 1,
               publish: bool = True) -> Study:
    experiment = services.experiment_create(owner=owner, title=f"Chat study {len(systems)}")
    study = services.study_create(experiment=experiment, title="Chat with a bot", design=design, unit="chat",
                                  design_config=design_config, raters_per_item=raters_per_item,
                                  items_per_assignment=items_per_assignment)
    study.unit_config = {"min_turns": 2, "max_turns": 4, **(unit_config or {})}
    study.save(update_fields=["unit_config"])
    chat_services.chat_items_build(study=study, systems=systems)
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
