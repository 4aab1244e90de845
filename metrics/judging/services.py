"""What an LLM judge needs of the database while it runs (the prompting, calling and parsing are the modules
beside this one): a judge is a ``MetricModel`` of the ``llm_judge`` metric, owned by the researcher whose
OpenAI-compatible endpoint it calls, configured with a snapshot of one of their study's criteria (made by
``metrics.scoring.judges.judge_model_create``); its answers are cached in ``JudgeAnswer``.

- ``criterion_for_judge``: a study criterion as a judge sees it (a short scale or labels);
- ``judge_endpoint_for``: the endpoint a judge calls, with its key, checked again at every run (an endpoint
  its owner can no longer use is refused, so a judge never carries a key across researchers);
- ``JudgeCache``: the cache ``metrics.judging.run.judge_all`` reads and writes."""
from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, transaction

from metrics.judging.client import JudgeEndpoint
from metrics.judging.prompt import JudgeCriterion
from metrics.models import JudgeAnswer
from studies.designs import design_for
from studies.models import Study

JUDGE_METRIC = "llm_judge"


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


def endpoints_usable_by(user):
    """The chat endpoints ``user`` may call (their own and their experiments' owners'), as the chat's own."""
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


def judge_endpoint_for(config: dict) -> tuple[JudgeEndpoint, list]:
    """The judge's endpoint with its key, if its owner (``config["owner"]``) may still use it; ValueError
    otherwise, before anything is sent."""
    from django.contrib.auth import get_user_model

    from studies.chat.addresses import networks_parse
    from studies.chat.keys import endpoint_key

    owner = get_user_model().objects.filter(pk=int(config.get("owner") or 0), is_active=True).first()
    endpoint = endpoints_usable_by(owner).filter(pk=config.get("endpoint")).first() if owner is not None else None
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
