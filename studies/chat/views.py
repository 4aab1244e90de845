"""The rater's chat page and its small JSON interface; the researcher's transcript export.

``/r/a/<token>/items/<position>/chat/`` shows the chat of one item; the page posts each message to
``.../chat/turn/`` and may ask again (``.../chat/retry/``), end the chat (``.../chat/end/``) and poll
``.../chat/state/`` (``?waiting=1`` while the system writes: a light answer until something changed).
Everything works without JavaScript too: the forms post, the views redirect back to
the page (POST-redirect-GET), and a refused message is shown again in the box with what is wrong. With
JavaScript (static/concord/chat.js) the same views answer JSON when asked for it (``Accept:
application/json``). Like every rater page, the posts carry a per-assignment form token instead of a
cookie, and the page never names the system: sides are letters.

A turn and a retry answer as soon as the message is stored (``CHAT_BACKGROUND_REPLIES``): the
bot is asked in this process's call threads, and the page follows the state (the script polls it; without
JavaScript the page reloads itself while the system is writing). Looking at the state resumes a call
whose worker died.
"""
from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from studies.access import studies_visible_to
from studies.chat import selectors
from studies.chat import services as chat_services
from studies.chat.config import chat_config
from studies.chat.services import STALE_MARGIN_SECONDS
from studies.chat.transcripts import transcripts_response
from studies.designs import unit_for
from studies.models import Assignment, AssignmentItem
from studies.rating import form_tokens
from studies.rating.answers import assignment_item_open
from studies.rating.language import rater_language_use
from studies.rating.pages import _guard, _message, rater_page, render_markdown
from studies.reports.exporting import raw_ids_requested


def _wants_json(request) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def _slot(token: str, position: int) -> AssignmentItem:
    # the experiment too: a turn's bot call goes to its owner's endpoint (services._answer)
    slot = (AssignmentItem.objects.select_related("assignment__study__experiment", "assignment__rater")
            .filter(assignment__token=token, position=position).first())
    if slot is None or not unit_for(slot.assignment.study).collects_dialogues:
        raise Http404
    rater_language_use(slot.assignment.study)
    return slot


def _blocked(request, slot: AssignmentItem):
    """The page to show instead (task ended, not consented yet), or None."""
    if (page := _guard(request, slot.assignment)) is not None:
        return page
    if slot.assignment.consented_at is None:
        return redirect("raters:start", token=slot.assignment.token)
    return None


def _urls(token: str, position: int) -> dict[str, str]:
    page = reverse("chat:page", args=[token, position])  # the others are below it (studies/chat/urls.py)
    return {"page": page, **{name: f"{page}{name}/" for name in ("turn", "retry", "end", "state", "questions")},
            "rate": reverse("raters:item", args=[token, position])}


def _state(slot: AssignmentItem, chats: list | None = None) -> dict:
    return {**selectors.chat_state(slot.assignment, slot.item_id, chats),
            "urls": _urls(slot.assignment.token, slot.position)}


def _page(request, slot: AssignmentItem, *, text: str = "", error: str = "", status: int = 200):
    assignment = slot.assignment
    total = assignment.assignment_items.count()
    context = {
        "assignment": assignment, "study": assignment.study, "state": _state(slot),
        "urls": _urls(assignment.token, slot.position),
        "text": text, "error": error, "client_id": uuid.uuid4().hex, "number": slot.position + 1, "total": total,
        "position": slot.position, "instructions": render_markdown(assignment.study.instructions),
        "form_token": form_tokens.form_token(assignment.token, "chat"),
        "config": chat_config(assignment.study),
    }
    return render(request, "raters/chat.html", context, status=status)


@rater_page
def chat_page(request, token: str, position: int):
    slot = _slot(token, position)
    if (page := _blocked(request, slot)) is not None:
        return page
    try:
        chat_services.chat_open(assignment=slot.assignment, item_id=slot.item_id)
    except chat_services.ChatRefused as refused:
        return _message(request, gettext("This chat cannot be opened"), str(refused), status=refused.status)
    assignment_item_open(slot=slot)
    chat_services.chat_replies_resume(assignment=slot.assignment, item_id=slot.item_id)
    if selectors.chat_ended(slot.assignment, slot.item_id):
        return redirect("raters:item", token=token, position=position)
    return _page(request, slot)


def _refused(request, slot: AssignmentItem):
    if form_tokens.form_token_valid(slot.assignment.token, "chat",
                                    request.POST.get(form_tokens.FIELD) or request.headers.get(form_tokens.HEADER)):
        return None
    message = gettext("This message was not sent from this task's own page (or the page is out of date): reload it.")
    if _wants_json(request):
        return JsonResponse({"error": message}, status=403)
    return _message(request, gettext("This form could not be accepted"), message + gettext(" Nothing was saved."),
                    status=403)


