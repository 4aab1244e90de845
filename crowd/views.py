"""The study's Crowd page (/studies/<slug>/crowd/): publications on MTurk and Prolific, cost and
balance before publishing, sync, review, bonuses, blocks, HITs, and the rater dashboard.

Thin: every POST names an action, the matching service does the work, and any refusal or platform
error comes back as a message on the page (never a 500)."""
from __future__ import annotations

from decimal import Decimal

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from crowd import prolific, selectors, services
from crowd.errors import PlatformError, PublishRefused
from crowd.models import Hit, Platform, Publication, WorkerAssignment
from studies.models import Assignment
from studies.rating.review import ReviewError

EXPERIMENT_LINK_LABEL = "One link for the whole experiment (Concord spreads new workers evenly over its conditions)"
SETTING_FIELDS = {
    Platform.MTURK: [
        ("reward", "Reward per assignment (USD)"), ("hits", "HITs"), ("assignments_per_hit", "Assignments per HIT"),
        ("lifetime_hours", "HIT lifetime (hours)"), ("duration_minutes", "Time allowed (minutes)"),
        ("auto_approve_days", "Auto-approve after (days)"), ("title", "Title"), ("description", "Description"),
        ("keywords", "Keywords"), ("masters", "Masters only"), ("min_approval_rate", "Minimum approval rate (%)"),
        ("min_approved", "Minimum approved HITs"), ("locales", "Locales (e.g. US, GB)"),
        ("planned_bonus_total", "Planned bonuses (USD)"), ("experiment_link", EXPERIMENT_LINK_LABEL)],
    Platform.PROLIFIC: [
        ("reward_cents", "Reward (cents)"), ("places", "Places"), ("estimated_minutes", "Estimated minutes"),
        ("max_minutes", "Maximum minutes"), ("devices", "Devices (desktop, tablet, mobile)"), ("title", "Title"),
        ("description", "Description"), ("completion_code", "Completion code"),
        ("screened_out_code", "Screened-out code (optional)"), ("planned_bonus_total", "Planned bonuses"),
        ("block_other_conditions", "Block the experiment's other conditions' participants"),
        ("experiment_link", EXPERIMENT_LINK_LABEL)],
}
BOOLEAN_FIELDS = {"masters", "block_other_conditions", "experiment_link"}


def _errors_text(error: ValidationError) -> str:
    if hasattr(error, "error_dict"):
        return "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in error.message_dict.items())
    return " ".join(error.messages)


def _study(request, slug):
    return get_object_or_404(selectors.studies_managed_by(request.user), slug=slug)


@login_required
def crowd_page(request, slug):
    study = _study(request, slug)
    publications = selectors.publications_of(study)
    panels = []
    for publication in publications:
        values = services.effective_settings(publication)
        fields = [{"name": name, "label": label, "value": values.get(name),
                   "boolean": name in BOOLEAN_FIELDS,
                   "text": ", ".join(values[name]) if isinstance(values.get(name), list) else values.get(name)}
                  for name, label in SETTING_FIELDS[publication.platform]]
        panels.append({"publication": publication, "fields": fields, "estimate": services.publication_estimate(publication),
                       "problems": services.publish_problems(publication, confirm_production=True),
                       "hits": list(publication.hits.all()), "submitted": services.submitted_records(publication),
                       "balance": request.session.pop(f"crowd-balance-{publication.pk}", None)})
    existing = {(p.platform, p.sandbox) for p in publications}
    choices = [(key, label) for key, label in (("mturk-sandbox", "MTurk sandbox"), ("mturk", "MTurk production"),
                                               ("prolific", "Prolific"))
               if (key.split("-")[0], key.endswith("sandbox")) not in existing]
    return render(request, "crowd/study_crowd.html", {
        "study": study, "panels": panels, "choices": choices, "dashboard": selectors.dashboard(study),
        "rejection_categories": prolific.REJECTION_CATEGORIES,
    })


def _publication(request, study) -> Publication:
    return get_object_or_404(Publication.objects.select_related("study__experiment"), study=study,
                             pk=request.POST.get("publication") or 0)


def _records(request, publication) -> list[WorkerAssignment]:
    if request.POST.get("all_submitted"):
        return services.submitted_records(publication)
    ids = [int(i) for i in request.POST.getlist("record") if i.isdigit()]
    return list(publication.worker_assignments.filter(pk__in=ids).select_related("assignment"))


def _settings_from(request, platform: str) -> dict:
    values = {}
    for name, _ in SETTING_FIELDS[platform]:
        if name in BOOLEAN_FIELDS:
            values[name] = bool(request.POST.get(name))
        elif name in request.POST:
            values[name] = request.POST[name]
    return values


