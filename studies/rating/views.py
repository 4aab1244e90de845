"""Rater pages: entry by link, consent and instructions, one screen per item, questionnaire, completion.

Every page after the entry is addressed by the assignment's unguessable token, so a rater can reach
only their own assignment. Pages follow POST-redirect-GET, except that a stored item answers with
the next item's page at once (see ``item``); reloading, the back button and double submits are safe,
and a rejected answer re-renders the page with what the rater typed and what is wrong."""
from __future__ import annotations

import json
import math
import re
import secrets
import string
from functools import wraps

import markdown
import nh3
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count, Max, Min, OuterRef, Subquery
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from studies import bws_tuples, dialogue_studies, pairwise_rater, pairwise_services
from studies.authoring import allocation
from studies.authoring import selectors as study_selectors
from studies.authoring import services as authoring
from studies.designs import design_description, number_text, typed_value_parse
from studies.dialogue_pages import dialogue_context, target_texts
from studies.errors import AssignmentRefused, StudyStateError
from studies.models import Assignment, AssignmentItem, Design, Experiment, Rating, Study, StudyItem
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating import form_tokens, invites, platforms, review
from studies.rating import selectors as rater_selectors
from studies.rating.framing import frameable_by_platforms
from studies.rating.questionnaire import questionnaire_clean
from studies.reports.targets import TARGET_ID


def render_markdown(text: str) -> str:
    """Researcher-written Markdown as HTML with anything unsafe removed (nh3)."""
    return mark_safe(nh3.clean(markdown.markdown(text or "", extensions=["extra", "sane_lists"])))


def sentence(text: str) -> str:
    """``text`` as a sentence: its first letter upper-cased and nothing else touched (``str.capitalize``
    would lower-case the rest: "The link lacks hitid", "mechanical turk"), ending in one full stop."""
    text = str(text).strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def identity_problem(error: platforms.IdentityError) -> str:
    """A bad link's message for the rater. One that starts with the parameter's name says so, and the
    name keeps its exact spelling (``workerId``, ``PROLIFIC_PID``) instead of being capitalised."""
    text = str(error)
    if error.parameter and text.startswith(error.parameter + " "):
        return sentence(f"the link parameter {text}")
    return sentence(text)


def _message(request, title: str, message: str, status: int = 200):
    return render(request, "raters/message.html", {"title": title, "message": message}, status=status)


NOT_FOUND = ("Task not found", "There is no task at this address. Please check the link you were given.")
BROWSER_COOKIE = "concord_browser"
_BROWSER_SECRET = re.compile(r"^[A-Za-z0-9_-]{43}$")


def rater_page(view):
    """A rater page: frameable by the platforms (studies.rating.framing), exempt from Django's cookie CSRF
    check (the views check a per-assignment form token instead), and a missing assignment or study
    answers with the rater's own 404 page, framed like the rest."""
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except Http404:
            return _message(request, *NOT_FOUND, status=404)
    return csrf_exempt(frameable_by_platforms(wrapped))


def _assignment(token: str) -> Assignment:
    return get_object_or_404(Assignment.objects.select_related("study", "rater"), token=token)


def _form_refused(request, assignment: Assignment, purpose: str):
    """None when the POST carries this assignment's form token for ``purpose``, else the 403 page."""
    if form_tokens.form_token_valid(assignment.token, purpose, request.POST.get(form_tokens.FIELD)):
        return None
    return _message(request, "This form could not be accepted",
                    "It was not sent from this task's own page (or the page is out of date). Reload the page and "
                    "try again; nothing was saved.", status=403)


def _next_url(assignment: Assignment, after: int | None = None, total: int | None = None) -> str:
    """The next item to show: the one after ``after`` if any, else the first unanswered, else the questionnaire.
    With ``total`` (the assignment's number of items, positions 0..total-1) the following item needs no query."""
    slots = assignment.assignment_items.order_by("position")
    if after is not None:
        if total is not None:
            if after + 1 < total:
                return reverse("raters:item", args=[assignment.token, after + 1])
        elif (following := slots.filter(position=after + 1).first()) is not None:
            return reverse("raters:item", args=[assignment.token, following.position])
    unanswered = slots.filter(answered_at__isnull=True).first()
    if unanswered is not None:
        return reverse("raters:item", args=[assignment.token, unanswered.position])
    return reverse("raters:questionnaire", args=[assignment.token])


