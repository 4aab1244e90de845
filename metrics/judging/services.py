"""LLM judges as metric models (``metrics.judging`` does the prompting, calling and parsing; this module
holds what needs the database): a judge is a ``MetricModel`` of the ``llm_judge`` metric, owned by the
researcher whose OpenAI-compatible endpoint it calls, configured with a snapshot of one of their study's
criteria; its answers are cached in ``JudgeAnswer``.

- ``judge_model_create``: a judge from an endpoint and a study criterion (every problem named by field;
  nothing is made when one is found);
- ``judge_endpoint_for``: the endpoint a judge calls, with its key, checked again at every run (an endpoint
  its owner can no longer use is refused, so a judge never carries a key across researchers);
- ``JudgeCache``: the cache ``metrics.judging.run.judge_all`` reads and writes."""
from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from metrics.judging.client import JudgeEndpoint
from metrics.judging.prompt import JudgeCriterion
from metrics.models import JudgeAnswer, MetricModel
from studies.designs import design_for, unit_for
from studies.models import Study

JUDGE_METRIC = "llm_judge"
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,79}$")


class JudgeCache:
    """``JudgeAnswer`` rows as the mapping ``judge_all`` asks (get / [] / []=), remembered per instance."""

    def __init__(self):
        self.seen: dict[str, dict] = {}
        self.absent: set[str] = set()  # asked by ``preload`` and not stored: no second query for them

    def get(self, key: str, default=None):
        if key in self.absent:
            return default
        if key not in self.seen:
            row = JudgeAnswer.objects.filter(key=key).values("text", "logprobs", "prompt_tokens", "completion_tokens").first()
            if row is None:
                return default
            self.seen[key] = dict(row)
        return self.seen[key]

    def preload(self, keys) -> None:
        """Every stored answer among ``keys`` in one query (a scoring batch asks for all of them)."""
        wanted = [k for k in keys if k not in self.seen]
        for row in JudgeAnswer.objects.filter(key__in=wanted).values("key", "text", "logprobs", "prompt_tokens",
                                                                      "completion_tokens"):
            data: dict = dict(row)
            self.seen[str(data.pop("key"))] = data
        self.absent.update(k for k in wanted if k not in self.seen)

    def __getitem__(self, key: str) -> dict:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: dict) -> None:
        try:
            with transaction.atomic():
                JudgeAnswer.objects.create(key=key, text=value["text"], logprobs=value.get("logprobs"),
                                           prompt_tokens=value.get("prompt_tokens", 0),
                                           completion_tokens=value.get("completion_tokens", 0))
        except IntegrityError:  # another worker stored the same answer first: one row, either is fine
            pass
        self.seen[key] = value
        self.absent.discard(key)


def _endpoints_usable_by(user):
    from studies.chat.selectors import endpoints_visible_to

    return endpoints_visible_to(user)


def criterion_for_judge(study: Study, criterion_name: str) -> JudgeCriterion:
    """The judge's view of a study criterion: the design's whole-point scale (with its end labels) or a
    categorical criterion's labels. Multi-label, free text and magnitudes are refused (ValueError)."""
    criterion = study.criteria.filter(name=criterion_name).first()
    if criterion is None:
        names = ", ".join(study.criteria.values_list("name", flat=True)) or "none"
        raise ValueError(f"“{study.title}” has no criterion {criterion_name!r} (it has: {names})")
    if criterion.kind == "categorical":
        return JudgeCriterion(name=criterion.name, question=criterion.question, help=criterion.help_text,
                              labels=tuple((criterion.options or {}).get("labels") or ()))
    if criterion.kind != "scale":
        raise ValueError(f"{criterion.name} is answered as {criterion.kind.replace('_', ' ')}: a judge gives one "
                         "score on a scale or one label")
    design = design_for(study)
    bounds = design.value_range(study.design_config, scale_min=criterion.scale_min, scale_max=criterion.scale_max)
    if bounds is None or not float(bounds[0]).is_integer() or not float(bounds[1]).is_integer() or bounds[1] - bounds[0] > 20:
        raise ValueError(f"{criterion.name}: this design's answers are not points of a short scale "
                         "(magnitudes, ranks or choices); a judge scores whole points")
    low, high = int(bounds[0]), int(bounds[1])
    labels = list((study.design_config or {}).get("labels") or [])
    return JudgeCriterion(name=criterion.name, question=criterion.question, help=criterion.help_text,
                          points=tuple(range(low, high + 1)), low_label=labels[0] if labels else "",
                          high_label=labels[-1] if len(labels) > 1 else "")


@transaction.atomic
def judge_model_create(*, owner, endpoint_id: int, study: Study, criterion: str, name: str = "",
                       logprobs: bool = False, concurrency: int = 4, requests_per_minute: int = 0,
                       price_prompt_per_million: float = 0.0, price_completion_per_million: float = 0.0) -> MetricModel:
    """A judge of ``study``'s ``criterion`` through the owner's ``endpoint_id``, at the study unit's level
    (a response given its context, or a whole dialogue). ValidationError names each field at fault."""
    from metrics.scoring.services import metric_register

    errors: dict[str, str] = {}
    endpoint = _endpoints_usable_by(owner).filter(pk=endpoint_id).select_related("system").first()
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


def judge_endpoint_for(config: dict) -> tuple[JudgeEndpoint, list]:
    """The judge's endpoint with its key, if its owner (``config["owner"]``) may still use it; ValueError
    otherwise, before anything is sent."""
    from django.contrib.auth import get_user_model

    from studies.chat.addresses import networks_parse
    from studies.chat.keys import endpoint_key

    owner = get_user_model().objects.filter(pk=int(config.get("owner") or 0), is_active=True).first()
    endpoint = _endpoints_usable_by(owner).filter(pk=config.get("endpoint")).first() if owner is not None else None
    if endpoint is None:
        raise ValueError("the judge's endpoint is gone or no longer its owner's: nothing was sent")
    from studies.chat.keys import KeyUnavailable

    try:
        key = endpoint_key(key_env=endpoint.key_env, key_encrypted=endpoint.key_encrypted) if endpoint.has_key else ""
    except KeyUnavailable as error:
        raise ValueError(f"the judge's key is not available: {error}") from None
    return (JudgeEndpoint(url=endpoint.url, model=endpoint.model_name, key=key, timeout=endpoint.timeout_seconds,
                          retries=max(endpoint.retries, 2), concurrency=int(config.get("concurrency", 4)),
                          requests_per_minute=int(config.get("requests_per_minute", 0))),
            networks_parse(settings.CHAT_ALLOWED_NETWORKS))


def cost_of(config: dict, prompt_tokens: int, completion_tokens: int) -> float:
    return (prompt_tokens * float(config.get("price_prompt_per_million", 0))
            + completion_tokens * float(config.get("price_completion_per_million", 0))) / 1e6