def _do(request, study, action: str) -> str:
    """Run one action; return the success message (errors raise)."""
    if action == "create":
        key = request.POST.get("target", "")
        platform, sandbox = key.split("-")[0], key.endswith("-sandbox")
        services.publication_configure(study=study, platform=platform, sandbox=sandbox)
        return "Publication added: set it up below."
    publication = _publication(request, study)
    if action == "configure":
        services.publication_configure(study=study, platform=publication.platform, sandbox=publication.sandbox,
                                       settings=_settings_from(request, publication.platform))
        return "Settings saved."
    if action == "balance":
        balance = services.mturk_balance(publication=publication)
        request.session[f"crowd-balance-{publication.pk}"] = str(balance)
        return f"MTurk balance: ${balance}."
    if action == "publish":
        confirm = bool(request.POST.get("confirm_production"))
        if publication.platform == Platform.MTURK:
            services.mturk_publish(publication=publication, confirm_production=confirm)
            return f"Published as {publication.hits.count()} HIT(s)."
        services.prolific_publish(publication=publication, confirm_production=confirm,
                                  publish=not request.POST.get("draft_only"))
        return "Prolific study created" + ("" if request.POST.get("draft_only") else " and published") + "."
    if action == "sync":
        return f"Synced: {services.publication_sync(publication=publication)}."
    if action == "review" and request.POST.get("checks") in ("passed", "failed"):
        outcome = services.assignments_review_checked(
            publication=publication, passed=request.POST["checks"] == "passed", feedback=request.POST.get("feedback", ""),
            rejection_category=request.POST.get("rejection_category", ""))
        if outcome.failed:
            raise PublishRefused(f"review: {outcome}")
        return f"Review ({'approved those who passed' if request.POST['checks'] == 'passed' else 'rejected those who failed'} the checks): {outcome}."
    if action == "review":
        outcome = services.assignments_review(
            publication=publication, records=_records(request, publication), decision=request.POST.get("decision", ""),
            feedback=request.POST.get("feedback", ""), rejection_category=request.POST.get("rejection_category", ""))
        if outcome.failed:
            raise PublishRefused(f"review: {outcome}")
        return f"Review: {outcome}."
    if action == "bonus":
        assignment = get_object_or_404(Assignment, pk=request.POST.get("assignment") or 0, study=study)
        bonus = services.bonus_create(publication=publication, assignment=assignment, amount=request.POST.get("amount"),
                                      reason=request.POST.get("reason", ""), user=request.user)
        services.bonuses_send(bonuses=[bonus])
        return f"Bonus of {bonus.amount} sent."
    if action in ("block", "unblock"):
        service = services.worker_block if action == "block" else services.worker_unblock
        service(worker_id=request.POST.get("worker_id", ""), reason=request.POST.get("reason", ""),
                sandbox=publication.sandbox)
        return f"Worker {action}ed."
    if action == "notify":
        failures = services.workers_notify(worker_ids=request.POST.get("worker_ids", "").replace(",", " ").split(),
                                           subject=request.POST.get("subject", ""),
                                           message=request.POST.get("message", ""), sandbox=publication.sandbox)
        return "Message sent" + (f"; {len(failures)} failed" if failures else "") + "."
    if action == "extend":
        hit = get_object_or_404(Hit, publication=publication, pk=request.POST.get("hit") or 0)
        services.hit_extend(hit=hit, hours=_int(request.POST.get("hours")),
                            additional_assignments=_int(request.POST.get("additional_assignments")))
        return f"HIT {hit.hit_id} extended."
    if action == "expire":
        return f"{services.hits_expire(publication=publication)} HIT(s) expired."
    if action == "transition":
        services.prolific_transition(publication=publication, action=request.POST.get("transition", ""))
        return "Prolific study: " + request.POST.get("transition", "").lower() + "."
    raise ValidationError({"action": f"unknown action {action}"})


def _int(value) -> int:
    try:
        return int(Decimal(value or 0))
    except ArithmeticError:
        raise ValidationError({"number": f"{value!r} is not a number"}) from None


@login_required
@require_POST
def crowd_action(request, slug, action):
    study = _study(request, slug)
    try:
        messages.success(request, _do(request, study, action))
    except ValidationError as error:
        messages.error(request, _errors_text(error))
    except (PlatformError, PublishRefused, ReviewError) as error:
        messages.error(request, str(error))
    return redirect("crowd:study_crowd", slug=study.slug)