def _ended_page(request, assignment: Assignment):
    """The page for an assignment that can no longer be worked on or paid, or None. An assignment
    past its time limit is abandoned here, on access (its items go back to the pool at once)."""
    return_it = {Study.Platform.MTURK: " Please return the HIT on Mechanical Turk.",
                 Study.Platform.PROLIFIC: " Please return your submission on Prolific."}.get(assignment.rater.platform, "")
    review.assignment_expire_if_due(assignment=assignment)
    # A submitted MTurk/invite assignment screened out later is left to the reviewer: its page stays the done page.
    if assignment.screened_out and (assignment.status == Assignment.Status.ABANDONED
                                    or assignment.rater.platform == Study.Platform.PROLIFIC):
        return _screened_out_page(request, assignment, return_it)
    if assignment.status == Assignment.Status.ABANDONED and assignment.platform_data.get("abandon_kind") == review.EXPIRED:
        return _message(request, "Time is up", "The time allowed for this task has passed, so it can no longer be "
                                               "completed. Thank you for your interest." + return_it, status=410)
    if assignment.status == Assignment.Status.ABANDONED:
        return _message(request, "This task was abandoned",
                        "This assignment was given up or ran out of time, so it can no longer be completed."
                        + return_it, status=410)
    if assignment.status == Assignment.Status.REJECTED:
        return _message(request, "This work was not accepted",
                        "This assignment was reviewed and rejected; it cannot be completed again. If you think this "
                        "is a mistake, contact the researcher through the platform.", status=410)
    return None


def _screened_out_page(request, assignment: Assignment, return_it: str):
    """A rater screened out (e.g. failed attention checks): the study's screened-out code when the
    researcher set one (Prolific), else a request to return the task."""
    code = assignment.completion_code if assignment.rater.platform == Study.Platform.PROLIFIC else ""
    if not code:
        return _message(request, "Thank you for your time",
                        "Your answers did not pass this study's checks, so this task has ended." + return_it)
    context = {"assignment": assignment, "code": code, "screened_out": True,
               "prolific_url": platforms.prolific_completion_url(assignment.study.platform_config, code)}
    return render(request, "raters/done.html", context)


def _guard(request, assignment: Assignment):
    """A page to show instead of the requested one, or None."""
    if (page := _ended_page(request, assignment)) is not None:
        return page
    if assignment.status != Assignment.Status.STARTED:
        return redirect("raters:done", token=assignment.token)
    return None


# --- entry, consent --------------------------------------------------------------------------------

def _refusal_page(request, study: Study, refusal: AssignmentRefused):
    reason, platform = refusal.reason, study.platform
    if reason == AssignmentRefused.ALREADY_DONE:
        if platform == Study.Platform.MTURK:
            return _message(request, "You have already done this study",
                            "Our records show that you have already taken part in this study with another HIT. "
                            "Please return this HIT so that another worker can take it.", status=403)
        return _message(request, "You have already done this study",
                        "Our records show that you have already taken part in this study in another session. "
                        "Please return this submission on Prolific.", status=403)
    if reason == AssignmentRefused.INVITE_CLAIMED:
        return _message(request, "This invitation is already in use",
                        "This invitation link has already been opened in another browser, and each link is for one "
                        "person. Open it in the browser you used first, or ask the researcher for a link of your "
                        "own.", status=403)
    if reason == AssignmentRefused.INVITE_EXPIRED:
        return _message(request, "This invitation has expired",
                        "Please ask the researcher for a new link.", status=410)
    if reason == AssignmentRefused.INVITE_INVALID:
        return _message(request, "We could not start the task", sentence(refusal), status=400)
    hand_back = " Please return this HIT." if platform == Study.Platform.MTURK else ""
    return _message(request, "Thank you for your interest", f"We cannot offer you this task: {refusal}.{hand_back}",
                    status=409 if reason == AssignmentRefused.BUSY else 403)


