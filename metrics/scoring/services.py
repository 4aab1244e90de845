"""Writes for metrics: registering metrics, scoring runs (create, execute, cancel), BME references.

Scoring is batched and idempotent: a run scores only responses without a score from its model
(unless ``force``), so a run restarted after a worker died finishes without duplicates. Progress is
written to the run row at most once a second; a cancelled run stops at the next batch."""
from __future__ import annotations

import threading
from collections.abc import Callable

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from metrics import registry
from metrics.implementations.base import ScoringInput
from metrics.models import Metric, MetricModel, MetricScore, RunStatus, ScoringRun
from metrics.scoring import selectors
from metrics.scoring.loop import scoring_run_batches
from metrics.scoring.run_jobs import scoring_run_queue
from studies.authoring import services as study_services
from studies.designs.magnitude import bme_reference_value
from studies.models import Response, Study

BATCH = 64
BATCH_READ = 5000  # ids per query when a run reads all its targets ahead (below any database's parameter limit)


def metric_register(*, key: str) -> Metric:
    cls = registry.all_metrics()[key]
    metric, _ = Metric.objects.update_or_create(key=key, defaults={
        "name": cls.name, "level": cls.level, "kind": cls.kind, "description": cls.description,
        "range_min": cls.range[0], "range_max": cls.range[1]})
    return metric


RENAMED = {"coherence-minilm": "coherence"}  # the names the README uses (a model made before keeps its scores)


def metric_model_default(*, key: str) -> MetricModel:
    """The default instance of a heuristic metric (created on first use; a read afterwards): its name and
    base encoder are what its class declares (``default_model``, ``encoder``)."""
    cls = registry.implementation_class(key)
    existing = MetricModel.objects.filter(name=cls.default_model_name()).select_related("metric").first()
    if existing is not None:
        return existing
    model, _ = MetricModel.objects.get_or_create(
        name=cls.default_model_name(), defaults={"metric": metric_register(key=key), "base_encoder": cls.encoder})
    return model


def metric_models_default() -> list[MetricModel]:
    """Every heuristic metric's default instance, so a registered heuristic is offered without a step of its own."""
    return [metric_model_default(key=key) for key in registry.heuristic_keys()]


def builtin_model_names() -> tuple[str, ...]:
    """The names of the built-in metric models (every heuristic's default instance)."""
    return tuple(registry.implementation_class(key).default_model_name() for key in registry.heuristic_keys())


def builtin_metrics_register(**_signal) -> list[MetricModel]:
    """The built-in metric models (every heuristic's default instance), so the API and the pages list them
    on a fresh database before anyone opens a page: run after every ``migrate`` (``post_migrate``,
    ``MetricsConfig``). A model of an older name (``RENAMED``) takes the new one, scores and runs kept."""
    for old, new in RENAMED.items():
        if not MetricModel.objects.filter(name=new).exists():
            MetricModel.objects.filter(name=old).update(name=new)
    return metric_models_default()


def scoring_inputs(responses: list[Response]) -> list[ScoringInput]:
    """Context turns, response and (where the conversation has one) the reference response's text."""
    conversations = {r.conversation_id for r in responses}
    references = dict(Response.objects.filter(conversation_id__in=conversations, is_reference=True)
                      .values_list("conversation_id", "text"))
    return [ScoringInput(turns=[t["text"] for t in r.conversation.turns], response=r.text,
                         reference=references.get(r.conversation_id)) for r in responses]


@transaction.atomic
def scoring_run_create(*, metric_model: MetricModel, study: Study | None = None, corpus=None,
                       force: bool = False, enqueue: bool = True) -> ScoringRun:
    """Queue a scoring run of a study's targets (or a corpus's, or all). A turn-level metric on a study
    whose raters judge whole dialogues, or on a corpus of whole conversations without responses (self-chats),
    is refused here (field ``metric_model``, ``selectors.metric_model_fit_problem``): there is no response
    to score, so the run would finish "0/0", and a mean of turn scores would be a dialogue metric of our
    own making, not the one named."""
    if problem := selectors.metric_model_fit_problem(metric_model, study=study, corpus=corpus):
        raise ValidationError({"metric_model": problem})
    run = ScoringRun.objects.create(metric_model=metric_model, study=study, corpus=corpus, force=force)
    if enqueue:  # by name (the task imports this module), on its kind's queue
        scoring_run_queue(run)
    return run


def scoring_run_retry(*, run: ScoringRun, enqueue: bool = True) -> ScoringRun:
    """A new run of ``run``'s scope and model that scores only what is still unscored (never forced): after
    failed judge calls, only those are asked again, since answered ones are stored or cached. ValidationError
    (field ``run``) while the run is queued or running, or when nothing of its scope is unscored."""
    if run.status in (RunStatus.QUEUED, RunStatus.RUNNING):
        raise ValidationError({"run": f"run {run.pk} is {run.status}: retry it once it has finished"})
    left = selectors.unscored_in_scope(run)
    if not left:
        raise ValidationError({"run": f"run {run.pk}: every target of its scope has a score; nothing to retry"})
    return scoring_run_create(metric_model=run.metric_model, study=run.study, corpus=run.corpus, enqueue=enqueue)


