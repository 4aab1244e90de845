"""An LLM judge made as a metric model: a ``MetricModel`` of the ``llm_judge`` metric, owned by the researcher
whose OpenAI-compatible endpoint it calls, configured with a snapshot of one of their study's criteria. It sits
here, above the implementations, because making one registers the metric; what a judge needs while it runs is
``metrics.judging``'s."""
from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from metrics.judging.prompt import JudgeCriterion
from metrics.judging.services import JUDGE_METRIC, criterion_for_judge, endpoints_usable_by
from metrics.models import MetricModel
from metrics.scoring.services import metric_register
from studies.designs import unit_for
from studies.models import Study

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,79}$")


@transaction.atomic
def judge_model_create(*, owner, endpoint_id: int, study: Study, criterion: str, name: str = "",
                       logprobs: bool = False, concurrency: int = 4, requests_per_minute: int = 0,
                       price_prompt_per_million: float = 0.0, price_completion_per_million: float = 0.0) -> MetricModel:
    """A judge of ``study``'s ``criterion`` through the owner's ``endpoint_id``, at the study unit's level
    (a response given its context, or a whole dialogue). ValidationError names each field at fault."""
    errors: dict[str, str] = {}
    endpoint = endpoints_usable_by(owner).filter(pk=endpoint_id).select_related("system").first()
    if endpoint is None:
        errors["endpoint"] = "no endpoint of yours has this id (see your chat endpoints)"
    elif endpoint.protocol != "openai":
        errors["endpoint"] = f"{endpoint.system.name} speaks Concord's chat protocol; a judge needs an OpenAI-compatible endpoint"
    snapshot: JudgeCriterion | None = None
    try:
        snapshot = criterion_for_judge(study, criterion)
    except ValueError as error:
        errors["criterion"] = str(error)
    name = name or f"judge-{study.slug}-{criterion}"[:80].lower()
    if not NAME.match(name):
        errors["name"] = "lower-case letters, digits, - and _ (at most 80)"
    elif MetricModel.objects.filter(name=name).exists():
        errors["name"] = f"a metric model is already called {name}"
    if not 1 <= concurrency <= 32:
        errors["concurrency"] = "1 to 32 requests at once"
    if requests_per_minute < 0:
        errors["requests_per_minute"] = "0 (no limit) or more"
    if min(price_prompt_per_million, price_completion_per_million) < 0:
        errors["price"] = "prices are 0 or more"
    if errors or endpoint is None or snapshot is None:
        raise ValidationError(errors)
    config: dict[str, Any] = {
        "owner": owner.pk, "endpoint": endpoint.pk, "criterion": snapshot.as_dict(), "level": "dialogue" if unit_for(study).level == "dialogue" else "turn",
        "logprobs": logprobs, "concurrency": concurrency, "requests_per_minute": requests_per_minute,
        "price_prompt_per_million": price_prompt_per_million,
        "price_completion_per_million": price_completion_per_million}
    return MetricModel.objects.create(metric=metric_register(key=JUDGE_METRIC), name=name, owner=owner, config=config,
                                      base_encoder=endpoint.model_name)