def _mturk_preview(request, study: Study):
    """What a worker sees before accepting the HIT: instructions and the first item; nothing stored."""
    if study.status != Study.Status.PUBLISHED:
        return _message(request, "This study has closed", "It takes no new workers. Thank you for your interest.",
                        status=410)
    if not rater_selectors.study_has_room(study):
        return _message(request, "This study is complete", "It has all the ratings it needs. Thank you for your "
                                                           "interest.", status=410)
    item = study.items.order_by("position").select_related("conversation", "reference_response").first()
    context = _item_context(study, item, _canonical_order(item), {}, {}, preview=True)
    context["preview_note"] = "This is a preview. Accept the HIT to start; nothing you do here is saved."
    context["instructions"] = render_markdown(study.instructions)
    context["instructions_open"] = True
    return render(request, "raters/item.html", context)


@rater_page
def entry(request, slug: str):
    # Anonymous visitors learn nothing from an address: an unknown slug, a draft and a benchmark
    # study all get the same page.
    study = Study.objects.filter(slug=slug, status__in=[Study.Status.PUBLISHED, Study.Status.CLOSED]) \
        .exclude(platform=Study.Platform.BENCHMARK).first()
    if study is None:
        return _message(request, *NOT_FOUND, status=404)
    authoring.study_close_if_done(study=study, check_items=False)  # on access: past its closing time
    try:
        identity = platforms.identity_from(request.GET, study.platform)
    except platforms.IdentityError as error:
        return _message(request, "We could not start the task", identity_problem(error), status=400)
    if identity.preview:
        return _mturk_preview(request, study)
    new_secret = None
    try:
        if identity.platform == Study.Platform.INVITE:
            secret = request.COOKIES.get(BROWSER_COOKIE, "")
            if not _BROWSER_SECRET.match(secret):
                secret = new_secret = secrets.token_urlsafe(32)
            assignment = invites.invite_enter(study=study, token=identity.acceptance_id, browser_secret=secret)
        else:
            assignment = rater_entry.assignment_enter(
                study=study, platform=identity.platform, external_id=identity.external_id,
                acceptance_id=identity.acceptance_id, platform_data=identity.platform_data)
    except AssignmentRefused as refusal:
        return _refusal_page(request, study, refusal)
    response = _guard(request, assignment) or redirect("raters:start", token=assignment.token)
    if new_secret:
        # First-party and HttpOnly: binds the invite to this browser; only its hash is stored.
        response.set_cookie(BROWSER_COOKIE, new_secret, max_age=365 * 24 * 3600, path="/r/", httponly=True,
                            samesite="Lax", secure=settings.SESSION_COOKIE_SECURE or request.is_secure())
    return response


@rater_page
def experiment_entry(request, slug: str):
    """The experiment-level link (``/r/x/<experiment>/``, same platform parameters as a study's
    link): a new rater is placed in the least-filled open condition, a returning one goes back to
    theirs (rater_entry.experiment_enter)."""
    experiment = Experiment.objects.filter(slug=slug, is_benchmark=False).first()
    linked = list(experiment.studies.filter(status__in=[Study.Status.PUBLISHED, Study.Status.CLOSED])
                  .exclude(platform=Study.Platform.BENCHMARK).order_by("pk")) if experiment else []
    if not linked:
        return _message(request, *NOT_FOUND, status=404)
    for study in linked:
        authoring.study_close_if_done(study=study, check_items=False)
    open_ones = [s for s in linked if s.status == Study.Status.PUBLISHED]
    if problem := allocation.experiment_platform_problem(open_ones):
        return _message(request, "This link is not set up correctly",
                        f"We cannot start the task: {problem}. Nothing was stored; please tell the researcher.",
                        status=409)
    platform = (open_ones or linked)[0].platform
    if platform == Study.Platform.INVITE:
        return _message(request, "We could not start the task", "This experiment takes raters by invitation: "
                        "please open the invitation link you were given.", status=400)
    try:
        identity = platforms.identity_from(request.GET, platform)
    except platforms.IdentityError as error:
        return _message(request, "We could not start the task", identity_problem(error), status=400)
    if identity.preview:
        loads = allocation.condition_loads(open_ones)
        roomy = [s for s in sorted(open_ones, key=lambda s: loads.get(s.pk, math.inf)) if rater_selectors.study_has_room(s)]
        return _mturk_preview(request, roomy[0] if roomy else linked[0])
    try:
        assignment = rater_entry.experiment_enter(
            experiment=experiment, platform=identity.platform, external_id=identity.external_id,
            acceptance_id=identity.acceptance_id, platform_data=identity.platform_data)
    except AssignmentRefused as refusal:
        return _refusal_page(request, linked[0], refusal)
    except StudyStateError as error:
        return _message(request, "This link is not set up correctly",
                        f"We cannot start the task: {error}. Nothing was stored; please tell the researcher.",
                        status=409)
    return _guard(request, assignment) or redirect("raters:start", token=assignment.token)


