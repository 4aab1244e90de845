"""Researcher pages for the study workflow: edit every setting, duplicate, delete a draft, re-open,
pause and resume, share the experiment, and browse items with their ratings. Thin: the forms
collect, ``studies.authoring.editing`` writes, ``studies.reports.browser_selectors`` and ``studies.authoring.planning`` read."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST

from studies import access
from studies.authoring import builder, editing, planning
from studies.authoring.forms import CollaboratorForm, StudyDuplicateForm, StudyForm, study_form_initial
from studies.errors import StudyStateError, errors_text
from studies.reports import browser_selectors
from studies.reports.exporting import raw_ids_requested


def _study(request, slug):
    return get_object_or_404(access.studies_visible_to(request.user).prefetch_related("criteria"), slug=slug)


@login_required
def study_edit(request, slug):
    """Every setting in one form. The design, its settings, the criteria and the platform are
    disabled (with the reason beside them) once the study is published or a rater has started."""
    study = _study(request, slug)
    locked = editing.structure_lock_reason(study)
    form = StudyForm(request.POST or None, initial=study_form_initial(study), locked=locked)
    if request.method == "POST" and form.is_valid():
        try:
            values = {**form.structure_values(), **form.settings_values()}
            if values.get("design") == study.design and "design_config" in values:
                # Settings the form does not show (a tuple design's seed and factor, BME's anchor range)
                # stay as they are: the form's defaults for them would otherwise reset them.
                values["design_config"] = {**(study.design_config or {}), **values["design_config"]}
            study, notes = editing.study_update(study=study, values=values)
        except ValidationError as error:
            for text in errors_text(error):
                form.add_error(None, text)
        else:
            messages.success(request, "Study settings saved.")
            for note in notes:
                messages.warning(request, note)
            return redirect("studies:study_detail", slug=study.slug)
    # The builder's preview beside the form: the draft as posted (a refused form), else the saved study.
    preview = builder.preview_context(study, request.POST if request.method == "POST" and not locked else {}, 0)
    return render(request, "studies/study_edit.html", {
        "study": study, "form": form, "locked": locked, "plan": planning.pay_plan(study),
        "preview_html": render_to_string("studies/_builder_preview.html", preview, request),
        "duplicate_form": StudyDuplicateForm(
            experiments=access.experiments_visible_to(request.user).filter(is_benchmark=False)),
    })


@login_required
@require_POST
def study_duplicate(request, slug):
    study = _study(request, slug)
    experiments = access.experiments_visible_to(request.user).filter(is_benchmark=False)
    form = StudyDuplicateForm(request.POST, experiments=experiments)
    if not form.is_valid():
        messages.error(request, "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
        return redirect("studies:study_detail", slug=slug)
    target = experiments.get(slug=form.cleaned_data["experiment"]) if form.cleaned_data["experiment"] else None
    try:
        copy = editing.study_duplicate(study=study, title=form.cleaned_data["title"] or None, experiment=target)
    except ValidationError as error:
        messages.error(request, "; ".join(errors_text(error)))
        return redirect("studies:study_detail", slug=slug)
    except StudyStateError as error:
        messages.error(request, f"{str(error)[:1].upper()}{str(error)[1:]}.")
        return redirect("studies:study_detail", slug=slug)
    messages.success(request, f"“{copy.title}” is a new draft copy of “{study.title}” with its settings and items; "
                              f"no ratings were copied.")
    return redirect("studies:study_detail", slug=copy.slug)


@login_required
@require_POST
def study_delete(request, slug):
    study = _study(request, slug)
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Tick the box to confirm that the draft should be deleted; nothing was deleted.")
        return redirect("studies:study_detail", slug=slug)
    try:
        title = editing.study_delete(study=study)
    except StudyStateError as error:
        messages.error(request, f"{str(error)[:1].upper()}{str(error)[1:]}.")
        return redirect("studies:study_detail", slug=slug)
    messages.success(request, f"Draft “{title}” deleted.")
    return redirect("studies:experiment_list")


@login_required
@require_POST
def experiment_collaborators(request, experiment, action):
    """Add or remove a collaborator by username or e-mail (owner or staff only)."""
    experiment = get_object_or_404(access.experiments_visible_to(request.user), slug=experiment)
    back = request.POST.get("next") or reverse("studies:experiment_list")
    if not back.startswith("/") or back.startswith("//"):
        back = reverse("studies:experiment_list")
    form = CollaboratorForm(request.POST)
    operation = {"add": editing.experiment_collaborator_add, "remove": editing.experiment_collaborator_remove}.get(action)
    if operation is None or not form.is_valid():
        messages.error(request, "Give a username or an e-mail address.")
        return redirect(back)
    try:
        user = operation(experiment=experiment, by=request.user, identifier=form.cleaned_data["user"])
    except StudyStateError as error:
        messages.error(request, f"{str(error)[:1].upper()}{str(error)[1:]}.")
    except ValidationError as error:
        messages.error(request, "; ".join(errors_text(error)))
    else:
        done = "can now open" if action == "add" else "no longer has access to"
        messages.success(request, f"{user.get_username()} {done} “{experiment.title}” and its studies.")
    return redirect(back)


@login_required
def study_items_browser(request, slug):
    """Items with who rated them and how, and the raters' quality flags; paged, filtered by rater
    or to flagged raters. Pseudonyms unless ?raw_ids=1 (owners, collaborators, staff)."""
    study = _study(request, slug)
    raw_ids = raw_ids_requested(request, [study.experiment_id])  # 403 for anyone else
    rater = request.GET.get("rater", "")
    rater_id = int(rater) if rater.isascii() and rater.isdigit() and len(rater) <= 18 else None
    flagged_only = request.GET.get("flagged") == "1"
    flags = browser_selectors.rater_flags(study)
    page, rows = browser_selectors.item_page(study, page=request.GET.get("page", 1), rater=rater_id,
                                             flagged_only=flagged_only, raw_ids=raw_ids, flags=flags)
    query = {k: v for k, v in (("rater", rater_id or ""), ("flagged", "1" if flagged_only else ""),
                               ("raw_ids", "1" if raw_ids else "")) if v}
    return render(request, "studies/study_items.html", {
        "study": study, "page": page, "rows": rows, "raw_ids": raw_ids, "rater": rater_id,
        "flagged_only": flagged_only, "raters": browser_selectors.rater_choices(study, raw_ids=raw_ids),
        "flagged_count": sum(f.any for f in flags.values()), "query": "&".join(f"{k}={v}" for k, v in query.items()),
    })


def transition_services():
    """The study page's state buttons beyond publish and close."""
    return {"reopen": (editing.study_reopen, "Study re-opened: it takes new raters again."),
            "pause": (editing.study_pause, "Study paused: no new raters until you resume it."),
            "resume": (editing.study_resume, "Study resumed: it takes new raters again.")}


@login_required
@require_POST
def study_state(request, slug, action):
    study = _study(request, slug)
    service, done = transition_services().get(action, (None, ""))
    if service is None:
        return redirect("studies:study_detail", slug=slug)
    try:
        service(study=study)
    except StudyStateError as error:
        messages.error(request, f"{str(error)[:1].upper()}{str(error)[1:]}.")
    else:
        messages.success(request, done)
    return redirect("studies:study_detail", slug=slug)
