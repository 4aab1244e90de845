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

from crowd import bonuses, publishing, rater_decisions, reviews, selectors, sync, workers
from crowd.errors import PlatformError, PublishRefused
from crowd.models import Hit, Publication, WorkerAssignment
from crowd.platforms import PLATFORMS, mturk, platform_of, prolific
from studies.models import Assignment
from studies.rating.review import ReviewError

EXPERIMENT_LINK_LABEL = "One link for the whole experiment (Concord spreads new workers evenly over its conditions)"
BOOLEAN_FIELDS = {"masters", "block_other_conditions", "experiment_link"}


def setting_fields(publication: Publication) -> list[tuple[str, str]]:
    """(name, label) of the settings the page offers: the platform's, then the experiment link."""
    return [*platform_of(publication).setting_fields, ("experiment_link", EXPERIMENT_LINK_LABEL)]


def _errors_text(error: ValidationError) -> str:
    if hasattr(error, "error_dict"):
        return "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in error.message_dict.items())
    return " ".join(error.messages)


def _study(request, slug):
    return get_object_or_404(selectors.studies_managed_by(request.user), slug=slug)


def _new_targets(existing: set[tuple[str, bool]]) -> list[tuple[str, str]]:
    """(key, label) of the publications a study does not have yet: each platform's sandbox and
    production where it has a sandbox, else the platform (``create`` reads the key)."""
    choices = []
    for p in PLATFORMS.values():
        targets = [(f"{p.key}-sandbox", True, f"{p.label} sandbox"), (p.key, False, f"{p.label} production")] \
            if p.has_sandbox else [(p.key, False, p.label)]
        choices += [(key, label) for key, sandbox, label in targets if (p.key, sandbox) not in existing]
    return choices


@login_required
def crowd_page(request, slug):
    study = _study(request, slug)
    publications = selectors.publications_of(study)
    panels = []
    for publication in publications:
        values = publishing.effective_settings(publication)
        fields = [{"name": name, "label": label, "value": values.get(name),
                   "boolean": name in BOOLEAN_FIELDS,
                   "text": ", ".join(values[name]) if isinstance(values.get(name), list) else values.get(name)}
                  for name, label in setting_fields(publication)]
        panels.append({"publication": publication, "platform": platform_of(publication), "fields": fields,
                       "estimate": publishing.publication_estimate(publication),
                       "problems": publishing.publish_problems(publication, confirm_production=True),
                       "hits": list(publication.hits.all()), "submitted": reviews.submitted_records(publication),
                       "balance": request.session.pop(f"crowd-balance-{publication.pk}", None)})
    choices = _new_targets({(p.platform, p.sandbox) for p in publications})
    dashboard = selectors.dashboard(study)
    for row in dashboard["rows"]:  # a row's review form asks what its platform needs
        row["platform"] = platform_of(row["record"].publication) if row["record"] else None
    return render(request, "crowd/study_crowd.html", {
        "study": study, "panels": panels, "choices": choices, "dashboard": dashboard,
    })


def _publication(request, study) -> Publication:
    return get_object_or_404(Publication.objects.select_related("study__experiment"), study=study,
                             pk=request.POST.get("publication") or 0)


def _records(request, publication) -> list[WorkerAssignment]:
    if request.POST.get("all_submitted"):
        return reviews.submitted_records(publication)
    ids = [int(i) for i in request.POST.getlist("record") if i.isascii() and i.isdigit() and len(i) <= 18]
    return list(publication.worker_assignments.filter(pk__in=ids).select_related("assignment"))