@rater_page
def start(request, token: str):
    assignment = _assignment(token)
    if (page := _guard(request, assignment)) is not None:
        return page
    error = None
    if request.method == "POST":
        if (refused := _form_refused(request, assignment, "consent")) is not None:
            return refused
        if request.POST.get("agree") == "yes":
            answering.assignment_consent(assignment=assignment)
            return redirect(_next_url(assignment))
        error = "Please tick the box to say you agree before starting."
    elif assignment.consented_at is not None:
        return redirect(_next_url(assignment))
    study = assignment.study
    context = {
        "assignment": assignment, "study": study, "error": error,
        "instructions": render_markdown(study.instructions),
        "design_explanation": design_description(study.design, study.design_config, _anchors_shown(study),
                                                 unit=study.unit),
        "items": assignment.assignment_items.count(), "criteria": study.criteria.all(),
        "form_token": form_tokens.form_token(assignment.token, "consent"),
    }
    return render(request, "raters/start.html", context, status=400 if error else 200)


def _anchors_shown(study: Study) -> tuple[float, float] | None:
    """The lowest and highest reference value a BME study's items show (one aggregate), else None."""
    if study.design != Design.BME:
        return None
    shown = study.items.filter(reference_value__isnull=False).aggregate(low=Min("reference_value"),
                                                                        high=Max("reference_value"))
    return (shown["low"], shown["high"]) if shown["low"] is not None else None


# --- items -----------------------------------------------------------------------------------------

def _canonical_order(item: StudyItem) -> list[int]:
    if item.study.is_dialogue:  # the conversation(s) themselves are rated (studies.dialogue_studies)
        return dialogue_studies.item_targets([item.pk])[item.pk]
    return list(item.item_responses.order_by("position").values_list("response_id", flat=True))


def field_name(response_id: int, criterion: str) -> str:
    return f"r{response_id}-{criterion}"


