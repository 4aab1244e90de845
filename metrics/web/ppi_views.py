"""Human + metric estimates on the web: the report's section (registered into studies' report from
MetricsConfig.ready), the interval figure, CSV/XLSX downloads, and the button that draws more items."""
from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect
from django.template.loader import render_to_string
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from metrics.ppi import estimates as ppi
from metrics.scoring import exports
from metrics.scoring import selectors as metric_selectors
from studies import access
from studies.authoring.item_draws import study_items_extend
from studies.compute_pool import offloaded
from studies.errors import StudyStateError
from studies.models import Study
from studies.reports.exporting import no_store


def number(raw: str | None, *, name: str, positive: bool = True) -> float | None:
    """A form field as a float (None when empty); ValidationError naming the field otherwise."""
    if raw is None or not str(raw).strip():
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValidationError({name: f"{raw!r} is not a number"}) from None
    if positive and not value > 0:
        raise ValidationError({name: f"must be above 0, got {raw}"})
    return value


def report_section(request, studies, target):
    """The report's "Human + metric estimates" section: nothing to show without a metric scored on the study."""
    models = metric_selectors.metric_models_scored_on(studies, request.user)
    if not models:
        return None
    chosen = request.GET.get("ppi_metric")
    best = metric_selectors.best_ranked_model(studies, models) if len(models) > 1 else None
    model = next((m for m in models if m.name == chosen), best or models[0])
    try:
        width = number(request.GET.get("ppi_width"), name="ppi_width")
        error = None
    except ValidationError as problem:
        width, error = None, "; ".join(f"{k}: {' '.join(v)}" for k, v in problem.message_dict.items())
    combine = [m for m in models if m != model] if request.GET.get("ppi_combine") == "1" else []
    report = ppi.ppi_report(studies, model, target_width=width, combine=combine)
    experiment = target if not isinstance(target, Study) else target.experiment
    params = {**({"study": target.slug} if isinstance(target, Study) else {}), **({"width": width} if width else {})}
    return render_to_string("metrics/_ppi_section.html", {
        "ppi": report, "models": models, "model": model, "best": best, "combine": bool(combine), "width": width, "width_error": error, "experiment": experiment,
        "query": "?" + urlencode(params) if params else "",
    }, request=request)


def _scope(request, slug, model):
    experiment = get_object_or_404(access.experiments_visible_to(request.user), slug=slug)
    metric_model = get_object_or_404(metric_selectors.metric_models_usable_by(request.user), name=model)
    studies = experiment.studies.all()
    if request.GET.get("study"):
        studies = studies.filter(slug=request.GET["study"])
    width = number(request.GET.get("width"), name="width")
    alpha = number(request.GET.get("alpha"), name="alpha") or ppi.ALPHA
    if not 0 < alpha < 1:
        raise ValidationError({"alpha": f"must be between 0 and 1, got {alpha}"})
    combine = metric_selectors.combined_models(request.user, request.GET.get("combine"))
    return experiment, metric_model, ppi.ppi_report(studies, metric_model, alpha=alpha, target_width=width,
                                                    combine=combine)


def _bad_request(error: ValidationError) -> HttpResponseBadRequest:
    return HttpResponseBadRequest("; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items()),
                                  content_type="text/plain; charset=utf-8")


@login_required
@offloaded
def ppi_download(request, slug, model, export_format):
    """CSV (the system estimates) or XLSX (every table, one sheet each)."""
    if export_format not in ("csv", "xlsx"):
        raise Http404("prediction-powered estimates download as .csv or .xlsx")
    try:
        experiment, metric_model, report = _scope(request, slug, model)
    except ValidationError as error:
        return _bad_request(error)
    response = HttpResponse(exports.ppi_file(report, export_format), content_type=exports.CONTENT_TYPES[export_format])
    response["Content-Disposition"] = f'attachment; filename="{experiment.slug}-{metric_model.name}-prediction-powered.{export_format}"'
    return no_store(response)


@login_required
@offloaded
def ppi_figure(request, slug, model, condition, criterion):
    from metrics.ppi import plots as ppi_plots

    try:
        _, metric_model, report = _scope(request, slug, model)
    except ValidationError as error:
        return _bad_request(error)
    study = next((s for s in report["studies"] if s["slug"] == condition), None)
    cell = next((c for c in (study or {}).get("criteria", []) if c["criterion"] == criterion), None)
    if cell is None or study is None:
        raise Http404("no such estimate")
    response = HttpResponse(ppi_plots.intervals(cell, study["title"], metric_model.name), content_type="image/svg+xml")
    response["Cache-Control"] = "private, max-age=60"
    return response


@login_required
@require_POST
def ppi_extend(request, slug):
    """Draw ``count`` more items at random from the study's frame (the planner's figure, or the researcher's)."""
    study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
    try:
        count = int(request.POST.get("count", ""))
        expected = int(request.POST.get("expected_items", ""))
    except ValueError:
        messages.error(request, "Items not added: count and expected_items must be whole numbers.")
    else:
        try:
            added = study_items_extend(study=study, count=count, expected_items=expected)
        except (ValidationError, StudyStateError) as error:
            messages.error(request, f"Items not added: {'; '.join(getattr(error, 'messages', [str(error)]))}")
        else:
            messages.success(request, f"{added} items drawn at random from {study.item_draw.get('corpus_slug')} "
                                      f"and added to {study.title}; the next raters get them first.")
    back = request.POST.get("next", "")
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()},
                                                require_https=request.is_secure()):
        return redirect(back)
    return redirect("studies:study_detail", slug=slug)
