"""Server-rendered researcher pages: experiments, creating a study, the study page (progress, live reliability, invites, rater settings, publish/pause/close). Thin: forms in, services and selectors do the work."""
from __future__ import annotations

import logging
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from studies import access
from studies.authoring import editing, planning, rule_rows
from studies.authoring import selectors as study_selectors
from studies.authoring import services as authoring
from studies.authoring.forms import ExperimentForm, InviteForm, ItemsBuildForm, StudyForm
from studies.compute_pool import offloaded
from studies.corpora import selectors as corpus_selectors
from studies.designs import design_for, unit_for
from studies.errors import StudyStateError, errors_text
from studies.models import Study
from studies.onboarding import selectors as onboarding_selectors
from studies.rating import allocation, check_rules, closing, platforms
from studies.rating import invites as invite_links
from studies.rating.links import study_entry_path
from studies.reports import live_selectors, live_services, rater_evidence
from studies.reports.check_selectors import study_checks_summary
from studies.reports.exporting import EXPORT_FORMATS

logger = logging.getLogger(__name__)
LIVE_FORM_LABELS = [("ICC(C,k)", "ICC-C = ICC(C,k)"), ("ICC(A,k)", "ICC-A = ICC(A,k)")]


@login_required
def experiment_list(request):
    experiments = list(access.experiments_visible_to(request.user).prefetch_related("studies"))
    studies = [s for e in experiments for s in e.studies.all()]
    progress = study_selectors.studies_progress(studies)
    for study in studies:
        study.progress = progress[study.pk]
    for experiment in experiments:
        if not experiment.is_benchmark:
            experiment.link = {**allocation.experiment_link(experiment), "url": request.build_absolute_uri(
                reverse("raters:experiment_entry", args=[experiment.slug]))}
    return render(request, "studies/experiment_list.html", {"experiments": experiments, "form": ExperimentForm()})


@login_required
@require_POST
def experiment_create(request):
    form = ExperimentForm(request.POST)
    if form.is_valid():
        experiment = authoring.experiment_create(owner=request.user, **form.cleaned_data)
        messages.success(request, f"Experiment “{experiment.title}” created. Add its conditions (studies).")
        return redirect("studies:study_create", experiment=experiment.slug)
    messages.error(request, "The experiment needs a title.")
    return redirect("studies:experiment_list")


@login_required
def study_create(request, experiment):
    experiment = get_object_or_404(access.experiments_visible_to(request.user), slug=experiment)
    form = StudyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():  # the draft and its other settings, or nothing
                study = authoring.study_create(
                    experiment=experiment, title=form.cleaned_data["title"], design=form.cleaned_data["design"],
                    design_config=form.design_config(), criteria=form.criteria_specs(),
                    raters_per_item=form.cleaned_data["raters_per_item"],
                    items_per_assignment=form.cleaned_data["items_per_assignment"],
                    instructions=form.cleaned_data["instructions"], platform=form.cleaned_data["platform"],
                    unit=form.cleaned_data["unit"], unit_config=form.unit_config(),
                )
                editing.study_update(study=study, values=form.settings_values())
        except ValidationError as error:
            for text in errors_text(error):
                form.add_error(None, text)
        else:
            messages.success(request, f"Study “{study.title}” created as a draft. Now choose its items.")
            return redirect("studies:study_detail", slug=study.slug)
    return render(request, "studies/study_create.html", {"experiment": experiment, "form": form})


def _prolific_code_missing(study: Study) -> bool:
    return study.platform == Study.Platform.PROLIFIC and not platforms.prolific_completion_code(study.platform_config or {})


@login_required
def study_detail(request, slug):
    study = get_object_or_404(access.studies_visible_to(request.user).prefetch_related("criteria"), slug=slug)
    corpora = corpus_selectors.item_corpora_visible_to(request.user)
    build_form = ItemsBuildForm(request.POST or None, corpora=corpora)
    if request.method == "POST" and build_form.is_valid():
        data = build_form.cleaned_data
        corpus = get_object_or_404(corpora, slug=data["corpus"]) if data["corpus"] else None
        try:
            count = authoring.study_items_build(
                study=study, corpus=corpus,
                systems=[s.strip() for s in data["systems"].split(",") if s.strip()] or None,
                reference_system=data["reference_system"] or None, limit=data["limit"],
            )
        except ValidationError as error:
            for text in errors_text(error):
                build_form.add_error(None, text)
        except StudyStateError as error:
            build_form.add_error(None, str(error))
        else:
            messages.success(request, f"{count} items built" + (f" from {corpus.slug}." if corpus else "."))
            return redirect("studies:study_detail", slug=study.slug)
    base = request.build_absolute_uri(study_entry_path(study))
    invites = [{"invite": invite, "url": f"{base}?{urlencode({'invite': invite.token})}"}
               for invite in study_selectors.study_invites(study)]
    prolific_parameters = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    experiment_url = request.build_absolute_uri(reverse("raters:experiment_entry", args=[study.experiment.slug]))
    design = design_for(study)
    context = {
        "rater_links": {
            "mturk": base,
            "prolific": f"{base}?{prolific_parameters}",
        },
        "experiment_link": {**allocation.experiment_link(study.experiment), "url": experiment_url,
                            "prolific": f"{experiment_url}?{prolific_parameters}"},
        "closing": allocation.study_closing(study),
        "invites": invites, "invite_form": InviteForm(), "invite_days": invite_links.INVITE_DAYS_DEFAULT,
        "study": study, "progress": study_selectors.study_progress(study), "build_form": build_form,
        "design": design, "design_settings": design.study_settings_summary(study),
        "items": study.items.select_related("conversation").order_by("position")[:5],
        "export_formats": EXPORT_FORMATS,
        "checks": study_checks_summary(study),
        "practice": onboarding_selectors.study_practice_panel(study),
        # a practice item written as one conversation judged whole (a dialogue, a chat's transcript) has no responses
        "practice_whole": check_rules.practice_judges_the_context(study),
        "practice_context_label": unit_for(study).practice_context_label,
        "practice_form": (practice_form := request.session.pop(f"practice-form-{study.pk}", {})),  # a refused form
        # the hand-written practice item's expected answer, by controls (rule_rows): its choices and rows
        "rule_choices": rule_rows.rule_choices(study),
        "rule_rows": practice_form.get("rule_rows") or rule_rows.rows_empty(),
        "live_config": live_selectors.live_config(study),  # the figures come from study_live_panel
        "plan": planning.pay_plan(study), "locked": editing.structure_lock_reason(study),
        "prolific_code_missing": _prolific_code_missing(study),
        "collaborators": list(study.experiment.collaborators.order_by("username")),
        "may_share": editing.may_manage_collaborators(request.user, study.experiment),
    }
    context["live_form"] = LiveConfigForm(initial=context["live_config"])
    return render(request, "studies/study_detail.html", context)


