"""Metrics pages: scoring and training runs with live progress, and human-vs-metric reports."""
from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from metrics import registry
from metrics.models import MetricModel, RunStatus, ScoringRun, TrainingRun
from metrics.ppi import estimates as ppi
from metrics.scoring import exports, run_jobs, selectors, services
from metrics.scoring.pairwise import pairwise_human_metric
from metrics.scoring.selectors import visible_runs
from metrics.training import services as training
from metrics.web.judge_views import judge_endpoints
from studies import access
from studies.compute_pool import offloaded
from studies.corpora.selectors import corpora_visible_to
from studies.designs import design_for
from studies.errors import StudyStateError
from studies.reports.exporting import no_store

logger = logging.getLogger(__name__)


@login_required
def metric_list(request):
    models = list(selectors.metric_models_usable_by(request.user).select_related("metric"))
    context = {
        "models": models,
        "warned": [m.name for m in models if selectors.card_warnings(m.card)],
        "studies": access.studies_visible_to(request.user).exclude(items=None).distinct(),
        "runs": visible_runs(request.user)[:20],
        "experiments": access.experiments_visible_to(request.user),
        "judge_endpoints": judge_endpoints(request.user),
        **_offer(request),
    }
    if request.user.is_staff:
        context["training_runs"] = TrainingRun.objects.select_related("metric", "result")[:20]
        context["trained_models"] = MetricModel.objects.filter(  # the metrics one ml trainer trains (not MDD-Eval's form)
            metric__key__in=registry.trainer_keys()).select_related("metric")
        context["trainable_metrics"] = training_choices()
    return render(request, "metrics/metric_list.html", context)


def _offer(request) -> dict:
    """``?study=SLUG`` or ``?corpus=SLUG`` (the self-chat page links here): that target with the metric models
    offered for it (only dialogue-level ones where its human judgments are of whole conversations); and the
    corpora of whole conversations (self-chats, chat transcripts) with the models that score them."""
    corpora = selectors.conversation_corpora(corpora_visible_to(request.user)).order_by("slug")
    models = selectors.metric_models_usable_by(request.user).select_related("metric")
    dialogue_models = [m for m in models if selectors.scores_conversations(m)] if corpora.exists() else []
    context = {"conversation_corpora": corpora, "dialogue_models": dialogue_models}
    study = corpus = None
    if request.GET.get("study"):
        study = get_object_or_404(access.studies_visible_to(request.user), slug=request.GET["study"])
    elif request.GET.get("corpus"):
        corpus = get_object_or_404(corpora_visible_to(request.user), slug=request.GET["corpus"])
    if study is not None or corpus is not None:
        context["offer"] = {"study": study, "corpus": corpus,
                            "models": selectors.metric_models_offered(request.user, study=study, corpus=corpus),
                            "dialogue": selectors.rates_dialogues(study=study, corpus=corpus)}
    return context


def training_choices() -> list[dict]:
    """The training form's metrics and their stages, as their classes declare them (``Trainable``)."""
    choices = []
    for key in registry.trainer_keys():
        spec = registry.trainable(key)
        choices.append({"key": key, "label": spec.label or registry.implementation_class(key).name,
                        "stages": [{"key": stage, "label": spec.stage_labels.get(stage, stage)} for stage in spec.stages]})
    return choices


TRAINING_FIELDS = {"epochs": int, "train_limit": int, "validation_limit": int, "learning_rate": float,
                   "head_learning_rate": float, "max_steps": int}


def numbers_given(post, fields: dict[str, type]) -> tuple[dict, list[str]]:
    """The numeric form fields filled in, typed, and a message naming each one that is not a number."""
    given, errors = {}, []
    for field, kind in fields.items():
        raw = post.get(field, "").strip()
        if raw:
            try:
                given[field] = kind(raw)
            except ValueError:
                errors.append(f"{field.replace('_', ' ')}: {raw!r} is not a {'whole ' if kind is int else ''}number")
    return given, errors


@staff_member_required
@require_POST
def training_start(request):
    """Queue a training stage of a learned metric from the form; a bad value names its field and queues nothing."""
    given, errors = numbers_given(request.POST, TRAINING_FIELDS)
    if errors:
        messages.error(request, "Training not started: " + "; ".join(errors))
        return redirect("metrics:metric_list")
    try:
        metric = request.POST.get("metric", "quantidce")
        run = training.training_run_create(metric=metric, stage=request.POST.get("stage") or registry.trainable(metric).stages[0],
                                           model_name=request.POST.get("model_name", "").strip(),
                                           init_from=request.POST.get("init_from", ""), **given)
    except ValueError as error:
        messages.error(request, f"Training not started: {error}")
    else:
        messages.success(request, f"Training run {run.pk} ({run.stage}) is queued for a worker; "
                                  f"it will register the model {run.model_name}.")
    return redirect("metrics:metric_list")


@staff_member_required
@require_POST
def training_cancel(request, pk):
    training.training_run_cancel(run=get_object_or_404(TrainingRun, pk=pk))
    return redirect("metrics:metric_list")