def _act(request, token: str, position: int, action):
    """Run one chat action for a POST and answer JSON or a redirect to the page; a refusal answers
    with its message (JSON) or the page again with the rater's text kept in the box. ``action`` may
    return the chats as it left them (``TurnOutcome.chats``): the JSON state is built from those, not
    read again."""
    slot = _slot(token, position)
    if (page := _blocked(request, slot)) is not None:
        return JsonResponse({"error": gettext("this task can no longer be worked on")}, status=409) \
            if _wants_json(request) else page
    if (refused := _refused(request, slot)) is not None:
        return refused
    try:
        done = action(slot)
    except chat_services.ChatRefused as refusal:
        if _wants_json(request):
            payload = {"error": str(refusal), "field": refusal.field, "state": _state(slot)}
            response = JsonResponse(payload, status=refusal.status)
            if refusal.retry_after:
                response["Retry-After"] = str(refusal.retry_after)
            return response
        return _page(request, slot, text=request.POST.get("text", ""), error=str(refusal), status=refusal.status)
    if _wants_json(request):
        return JsonResponse(_state(slot, getattr(done, "chats", None)))
    if selectors.chat_ended(slot.assignment, slot.item_id):
        return redirect("raters:item", token=token, position=position)
    return redirect("chat:page", token=token, position=position)


@rater_page
@require_POST
def chat_turn(request, token: str, position: int):
    return _act(request, token, position, lambda slot: chat_services.chat_turn_post(
        assignment=slot.assignment, item_id=slot.item_id, text=request.POST.get("text", ""),
        client_id=request.POST.get("client_id", ""), background=settings.CHAT_BACKGROUND_REPLIES))


@rater_page
@require_POST
def chat_retry(request, token: str, position: int):
    return _act(request, token, position, lambda slot: chat_services.chat_reply_retry(
        assignment=slot.assignment, item_id=slot.item_id, background=settings.CHAT_BACKGROUND_REPLIES))


@rater_page
@require_POST
def chat_end(request, token: str, position: int):
    return _act(request, token, position, lambda slot: chat_services.chat_end(
        assignment=slot.assignment, item_id=slot.item_id))


def _still_waiting(token: str, position: int) -> bool:
    """The poll's light path (``?waiting=1``, while the system writes): True when every chat that
    waits still waits in time (a dead worker's call resumed), so the page needs nothing new."""
    waiting = selectors.chat_waiting(token, position)
    if not waiting:
        return False
    stale = timezone.now() - timedelta(seconds=settings.CHAT_REPLY_DEADLINE_SECONDS + STALE_MARGIN_SECONDS)
    if any(since < stale for *_, since in waiting):
        return False  # the whole state says it failed
    assignment_id, item_id = waiting[0][0], waiting[0][1]
    chat_services.chat_replies_resume(assignment=Assignment(pk=assignment_id), item_id=item_id,
                                      callers=[caller for _, _, caller, _ in waiting])
    return True


@rater_page
def chat_state(request, token: str, position: int):
    """The page's poll: with ``?waiting=1`` (while the system writes) one light query answers
    ``unchanged`` as long as every chat that waits still waits in time; else one query for the slot's
    chats with their transcripts, the assignment and the study. Either resumes a call whose worker died."""
    if request.GET.get("waiting") and _still_waiting(token, position):
        return JsonResponse({"waiting": True, "unchanged": True})
    chats = selectors.slot_chats(token, position)
    if not chats or chats[0].assignment.status != Assignment.Status.STARTED:
        return _state_from_slot(token, position)  # not opened yet, or over: the slot says what
    assignment, item_id = chats[0].assignment, chats[0].item_id
    rater_language_use(assignment.study)
    if callers := [chat.caller for chat in chats if chat.status == chat.Status.WAITING]:
        chat_services.chat_replies_resume(assignment=assignment, item_id=item_id, callers=callers)
    return JsonResponse({**selectors.chat_state(assignment, item_id, chats), "urls": _urls(token, position)})


def _state_from_slot(token: str, position: int):
    slot = _slot(token, position)
    if slot.assignment.status != slot.assignment.Status.STARTED:
        return JsonResponse({"error": gettext("this task can no longer be worked on")}, status=409)
    chat_services.chat_replies_resume(assignment=slot.assignment, item_id=slot.item_id)
    return JsonResponse(_state(slot))


@login_required
def transcripts_export(request, slug: str):
    """The study's chat transcripts as JSON lines (one chat a line, turns with their timing), streamed."""
    study = get_object_or_404(studies_visible_to(request.user), slug=slug)
    if not unit_for(study).collects_dialogues:
        raise Http404("only chat studies have transcripts")
    return transcripts_response(study, raw_ids=raw_ids_requested(request, [study.experiment_id]))