@login_required
@offloaded
def study_live_panel(request, slug):
    """The live-reliability panel, computed from raters' answers in a request of its own (the study
    page fetches it, ``?fragment=1``), so that the page holding publish, pause and close never fails
    because of what raters answered. Should the computation still fail, the panel says so and the
    error is logged; it is not answered with a 500."""
    study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
    try:
        live = live_selectors.live_reliability(study)
    except Exception:  # the panel must not turn raters' answers into a server error; the log keeps the cause
        logger.exception("live reliability of study %s could not be computed", study.slug)
        live = {"failed": True, "config": live_selectors.live_config(study)}
    template = "studies/_live_panel.html" if request.GET.get("fragment") == "1" else "studies/live_panel.html"
    return render(request, template, {"study": study, "live": live, "live_forms": LIVE_FORM_LABELS,
                                      "exclusions": rater_evidence.exclusions(Study.objects.filter(pk=study.pk))})


class LiveConfigForm(forms.Form):
    target = forms.FloatField(min_value=0.01, max_value=0.99, help_text="reliability to reach, e.g. 0.8")
    form = forms.ChoiceField(choices=[(f, f) for f in live_services.LIVE_FORMS], label="ICC")
    close_when_reached = forms.BooleanField(required=False,
                                            label="Close the study when the lower 95% bound reaches the target")


@login_required
@require_POST
def study_live_config(request, slug):
    """Save the live-reliability target, ICC and close rule; the form's errors go back as messages."""
    study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
    form = LiveConfigForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {'; '.join(errors)}")
        return redirect(f"{reverse('studies:study_detail', args=[study.slug])}#live")
    try:
        study = live_services.study_live_config_set(study=study, **form.cleaned_data)
    except ValidationError as error:
        for text in errors_text(error):
            messages.error(request, text)
    else:
        messages.success(request, "Live reliability settings saved.")
        if live_services.study_close_if_reliable(study=study):
            messages.success(request, "The target is reached: the study is now closed.")
    return redirect(f"{reverse('studies:study_detail', args=[study.slug])}#live")


@login_required
@require_POST
def invite_create(request, slug):
    """"Make link": a new single-use invitation with an expiry (default 14 days)."""
    study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
    form = InviteForm(request.POST)
    if not form.is_valid():
        messages.error(request, "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
        return redirect(f"{reverse('studies:study_detail', args=[slug])}#rater-links")
    count = form.cleaned_data.get("count") or 1
    try:
        made = invite_links.invites_create(study=study, count=count, label=form.cleaned_data["label"],  # all or none
                                           expires_in_days=form.cleaned_data["expires_in_days"],
                                           created_by=request.user)
    except ValidationError as error:
        messages.error(request, "; ".join(errors_text(error)))
    else:
        invite = made[-1]
        what = "Invitation link made" if count == 1 else f"{count} invitation links made"
        messages.success(request, f"{what}{f' for {invite.label}' if invite.label else ''}; each works once, "
                                  f"until {invite.expires_at:%Y-%m-%d %H:%M} UTC.")
    return redirect(f"{reverse('studies:study_detail', args=[slug])}#rater-links")


@login_required
@require_POST
def study_rater_settings(request, slug):
    """Prolific codes, completion address, reward currency, time limit and closing time (platform_config)."""
    study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
    try:
        authoring.study_rater_settings_set(study=study, values={k: request.POST.get(k, "")
                                                               for k in authoring.RATER_SETTINGS})
    except ValidationError as error:
        for text in errors_text(error):
            messages.error(request, f"{text} (nothing was changed)")
    else:
        messages.success(request, "Rater settings saved.")
    return redirect(f"{reverse('studies:study_detail', args=[slug])}#rater-settings")


@login_required
@require_POST
def study_transition(request, slug, action):
    study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
    service = {"publish": authoring.study_publish, "close": closing.study_close}.get(action)
    if service is None:
        return redirect("studies:study_detail", slug=slug)
    try:
        done = service(study=study)
    except StudyStateError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Study {'published' if action == 'publish' else 'closed'}.")
        if dropped := getattr(done, "shadowed_dropped", 0):
            messages.info(request, f"{dropped} item(s) showing a check or practice item's conversation left the "
                                   "rated items: raters meet each of those conversations once, as the check or practice.")
        if action == "publish" and _prolific_code_missing(study):
            messages.warning(request, "Published without a Prolific completion code: set it under Raters → "
                                      "Completion and time before you publish the study on Prolific.")
    return redirect("studies:study_detail", slug=slug)