@staff_member_required
@offloaded
def training_curve(request, pk):
    from metrics.web import plots

    return HttpResponse(plots.loss_curve(get_object_or_404(TrainingRun, pk=pk)), content_type="image/svg+xml")


@login_required
def model_detail(request, name):
    """A metric model: what it is, how it was trained, and its card against the untrained baselines."""
    model = get_object_or_404(selectors.metric_models_usable_by(request.user).select_related("metric"), name=name)
    card = model.card or {}
    own = selectors.studies_scored_by(model, access.studies_visible_to(request.user))  # the viewer's only
    return render(request, "metrics/model_detail.html", {
        "model": model, "card": card, "warnings": selectors.card_warnings(card),
        "study_warnings": selectors.card_warnings({"below": selectors.baseline_shortfalls(own, model)}),
        "baselines": sorted({b for row in card.get("rows", []) for b in row.get("baselines", {})}),
        "run": TrainingRun.objects.filter(result=model).order_by("-pk").first(),
    })


@staff_member_required
@require_POST
def model_card_start(request, name):
    from metrics.tasks import model_card_build

    model = get_object_or_404(MetricModel, name=name)
    model_card_build.delay(model.pk)
    messages.success(request, f"The card of {model.name} is queued for a worker.")
    return redirect("metrics:model_detail", name=model.name)


@login_required
@require_POST
def run_start(request):
    """Queue a scoring run of a study's responses, or (``corpus``, as the prediction-powered section asks for
    the rest of a study's frame) of a whole corpus."""
    if request.POST.get("corpus"):
        study, corpus = None, get_object_or_404(corpora_visible_to(request.user),
                                                slug=request.POST.get("corpus"))
    else:
        study = get_object_or_404(access.studies_visible_to(request.user), slug=request.POST.get("study"))
        corpus = None
    model = get_object_or_404(selectors.metric_models_usable_by(request.user), name=request.POST.get("metric_model"))
    warnings = selectors.card_warnings(model.card)
    back = request.POST.get("next", "")
    if warnings and request.POST.get("card_acknowledged") != "on":  # say so before scoring, not after
        messages.warning(request, f"{model.name} scores below an untrained baseline on human judgments ("
                                  + "; ".join(warnings[:3]) + (f"; {len(warnings) - 3} more" if len(warnings) > 3 else "")
                                  + "). Nothing was scored: tick “I have read the model card” to score anyway.")
        return redirect(back if back and url_has_allowed_host_and_scheme(
            back, allowed_hosts={request.get_host()}, require_https=request.is_secure()) else "metrics:metric_list")
    try:
        services.scoring_run_create(metric_model=model, study=study, corpus=corpus,
                                    force=request.POST.get("force") == "on")
    except ValidationError as error:  # refused up front (a turn-level metric on a dialogue study): say why
        for field, problems in error.message_dict.items():
            messages.error(request, f"{field}: {'; '.join(problems)}")
        return redirect(back if back and url_has_allowed_host_and_scheme(
            back, allowed_hosts={request.get_host()}, require_https=request.is_secure()) else "metrics:metric_list")
    scope = study.title if study else f"corpus {getattr(corpus, 'slug', '')}"
    messages.success(request, f"Scoring {scope} with {model.name}: the run is queued for a worker.")
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()},
                                                require_https=request.is_secure()):
        return redirect(back)
    return redirect("metrics:metric_list")


@login_required
@require_POST
def run_retry(request, pk):
    """Queue a run that scores only what ``pk``'s scope still lacks (failed judge calls are asked again)."""
    run = get_object_or_404(visible_runs(request.user), pk=pk)
    try:
        again = services.scoring_run_retry(run=run)
    except ValidationError as error:
        messages.error(request, "Not retried: " + "; ".join(m for v in error.message_dict.values() for m in v))
    else:
        messages.success(request, f"Run {again.pk} queued: it scores only the unscored targets of run {run.pk}.")
    return redirect("metrics:metric_list")


@login_required
@require_POST
def run_cancel(request, pk):
    services.scoring_run_cancel(run=get_object_or_404(visible_runs(request.user), pk=pk))
    return redirect("metrics:metric_list")


@login_required
@require_POST
def run_rerun(request, pk):
    """Queue a stopped run again: it continues from the stored scores (a judge's cached answers are reused)."""
    try:
        run_jobs.scoring_run_rerun(run=get_object_or_404(visible_runs(request.user), pk=pk))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, "Queued again: it continues from the stored scores.")
    return redirect("metrics:metric_list")


@login_required
@require_POST
def bme_fill(request, slug):
    study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
    if not design_for(study).anchor_from_metric:  # only a design whose anchors come from a metric (BME)
        raise Http404("this study's reference values do not come from a metric")
    model = get_object_or_404(selectors.metric_models_usable_by(request.user), name=request.POST.get("metric_model"))
    try:
        mapped = services.bme_reference_values_fill(study=study, metric_model=model)
    except (ValidationError, StudyStateError) as error:
        messages.error(request, f"Reference values not set: {'; '.join(getattr(error, 'messages', [str(error)]))}")
    else:
        messages.success(request, f"{len(mapped)} reference values set from {model.name}.")
    return redirect("studies:study_detail", slug=slug)


