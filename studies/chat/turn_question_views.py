"""The chat page's answers to the per-turn questions after a bot reply (``studies.chat.turn_questions``): a JSON
POST of {"answers": {field: labels}}, answered with the chat's state (its ``questions`` show what is ticked, and
``can_send`` turns true once the last reply's questions are answered); a refusal names the field."""
from __future__ import annotations

import json

from django.http import JsonResponse
from django.views.decorators.http import require_POST

from studies.chat import turn_questions
from studies.chat.views import _blocked, _refused, _slot, _state
from studies.rating.pages import rater_page


@rater_page
@require_POST
def chat_questions(request, token: str, position: int):
    slot = _slot(token, position)
    if _blocked(request, slot) is not None:
        return JsonResponse({"error": "this task can no longer be worked on"}, status=409)
    if (refused := _refused(request, slot)) is not None:
        return refused
    try:
        body = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        return JsonResponse({"error": "send the answers as JSON", "field": "answers"}, status=400)
    try:
        turn_questions.turn_answers_save(assignment=slot.assignment, item_id=slot.item_id,
                                         answers=body.get("answers") if isinstance(body, dict) else None)
    except turn_questions.TurnAnswersRefused as refusal:
        return JsonResponse({"error": str(refusal), "field": refusal.field, "state": _state(slot)}, status=400)
    return JsonResponse(_state(slot))