def _item_context(study: Study, item: StudyItem, order: list[int], values: dict, errors: dict, *,
                  preview: bool = False, assignment: Assignment | None = None, slot: AssignmentItem | None = None,
                  total: int | None = None) -> dict:
    """What raters/item.html needs. Criteria and response texts come from the cache (selectors), so a
    rater's item page costs no query beyond its slot once the study's first raters have warmed it."""
    texts = target_texts(study, order) if study.is_dialogue else rater_selectors.item_response_texts(item.pk, order)
    letters = string.ascii_uppercase
    responses = [{"id": rid, "letter": letters[i], "text": texts[rid]} for i, rid in enumerate(order)]
    config = study.design_config
    criteria = []
    for criterion in rater_selectors.study_criteria(study):
        rows = []
        for response in responses:
            name = field_name(response["id"], criterion.name)
            rows.append({**response, "field": name, "value": values.get(name, ""), "error": errors.get(name)})
        if study.design == Design.BWS:  # show the list in the rater's current ranking order
            rows.sort(key=lambda r: (int(r["value"]) if str(r["value"]).isdigit() else 99, r["letter"]))
        low, high = (criterion.scale_min, criterion.scale_max) if criterion.scale_min is not None \
            and criterion.scale_max is not None else (config.get("min", 0), config.get("max", 999))
        criteria.append({"name": criterion.name, "question": criterion.question, "help": criterion.help_text,
                         "rows": rows, "error": errors.get(criterion.name), "ranks": list(range(1, len(rows) + 1)),
                         "min": number_text(low), "max": number_text(high)})
    points = list(range(1, config.get("points", 6) + 1)) if study.design == Design.LIKERT else []
    labels = config.get("labels") or []
    position = slot.position if slot else item.position
    if total is None:
        total = assignment.assignment_items.count() if assignment else study.items.count()
    reference = item.reference_response if study.is_magnitude else None
    context = {
        "pairwise": pairwise_rater.item_context(study, responses, values, errors)
        if study.design == Design.PAIRWISE else None,
        "study": study, "item": item, "assignment": assignment, "slot": slot, "preview": preview,
        "design_partial": f"raters/designs/{study.design}.html",  # one template per design, see item.html
        "unit_name": "Dialogue" if study.is_dialogue else "Response",  # what a row of the form stands for
        "turns": item.conversation.turns if item.conversation_id else [],  # a best-worst tuple has none
        "responses": responses, "criteria": criteria, "errors": errors,
        "points": [{"value": p, "label": labels[p - 1] if labels else ""} for p in points],
        "reference": reference, "reference_value": number_text(item.reference_value) if item.reference_value else None,
        "example_double": number_text(2 * item.reference_value) if item.reference_value else None,
        "example_half": number_text(item.reference_value / 2) if item.reference_value else None,
        "me_min": number_text(config.get("min", 0)), "me_max": number_text(config.get("max", 999)),
        "position": position, "number": position + 1, "total": total,
        "progress": round(100 * position / total) if total else 0,
        **(dialogue_context(study, item, order) if study.is_dialogue else {}),
    }
    if study.design == Design.BWS_TUPLES:  # members with their own contexts, best/worst fields
        context.update(bws_tuples.item_context(study, order, values, errors, rater_selectors.study_criteria(study)))
    return context


# How a design's answers are stored (the rest are Rating rows, answering.ratings_record).
RECORDERS = {Design.BWS_TUPLES: bws_tuples.choices_record, Design.PAIRWISE: pairwise_services.comparisons_record}


def _parse(post, study: Study, order: list[int]) -> tuple[dict[str, dict[int, float]], dict[str, str]]:
    """The answers in a submitted item form as numbers (ranks and Likert points whole, magnitude
    estimates possibly decimal), and every field that is not acceptable with what is wrong with it
    (designs.typed_value_parse; rater.js shows the same messages before the form is sent)."""
    if study.design == Design.PAIRWISE:
        return pairwise_rater.parse(post, study)
    if study.design == Design.BWS_TUPLES:  # best/worst picks (studies.bws_tuples)
        return bws_tuples.answers_parse(post, rater_selectors.study_criteria(study), order)
    answers: dict[str, dict[int, float]] = {}
    errors: dict[str, str] = {}
    for criterion in rater_selectors.study_criteria(study):
        answers[criterion.name] = per_response = {}
        for rid in order:
            name = field_name(rid, criterion.name)
            raw = (post.get(name) or "").strip()
            if study.design == Design.BWS:
                if not raw:
                    errors[name] = "rank this response"
                elif not raw.isdigit():
                    errors[name] = f"“{raw[:12]}” is not a rank"
                else:
                    per_response[rid] = int(raw)
                continue
            value, problem = typed_value_parse(study.design, study.design_config, raw,
                                               scale_min=criterion.scale_min, scale_max=criterion.scale_max)
            if problem:
                errors[name] = problem
            else:
                per_response[rid] = value
    return answers, errors


def _stored_values(slot: AssignmentItem, study: Study) -> dict[str, str]:
    if study.design == Design.BWS_TUPLES:
        return bws_tuples.stored_values(slot)
    if slot.answered_at is None:  # ratings are stored together with answered_at: none yet
        return {}
    if study.design == Design.PAIRWISE:
        return pairwise_rater.stored_values(slot)
    values = {}
    for rid, criterion, value, rank in Rating.objects.filter(assignment_id=slot.assignment_id, item_id=slot.item_id) \
            .annotate(target=TARGET_ID).values_list("target", "criterion__name", "value", "rank"):
        given = rank if study.design == Design.BWS else value
        values[field_name(rid, criterion)] = number_text(given) if given is not None else ""
    return values