def scoring_run_cancel(*, run: ScoringRun) -> ScoringRun:
    ScoringRun.objects.filter(pk=run.pk, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).update(
        status=RunStatus.CANCELLED, finished_at=timezone.now())
    run.refresh_from_db()
    return run


def scoring_run_execute(*, run: ScoringRun, on_progress: Callable[[int, int], None] | None = None,
                        stop: threading.Event | None = None) -> ScoringRun:
    """Score the run's unscored responses in batches; safe to call again after a crash (resume). ``stop``
    (the run's lease, set on Cancel) reaches an implementation that stops inside a batch (an LLM judge)."""
    claimed = ScoringRun.objects.filter(pk=run.pk, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).update(
        status=RunStatus.RUNNING, attempts=F("attempts") + 1, started_at=Coalesce("started_at", Now()))
    run.refresh_from_db()
    if not claimed:
        return run
    metric = run.metric_model.metric
    implementation = registry.implementation(metric.key, run.metric_model.config)
    if stop is not None and isinstance(getattr(implementation, "stop", None), threading.Event):
        implementation.stop = stop  # type: ignore[attr-defined]  # checked just above
    if implementation.scores_conversations:  # dialogue level (SelF-Eval): one score per conversation
        from metrics.scoring.dialogue import scoring_run_execute_conversations

        return scoring_run_execute_conversations(run=run, implementation=implementation, on_progress=on_progress)
    def scores_of(ids: list[int]) -> list[MetricScore]:
        responses = list(Response.objects.filter(pk__in=ids).select_related("conversation").order_by("pk"))
        values = implementation.score(scoring_inputs(responses))
        # None: no score (an LLM judge's refusal or unparseable answer), stored as nothing, never as 0
        return [MetricScore(metric_model=run.metric_model, response=r, value=v, run=run)
                for r, v in zip(responses, values, strict=True) if v is not None]

    def prepare(ids: list[int]) -> None:  # the embed-each-text-once step of benchmark_metric, for a run
        responses = [r for start in range(0, len(ids), BATCH_READ) for r in Response.objects.filter(
            pk__in=ids[start:start + BATCH_READ]).select_related("conversation").order_by("pk")]
        implementation.prepare(inputs=scoring_inputs(responses))

    def notes() -> str:
        warned = implementation.warnings
        text = f"; {warned} response(s) got a fallback value (see the metric's notes)" if warned else ""
        return text + (implementation.run_notes() if hasattr(implementation, "run_notes") else "")

    return scoring_run_batches(run=run, device=implementation.device, targets=selectors.run_responses(run),
                               unscored=selectors.unscored(run), scores_of=scores_of, prepare=prepare,
                               batch=getattr(implementation, "batch_size", BATCH), notes=notes, on_progress=on_progress)


def bme_reference_values_fill(*, study: Study, metric_model: MetricModel) -> dict[int, float]:
    """Fill a BME study's reference values from a metric's score of each item's reference response.

    Mapping (studies.designs.magnitude.bme_reference_value, documented on the study page): the score is rescaled
    linearly from [lo, hi] onto the study's anchor interval (default 50..150, whole numbers), where
    [lo, hi] is the metric's declared range, or the range observed over these references when the
    metric declares none."""
    items = list(study.items.exclude(reference_response=None).select_related("reference_response__conversation"))
    responses = [i.reference_response for i in items if i.reference_response is not None]  # all of them (the filter)
    implementation = registry.implementation(metric_model.metric.key, metric_model.config)
    known = selectors.response_scores(metric_model, [r.pk for r in responses])
    missing = [r for r in responses if r.pk not in known]
    if missing:
        values = implementation.score(scoring_inputs(missing))
        MetricScore.objects.bulk_create([MetricScore(metric_model=metric_model, response=r, value=v)
                                         for r, v in zip(missing, values, strict=True)], ignore_conflicts=True)
        known.update({r.pk: v for r, v in zip(missing, values, strict=True)})
    observed = [known[r.pk] for r in responses]
    lo = metric_model.metric.range_min if metric_model.metric.range_min is not None else min(observed)
    hi = metric_model.metric.range_max if metric_model.metric.range_max is not None else max(observed)
    mapped = {item.pk: bme_reference_value(known[response.pk], lo=lo, hi=hi, config=study.design_config)
              for item, response in zip(items, responses, strict=True)}
    study_services.study_item_reference_values_set(study=study, values=mapped)
    return mapped
