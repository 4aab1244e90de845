"""The rater API's chats: a chat-then-rate item is chatted through the API, under the chat page's rules
and services (``studies.chat.services``), then answered as any item.

- ``GET .../items/<position>/chat/`` opens the item's chat (as opening its page does: the chats are made,
  the item's clock starts, a call whose worker died resumes) and answers its state: each side's turns by
  letter (never the system's name), its status, what the rater may do now (``can_send``, ``can_retry``,
  ``can_end``) and the limits (``min_turns``, ``max_turns``, ``message_max_chars``).
- ``POST .../chat/turns/`` sends the rater's message (``client_id`` makes a re-send store once);
  ``POST .../chat/retry/`` asks again the systems that failed; ``POST .../chat/end/`` ends the chat, after
  which the item takes its answer (``PUT .../answer/``).

Replies come in the background where the deployment says so (``CHAT_BACKGROUND_REPLIES``): the state's
``waiting`` is true until they are stored, and a client polls the state. A refusal (an empty or too long
message, too fast, a full chat, ending too early) is a problem in the API's one envelope, the field named,
``Retry-After`` on a 429; the token and key are the assignment's as everywhere in the rater API."""
from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from studies.api.base import service_refusals
from studies.api.inputs import StrictInput
from studies.api.rater_views import KEY_PARAMETER, RaterView, _assignment, _slot, _started
from studies.chat import selectors
from studies.chat import services as chat_services
from studies.designs import unit_for
from studies.models import AssignmentItem
from studies.rating.answers import assignment_item_open


class ChatTurnSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["user", "system"], help_text="user: the rater; system: the bot")
    text = serializers.CharField()
    index = serializers.IntegerField()


class ChatSideSerializer(serializers.Serializer):
    letter = serializers.CharField(help_text="the side's letter (A, B, ...), as its item's targets")
    status = serializers.ChoiceField(choices=["open", "waiting", "failed", "ended"])
    turns = ChatTurnSerializer(many=True)
    error = serializers.CharField(help_text="the rater's message for a failure (empty otherwise)")
    exchanges = serializers.IntegerField(help_text="the bot's replies so far")


class ChatStateSerializer(serializers.Serializer):
    sides = ChatSideSerializer(many=True)
    exchanges = serializers.IntegerField(help_text="the fewest replies of any side")
    min_turns = serializers.IntegerField(help_text="exchanges needed before the chat may end")
    max_turns = serializers.IntegerField()
    message_max_chars = serializers.IntegerField()
    ended = serializers.BooleanField(help_text="the chat is over: answer the item")
    waiting = serializers.BooleanField(help_text="a reply is being fetched: poll the state")
    failed = serializers.BooleanField()
    can_send = serializers.BooleanField()
    can_retry = serializers.BooleanField()
    can_end = serializers.BooleanField()
    reply_expected_ms = serializers.IntegerField(allow_null=True, help_text="the median wait for a reply so far (milliseconds)")


def _chat_slot(request, token: str, position: int, *, started: bool = True) -> AssignmentItem:
    assignment = _assignment(request, token)
    slot = _slot(assignment, position)
    if not unit_for(assignment.study).collects_dialogues:
        raise NotFound(_("this study's items have no chat"))
    if started:
        _started(assignment)
    return slot


def _opened(slot: AssignmentItem) -> None:
    with service_refusals(chat_services.ChatRefused):
        chat_services.chat_open(assignment=slot.assignment, item_id=slot.item_id)
    if slot.answered_at is None:
        assignment_item_open(slot=slot)


def _state(slot: AssignmentItem) -> dict:
    return selectors.chat_state(slot.assignment, slot.item_id)


def _acted(slot: AssignmentItem, action) -> Response:
    with service_refusals(chat_services.ChatRefused):
        action()
    return Response(ChatStateSerializer(_state(slot)).data)


class RaterChatApi(RaterView):
    """The item's chat: opened (as its page opens it) and its state."""

    @extend_schema(responses=ChatStateSerializer, parameters=[KEY_PARAMETER], operation_id="rater_chat_state")
    def get(self, request, token, position):
        slot = _chat_slot(request, token, position)
        _opened(slot)
        chat_services.chat_replies_resume(assignment=slot.assignment, item_id=slot.item_id)
        return Response(ChatStateSerializer(_state(slot)).data)


class RaterChatTurnApi(RaterView):
    """Send the rater's message to every system of the item; the state after it (the replies in it, or
    ``waiting`` while they are fetched in the background)."""

    class InputSerializer(StrictInput):
        text = serializers.CharField(allow_blank=True, trim_whitespace=False, max_length=20000,
                                     help_text="the rater's message (at most the state's message_max_chars)")
        client_id = serializers.CharField(required=False, allow_blank=True, max_length=64,
                                          help_text="the client's id for this message: a re-send stores once")

    @extend_schema(request=InputSerializer, responses=ChatStateSerializer, parameters=[KEY_PARAMETER],
                   operation_id="rater_chat_turn")
    def post(self, request, token, position):
        slot = _chat_slot(request, token, position)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        _opened(slot)  # as the page opens it: a bot may send its first message straight away
        return _acted(slot, lambda: chat_services.chat_turn_post(
            assignment=slot.assignment, item_id=slot.item_id, text=data.validated_data["text"],
            client_id=data.validated_data.get("client_id", ""), background=settings.CHAT_BACKGROUND_REPLIES))


class RaterChatRetryApi(RaterView):
    """Ask again the systems that failed to answer the rater's last message."""

    @extend_schema(request=None, responses=ChatStateSerializer, parameters=[KEY_PARAMETER],
                   operation_id="rater_chat_retry")
    def post(self, request, token, position):
        slot = _chat_slot(request, token, position)
        return _acted(slot, lambda: chat_services.chat_reply_retry(
            assignment=slot.assignment, item_id=slot.item_id, background=settings.CHAT_BACKGROUND_REPLIES))


class RaterChatEndApi(RaterView):
    """End the chat (after ``min_turns`` exchanges, or at any time after a system failed); the item then
    takes its answer. Ending an ended chat answers the same."""

    @extend_schema(request=None, responses=ChatStateSerializer, parameters=[KEY_PARAMETER],
                   operation_id="rater_chat_end")
    def post(self, request, token, position):
        slot = _chat_slot(request, token, position)
        return _acted(slot, lambda: chat_services.chat_end(assignment=slot.assignment, item_id=slot.item_id))