def _slots(token: str, *positions: int) -> dict[int, AssignmentItem]:
    """Position -> slot for these positions of the assignment with ``token``, each with its
    assignment, study, rater, item, conversation and reference response, and ``total`` (the
    assignment's number of items) as a subquery: all of an item page's reads in one query (a submit
    reads its own slot and the next one together)."""
    total = AssignmentItem.objects.filter(assignment_id=OuterRef("assignment_id")).order_by() \
        .values("assignment_id").annotate(n=Count("id")).values("n")[:1]
    found = AssignmentItem.objects.select_related(
        "assignment__study", "assignment__rater", "item__conversation", "item__reference_response",
    ).annotate(total=Subquery(total)).filter(assignment__token=token, position__in=positions)
    return {slot.position: slot for slot in found}


@rater_page
def item(request, token: str, position: int):
    """One item: GET shows it (with the stored answers, else the autosaved draft); POST stores it.

    A stored answer is answered with the next item's page itself (200), not a redirect and a second
    request: half the requests per item. The page carries its own address (the form posts there, and
    rater.js puts it in the address bar with history.replaceState), so a reload or Back shows the
    right item; sending the same answers again (double click, or a reload that re-posts) stores them
    once and shows the same next item. The last item redirects to the questionnaire (or the first
    item still unanswered) as before."""
    slots = _slots(token, position, position + 1) if request.method == "POST" else _slots(token, position)
    slot = slots.get(position)
    assignment = slot.assignment if slot is not None else _assignment(token)
    if (page := _guard(request, assignment)) is not None:
        return page
    if assignment.consented_at is None:
        return redirect("raters:start", token=token)
    if slot is None:
        raise Http404
    if request.method == "POST" and (refused := _form_refused(request, assignment, "item")) is not None:
        return refused
    answering.assignment_item_open(slot=slot)
    if request.method != "POST":
        return _item_page(request, slot)
    try:
        active = float(request.POST.get("active_ms") or 0) / 1000 or None
    except ValueError:
        active = math.nan
    if active is not None and not (math.isfinite(active) and active >= 0):
        return _message(request, "We could not save this answer", "The field active_ms must be a finite number of "
                        "milliseconds. Reload the page and try again; nothing was saved.", status=400)
    answers, errors = _parse(request.POST, assignment.study, slot.response_order)
    if not errors:
        try:
            record = RECORDERS.get(assignment.study.design, answering.ratings_record)
            record(assignment=assignment, item_id=slot.item_id, answers=answers,
                   seconds=(timezone.now() - slot.started_at).total_seconds(), active_seconds=active)
        except StudyStateError:
            return redirect("raters:done", token=token)
        except ValidationError as error:
            for key, messages in error.message_dict.items():
                criterion, _, rid = key.partition(".")
                errors[field_name(int(rid), criterion) if rid.isdigit() else key] = "; ".join(messages)
        else:
            following = slots.get(position + 1)
            if following is None:
                return redirect(_next_url(assignment, after=position, total=slot.total))
            answering.assignment_item_open(slot=following)
            return _item_page(request, following)
    return _item_page(request, slot, values={k: v for k, v in request.POST.items()
                                             if k.startswith(("r", *pairwise_rater.FIELD_PREFIXES))},
                      errors=errors)


def _item_page(request, slot: AssignmentItem, values: dict | None = None, errors: dict | None = None):
    """The page of ``slot`` (its assignment, study and item already loaded by _slot): what the rater
    typed when ``values`` is given (a refused answer), else the stored answers or the draft."""
    assignment, study, token, position = slot.assignment, slot.assignment.study, slot.assignment.token, slot.position
    if values is None:
        values = _stored_values(slot, study) or {k: v for k, v in slot.draft.items()}
    errors = errors or {}
    context = _item_context(study, slot.item, slot.response_order, values, errors, assignment=assignment, slot=slot,
                            total=slot.total)
    context["page_url"] = reverse("raters:item", args=[token, position])
    context["previous"] = reverse("raters:item", args=[token, position - 1]) if position > 0 else None
    context["draft_url"] = reverse("raters:draft", args=[token, position])
    context["form_token"] = form_tokens.form_token(token, "item")
    context["draft_token"] = form_tokens.form_token(token, "draft")
    return render(request, "raters/item.html", context, status=400 if errors else 200)