def _settings_from(request, publication: Publication) -> dict:
    values = {}
    for name, _ in setting_fields(publication):
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
        publishing.publication_configure(study=study, platform=platform, sandbox=sandbox)
        return "Publication added: set it up below."
    publication = _publication(request, study)
    if action == "configure":
        publishing.publication_configure(study=study, platform=publication.platform, sandbox=publication.sandbox,
                                       settings=_settings_from(request, publication))
        return "Settings saved."
    if action == "balance":
        balance = platform_of(publication).balance(publication=publication)
        request.session[f"crowd-balance-{publication.pk}"] = str(balance)
        return f"{platform_of(publication).label} balance: ${balance}."
    if action == "publish":
        publication = publishing.publication_publish(publication=publication,
                                                   confirm_production=bool(request.POST.get("confirm_production")),
                                                   draft_only=bool(request.POST.get("draft_only")))
        summary = platform_of(publication).published_summary(publication)
        return f"{summary[:1].upper()}{summary[1:]}."
    if action == "sync":
        return f"Synced: {sync.publication_sync(publication=publication)}."
    if action == "review" and request.POST.get("checks") in ("passed", "failed"):
        outcome = reviews.assignments_review_checked(
            publication=publication, passed=request.POST["checks"] == "passed", feedback=request.POST.get("feedback", ""),
            rejection_category=request.POST.get("rejection_category", ""))
        if outcome.failed:
            raise PublishRefused(f"review: {outcome}")
        return f"Review ({'approved those who passed' if request.POST['checks'] == 'passed' else 'rejected those who failed'} the checks): {outcome}."
    if action == "review":
        outcome = reviews.assignments_review(
            publication=publication, records=_records(request, publication), decision=request.POST.get("decision", ""),
            feedback=request.POST.get("feedback", ""), rejection_category=request.POST.get("rejection_category", ""))
        if outcome.failed:
            raise PublishRefused(f"review: {outcome}")
        return f"Review: {outcome}."
    if action == "bonus":
        assignment = get_object_or_404(Assignment, pk=request.POST.get("assignment") or 0, study=study)
        bonus = bonuses.bonus_create(publication=publication, assignment=assignment, amount=request.POST.get("amount"),
                                      reason=request.POST.get("reason", ""), user=request.user)
        bonuses.bonuses_send(bonuses=[bonus])
        return f"Bonus of {bonus.amount} sent."
    if action in ("block", "unblock"):
        service = workers.worker_block if action == "block" else workers.worker_unblock
        service(publication=publication, worker_id=request.POST.get("worker_id", ""),
                reason=request.POST.get("reason", ""), user=request.user)
        return f"Worker {action}ed."
    if action == "notify":
        failures = workers.workers_notify(worker_ids=request.POST.get("worker_ids", "").replace(",", " ").split(),
                                           subject=request.POST.get("subject", ""),
                                           message=request.POST.get("message", ""), publication=publication)
        return "Message sent" + (f"; {len(failures)} failed" if failures else "") + "."
    if action == "extend":
        hit = get_object_or_404(Hit, publication=publication, pk=request.POST.get("hit") or 0)
        mturk.hit_extend(hit=hit, hours=_int(request.POST.get("hours")),
                            additional_assignments=_int(request.POST.get("additional_assignments")))
        return f"HIT {hit.hit_id} extended."
    if action == "expire":
        return f"{mturk.hits_expire(publication=publication)} HIT(s) expired."
    if action == "transition":
        prolific.prolific_transition(publication=publication, action=request.POST.get("transition", ""))
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


@login_required
@require_POST
def rater_decide(request, slug, rater):
    """Approve, reject or bonus one rater from the review queue or the rater's page; the
    platform first, then the decision (``crowd.rater_decisions``). Back to the page the form was on."""
    study = _study(request, slug)
    assignment = get_object_or_404(Assignment, study=study, rater_id=rater)
    try:
        rater_decisions.rater_platform_decide(
            assignment=assignment, kind=request.POST.get("kind", ""), reason=request.POST.get("reason", ""),
            amount=request.POST.get("amount"), rejection_category=request.POST.get("rejection_category", ""),
            user=request.user)
        messages.success(request, "Sent to the platform and recorded.")
    except ValidationError as error:
        messages.error(request, _errors_text(error))
    except (PlatformError, ReviewError) as error:
        messages.error(request, str(error))
    if request.POST.get("next") == "queue":
        return redirect("studies:study_review", slug=study.slug)
    return redirect("studies:study_rater", slug=study.slug, rater=rater)
