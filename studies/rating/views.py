"""Rater pages after the entry: one screen per item (rendered, parsed and recorded for the study's design), autosaved drafts, the questionnaire, completion, and the researcher's preview."""
from __future__ import annotations

import json
import math

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import IntegerField
from django.db.models.expressions import RawSQL
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from studies.access import studies_visible_to
from studies.designs import design_for, unit_for
from studies.designs.common import draft_in_letters
from studies.designs.rater_reads import study_criteria
from studies.designs.units.sides import context_sides
from studies.errors import StudyStateError
from studies.models import Assignment, AssignmentItem, Study, StudyItem
from studies.rating import answers as answering
from studies.rating import form_tokens, item_answers, platforms
from studies.rating.language import rater_language_use
from studies.rating.pages import (
    _assignment,
    _ended_page,
    _form_refused,
    _guard,
    _message,
    _next_url,
    rater_page,
    render_markdown,
)
from studies.rating.questionnaire import questionnaire_clean
from studies.rating.screen_words import screen_words


def _canonical_order(item: StudyItem) -> list[int]:
    """The targets an item shows in their canonical order (responses; a dialogue study's conversations)."""
    return unit_for(item.study).item_targets([item.pk])[item.pk]


def screen_label(noun: str) -> str:
    """One screen's name from the start page's plural noun: "sets of responses" -> "Set of responses",
    "conversations" -> "Conversation" (a best-worst tuple's screen is not "Conversation 1 of 96")."""
    return screen_words(noun)[2]


def _item_context(study: Study, item: StudyItem, order: list[int], values: dict, errors: dict, *,
                  preview: bool = False, assignment: Assignment | None = None, slot: AssignmentItem | None = None,
                  total: int | None = None, criteria: list | None = None) -> dict:
    """What raters/item.html needs: the page's frame here, the form from the study's design
    (``StudyDesign.form_context``: its partial, rows or sides, what the unit shows). Criteria and
    response texts come from the cache (``studies.designs.rater_reads``), so a rater's item page costs
    no query beyond its slot once the study's first raters have warmed it."""
    position = slot.position if slot else item.position
    if total is None:
        total = assignment.assignment_items.count() if assignment else study.items.count()
    return {
        "study": study, "item": item, "assignment": assignment, "slot": slot, "preview": preview,
        # sides by who replies, not by who opens; a best-worst tuple has no conversation of its own
        "turns": context_sides(item.conversation.turns) if item.conversation_id else [],
        "errors": errors, "position": position, "number": position + 1, "total": total,
        "progress": round(100 * position / total) if total else 0,
        "screen_label": screen_label(design_for(study).screen_noun(unit_for(study))),
        **design_for(study).form_context(study=study, item=item, order=order, values=values, errors=errors,
                                         criteria=study_criteria(study) if criteria is None else criteria),
    }


def item_preview_context(study: Study, item: StudyItem, *, criteria: list, values: dict | None = None,
                         order: list[int] | None = None, total: int | None = None) -> dict:
    """``item`` as its raters get it (raters/_item_body.html's context), with ``criteria`` that may be a
    draft not yet saved (the study builder's preview; ``study`` may carry a draft design configuration).
    ``order`` and ``total`` are given for an unsaved sample item (the new-study preview reads nothing)."""
    return _item_context(study, item, _canonical_order(item) if order is None else order, values or {}, {},
                         preview=True, criteria=criteria, total=total)


def _slots(token: str, *positions: int) -> dict[int, AssignmentItem]:
    """Position -> slot for these positions of the assignment with ``token``, each with its
    assignment, study, rater, item, conversation and reference response, and ``total`` (the
    assignment's number of items) as a subquery: all of an item page's reads in one query (a submit
    reads its own slot and the next one together). Unordered: the models' default orderings chain
    (slot -> assignment -> study -> experiment) into a join of the experiment table and a sort, and
    compiling them was a fifth of an item page's CPU time."""
    found = AssignmentItem.objects.select_related(
        "assignment__study", "assignment__rater", "item__conversation", "item__reference_response",
    ).annotate(total=_SLOTS_OF_ASSIGNMENT).filter(assignment__token=token, position__in=positions).order_by()
    slots = {slot.position: slot for slot in found}
    if slots:
        rater_language_use(next(iter(slots.values())).assignment.study)
    return slots


# The assignment's number of items, correlated with the slot read (the query's own table keeps its name
# as its alias). Written out: building it as Subquery(values().annotate(Count)) on every page was a
# twentieth of the page's CPU time.
_SLOTS = AssignmentItem._meta.db_table
_SLOTS_OF_ASSIGNMENT = RawSQL(
    f'SELECT COUNT(*) FROM "{_SLOTS}" AS "all_slots" WHERE "all_slots"."assignment_id" = "{_SLOTS}"."assignment_id"',
    (), output_field=IntegerField())


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
    unit = unit_for(assignment.study)
    if (pending := unit.pending_url(slot)) is not None:  # e.g. a chat to have before its rating
        return redirect(pending)
    answering.assignment_item_open(slot=slot)
    if request.method != "POST":
        return _item_page(request, slot)
    try:
        active = float(request.POST.get("active_ms") or 0) / 1000 or None
    except ValueError:
        active = math.nan
    if active is not None and not (math.isfinite(active) and 0 <= active <= answering.MAX_ITEM_SECONDS):
        return _message(request, gettext("We could not save this answer"), gettext("The field active_ms must be a number of "
                        "milliseconds, at most one week. Reload the page and try again; nothing was saved."), status=400)
    try:
        errors = item_answers.item_answer_record(slot=slot, post=request.POST, active_seconds=active)
    except StudyStateError:
        return redirect("raters:done", token=token)
    if not errors:
        following = slots.get(position + 1)
        if following is None:
            return redirect(_next_url(assignment, after=position, total=slot.total))
        if (pending := unit.pending_url(following)) is not None:
            return redirect(pending)
        answering.assignment_item_open(slot=following)
        return _item_page(request, following)
    # Every posted value of a field: a multi-label row's ticked boxes share one name.
    prefixes = design_for(assignment.study).field_prefixes
    return _item_page(request, slot, values={k: (v[0] if len(v) == 1 else v) for k, v in request.POST.lists()
                                             if k.startswith(prefixes)},
                      errors=errors)


def _item_page(request, slot: AssignmentItem, values: dict | None = None, errors: dict | None = None):
    """The page of ``slot`` (its assignment, study and item already loaded by _slot): what the rater
    typed when ``values`` is given (a refused answer), else the stored answers or the draft."""
    assignment, study, token, position = slot.assignment, slot.assignment.study, slot.assignment.token, slot.position
    if values is None:
        values = (design_for(study).stored_values(slot, study, study_criteria(study))
                  or draft_in_letters(slot.draft, slot.response_order))
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


@login_required
def preview(request, slug: str, position: int = 0):
    """A researcher tries the study as a rater sees it; nothing is stored."""
    study = get_object_or_404(studies_visible_to(request.user), slug=slug)
    items = study.items.order_by("position")
    current = items.filter(position__gte=position).select_related("conversation", "reference_response").first()
    if current is None:
        return _message(request, gettext("Nothing to preview"), gettext("Build the study's items first."), status=404)
    context = _item_context(study, current, _canonical_order(current), {}, {}, preview=True)
    following = items.filter(position__gt=current.position).first()
    context["preview_note"] = "Researcher preview: answers are checked in the page but nothing is saved."
    context["preview_next"] = reverse("studies:study_preview_item", args=[slug, following.position]) if following else None
    context["instructions"] = render_markdown(study.instructions)
    return render(request, "raters/item.html", context)