def _report(request, slug, model):
    """(experiment, metric model, report over the fully scored conditions, conditions still to score).

    Conditions the model has not scored are left out of the correlations (a correlation with missing
    metric scores is not the one the paper reports) and listed so the page can offer to score them."""
    experiment = get_object_or_404(access.experiments_visible_to(request.user), slug=slug)
    metric_model = get_object_or_404(selectors.metric_models_usable_by(request.user), name=model)
    unscored = selectors.unscored_study_ids(experiment, metric_model)
    report = selectors.human_metric_page_results(experiment, metric_model, request.user, unscored=unscored,
                                                 parts=("report",))["report"]
    return experiment, metric_model, report, list(experiment.studies.filter(pk__in=unscored).order_by("id"))


@login_required
@offloaded
def human_metric_page(request, slug, model):
    """Reads the correlations, the judges' ranking and the baselines a worker stored for the ratings and
    scores in force (``selectors.human_metric_page_results``); while it computes them the page says so."""
    from metrics import tasks

    experiment = get_object_or_404(access.experiments_visible_to(request.user), slug=slug)
    metric_model = get_object_or_404(selectors.metric_models_usable_by(request.user), name=model)
    unscored_ids = selectors.unscored_study_ids(experiment, metric_model)
    unscored = list(experiment.studies.filter(pk__in=unscored_ids).order_by("id"))
    queued: list[bool] = []

    def queue() -> None:  # once per page, however many of its parts are missing
        if not queued:
            queued.append(True)
            try:
                tasks.human_metric_summaries.delay(experiment.pk, metric_model.pk, request.user.pk)
            except Exception:  # noqa: BLE001 - a broker that refuses it: the page still says "computing"
                logger.exception("human-vs-metric results of %s on %s not queued", metric_model.pk, experiment.pk)

    results = selectors.human_metric_page_results(experiment, metric_model, request.user, unscored=unscored_ids,
                                                  queue=queue)
    computing = any(value is None for value in results.values())
    report = results["report"] or {"metric_model": metric_model.name, "cells": [], "notes": []}
    running = {run.study_id: run for run in ScoringRun.objects.filter(
        metric_model=metric_model, study__in=unscored, status__in=[RunStatus.QUEUED, RunStatus.RUNNING])}
    conditions = list(dict.fromkeys(c["condition"] for c in report["cells"]))
    criteria = list(dict.fromkeys(c["criterion"] for c in report["cells"]))
    cells = {(c["condition"], c["criterion"]): c for c in report["cells"]}
    rows = [{"criterion": k, "cells": [cells.get((c, k)) for c in conditions]} for k in criteria]
    return render(request, "metrics/human_metric.html", {
        "pairwise": pairwise_human_metric(experiment.studies.exclude(pk__in=[s.pk for s in unscored]), metric_model),
        "judges": results["judges"] or [], "computing": computing,
        "experiment": experiment, "metric_model": metric_model, "report": report, "conditions": conditions,
        "rows": rows, "models": selectors.metric_models_usable_by(request.user), "card_warnings": selectors.card_warnings(metric_model.card),
        "study_warnings": selectors.card_warnings({"below": results["baselines"] or []}),
        "titles": dict(experiment.studies.values_list("slug", "title")),  # conditions by title, not slug
        "unscored": [{"study": study, "run": running.get(study.pk),
                      "problem": selectors.metric_model_fit_problem(metric_model, study=study)} for study in unscored],
        "ppi": ppi.ppi_report(experiment.studies.all(), metric_model)})  # human only beside prediction-powered


@login_required
@offloaded
def human_metric_csv(request, slug, model):
    """The human-vs-metric correlations as a tidy CSV: condition, criterion, level, method, r, p, CI, n; a
    label of a categorical or multi-label criterion adds its point-biserial r and AUC (level "label: ...")."""
    experiment, metric_model, report, _ = _report(request, slug, model)
    response = HttpResponse(exports.human_metric_csv(report), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{experiment.slug}-{metric_model.name}-human-vs-metric.csv"'
    return no_store(response)


@login_required
@offloaded
def human_metric_scatter(request, slug, model, condition, criterion):
    from metrics.web import plots

    experiment, metric_model, report, _ = _report(request, slug, model)
    cell = next((c for c in report["cells"] if c["condition"] == condition and c["criterion"] == criterion), None)
    if cell is None:
        raise Http404("no such cell")
    title = experiment.studies.filter(slug=condition).values_list("title", flat=True).first()  # not the slug
    colours = plots.system_colours(report["cells"])  # the whole report's systems: one colour each in every panel
    return HttpResponse(plots.scatter(cell, metric_model.name, title, colours=colours), content_type="image/svg+xml")
