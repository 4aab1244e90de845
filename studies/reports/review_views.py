"""Rater review pages: a page per rater of a study (the evidence and every answer) and the
study's review queue; keep / exclude decisions and their reversal. Approve, reject and bonus go to the
platform through the crowd app's view (``crowd.views.rater_decide``), named by URL in the templates.
Thin: the selectors compute, ``studies.rating.decisions`` writes. Owners, collaborators and staff only
(``studies_visible_to``); anyone else gets a 404."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from studies import access
from studies.compute_pool import offloaded
from studies.errors import errors_text
from studies.models import RaterDecision
from studies.rating import decisions
from studies.reports import aggregated_labels, browser_selectors, rater_evidence, review_queue
from studies.reports.exporting import raw_ids_requested


def _study(request, slug):
    return get_object_or_404(access.studies_visible_to(request.user), slug=slug)


def _back(request, study, rater_id=None):
    if request.POST.get("next") == "queue" or rater_id is None:
        return redirect("studies:study_review", slug=study.slug)
    return redirect("studies:study_rater", slug=study.slug, rater=rater_id)


@login_required
@offloaded
def rater_page(request, slug, rater):
    study = _study(request, slug)
    raw_ids = raw_ids_requested(request, [study.experiment_id])
    evidence = rater_evidence.rater_evidence(study, rater, raw_ids=raw_ids)
    if evidence is None:
        raise Http404("no such rater in this study")
    page, rows = browser_selectors.item_page(study, rater=rater, page=request.GET.get("page", 1), raw_ids=raw_ids,
                                             flags={})
    return render(request, "reports/rater.html", {
        "study": study, "evidence": evidence, "rater_id": rater, "page": page, "rows": rows, "raw_ids": raw_ids,
        "kinds": RaterDecision.Kind, "limits": rater_evidence.thresholds(),
    })


@login_required
@offloaded
def review_page(request, slug):
    study = _study(request, slug)
    raw_ids = raw_ids_requested(request, [study.experiment_id])
    return render(request, "reports/review_queue.html", {
        "study": study, "raters": review_queue.flagged_raters(study, raw_ids=raw_ids),
        "items": review_queue.disputed_items(study), "raw_ids": raw_ids,
        "disputed_scope": review_queue.disputed_scope(study, raw_ids=raw_ids),
        "aggregation_blocks": [{"study": None, "criteria": aggregated_labels.report_criteria(study, raw_ids=raw_ids)}],
        "exclusions": rater_evidence.exclusions(access.studies_visible_to(request.user).filter(pk=study.pk)),
    })


@login_required
@require_POST
def rater_decide(request, slug, rater):
    """Keep or exclude (the verdicts Concord holds); platform decisions are the crowd app's."""
    study = _study(request, slug)
    assignment = rater_evidence.rater_assignment(study, rater)
    if assignment is None:
        raise Http404("no such rater in this study")
    kind = request.POST.get("kind", "")
    try:
        if kind not in decisions.VERDICTS:
            raise ValidationError({"kind": "keep or exclude here; approve, reject and bonus go through the platform"})
        decisions.rater_decision_record(assignment=assignment, kind=kind, reason=request.POST.get("reason", ""),
                                        user=request.user)
        messages.success(request, "Decision recorded." if kind == "keep" else
                         "Excluded from every report, export figure and the live panel.")
    except ValidationError as error:
        for text in errors_text(error):
            messages.error(request, text)
    return _back(request, study, rater)


@login_required
@require_POST
def decision_revert(request, slug, decision):
    study = _study(request, slug)
    found = get_object_or_404(RaterDecision.objects.select_related("assignment"), pk=decision,
                              assignment__study=study)
    try:
        decisions.rater_decision_revert(decision=found, user=request.user)
        messages.success(request, "Decision reverted.")
    except ValidationError as error:
        for text in errors_text(error):
            messages.error(request, text)
    return _back(request, study, found.assignment.rater_id)