@rater_page
@require_POST
def draft(request, token: str, position: int):
    """Autosave (JSON body: field -> value, the form token in the X-Concord-Form-Token header); the
    page calls it on every change."""
    assignment = _assignment(token)
    if not form_tokens.form_token_valid(token, "draft", request.headers.get(form_tokens.HEADER)):
        return JsonResponse({"saved": False, "error": f"the {form_tokens.HEADER} header is missing or wrong"}, status=403)
    slot = get_object_or_404(AssignmentItem, assignment=assignment, position=position)
    slot.assignment = assignment
    try:
        payload = json.loads(request.body or b"{}")
        if not isinstance(payload, dict):
            raise ValueError
    except RecursionError:
        return JsonResponse({"saved": False, "field": "draft", "error": "the JSON is nested too deeply"}, status=400)
    except (ValueError, UnicodeDecodeError):
        return JsonResponse({"saved": False, "field": "draft", "error": "send a JSON object"}, status=400)
    try:
        answering.assignment_item_draft_save(slot=slot, draft=payload)
    except ValidationError as error:
        field, messages = next(iter(error.message_dict.items()))
        return JsonResponse({"saved": False, "field": field, "error": f"{field}: {'; '.join(messages)}"}, status=400)
    except StudyStateError as error:
        return JsonResponse({"saved": False, "error": str(error)}, status=409)
    return JsonResponse({"saved": True})


# --- questionnaire and completion -----------------------------------------------------------------

@rater_page
def questionnaire(request, token: str):
    assignment = _assignment(token)
    if (page := _guard(request, assignment)) is not None:
        return page
    if assignment.assignment_items.filter(answered_at__isnull=True).exists():
        return redirect(_next_url(assignment))
    spec = assignment.study.questionnaire
    errors: dict[str, str] = {}
    values = request.POST if request.method == "POST" else {}
    if request.method == "POST":
        if (refused := _form_refused(request, assignment, "questionnaire")) is not None:
            return refused
        answers, errors = questionnaire_clean(spec, request.POST)
        if not errors:
            answering.assignment_submit(assignment=assignment, questionnaire=answers)
            return redirect("raters:done", token=token)
    questions = [{**q, "value": values.get(q["name"], ""), "error": errors.get(q["name"])} for q in spec]
    context = {"assignment": assignment, "questions": questions,
               "form_token": form_tokens.form_token(token, "questionnaire")}
    return render(request, "raters/questionnaire.html", context, status=400 if errors else 200)


@rater_page
def done(request, token: str):
    assignment = _assignment(token)
    if (page := _ended_page(request, assignment)) is not None:
        return page
    if assignment.status == Assignment.Status.STARTED:
        return redirect("raters:start", token=token)
    context = {"assignment": assignment, "code": assignment.completion_code}
    if assignment.rater.platform == Study.Platform.MTURK:
        context["mturk_url"] = platforms.mturk_submit_url(assignment.platform_data)
        context["mturk_assignment"] = assignment.acceptance_id  # the bound one, never another HIT's
    elif assignment.rater.platform == Study.Platform.PROLIFIC:
        context["prolific_url"] = platforms.prolific_completion_url(assignment.study.platform_config,
                                                                    assignment.completion_code)
    return render(request, "raters/done.html", context)


# --- researcher preview ----------------------------------------------------------------------------

@login_required
def preview(request, slug: str, position: int = 0):
    """A researcher tries the study as a rater sees it; nothing is stored."""
    study = get_object_or_404(study_selectors.studies_visible_to(request.user), slug=slug)
    items = study.items.order_by("position")
    current = items.filter(position__gte=position).select_related("conversation", "reference_response").first()
    if current is None:
        return _message(request, "Nothing to preview", "Build the study's items first.", status=404)
    context = _item_context(study, current, _canonical_order(current), {}, {}, preview=True)
    following = items.filter(position__gt=current.position).first()
    context["preview_note"] = "Researcher preview: answers are checked in the page but nothing is saved."
    context["preview_next"] = reverse("studies:study_preview_item", args=[slug, following.position]) if following else None
    context["instructions"] = render_markdown(study.instructions)
    return render(request, "raters/item.html", context)
