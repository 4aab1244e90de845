"""The corpus browser in the API: one corpus's conversations found by text, system and speaker (paged by
limit/offset), and one conversation as raters would see it with its system, judged speaker, persona and
settings. The same reads as the pages (``studies.corpora.browsing``); another researcher's corpus is a 404."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies.api.base import ApiView
from studies.api.inputs import PAGE_PARAMETERS, paginate, query_params_checked
from studies.corpora import browsing

MAX_QUERY = 200


class ConversationRowSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField(help_text="the id the file gave it")
    system = serializers.SerializerMethodField(help_text="metadata.system: the system whose dialogue it is (dialogue corpora)")
    speakers = serializers.SerializerMethodField()
    turns = serializers.SerializerMethodField(help_text="the number of turns")
    responses = serializers.IntegerField(source="responses_count")
    preview = serializers.SerializerMethodField(help_text="the first turns, shortened")

    def get_system(self, conversation) -> str:
        metadata = conversation.metadata if isinstance(conversation.metadata, dict) else {}
        return str(metadata.get("system") or "")

    def get_speakers(self, conversation) -> list[str]:
        return browsing.conversation_speakers(conversation)

    def get_turns(self, conversation) -> int:
        return len(conversation.turns or [])

    def get_preview(self, conversation) -> str:
        return browsing.preview_text(conversation)


class ShownTurnSerializer(serializers.Serializer):
    speaker = serializers.CharField()
    text = serializers.CharField(allow_blank=True)
    side = serializers.ChoiceField(choices=["side-a", "side-b"], help_text="the side of the rater page it is shown on")
    judged = serializers.BooleanField(help_text="a turn of the judged speaker (marked on an ACUTE-Eval page)")


class ShownResponseSerializer(serializers.Serializer):
    system = serializers.CharField()
    text = serializers.CharField()
    position = serializers.IntegerField()
    is_reference = serializers.BooleanField()


class ConversationShownSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField()
    corpus = serializers.SlugField()
    system = serializers.CharField(allow_blank=True)
    judged_speaker = serializers.CharField(allow_blank=True, help_text="empty: the system's speaker is judged")
    speakers = serializers.ListField(child=serializers.CharField())
    turns = ShownTurnSerializer(many=True)
    responses = ShownResponseSerializer(many=True)
    persona = serializers.DictField(child=serializers.JSONField(),
                                    help_text="persona, personas, bot_persona_strings, context, system_prompt (where set)")
    settings = serializers.DictField(child=serializers.JSONField(), help_text="the rest of the conversation's metadata")


def _corpus(request, slug: str):
    return get_object_or_404(browsing.corpora_browsed(request.user), slug=slug)


class CorpusConversationListApi(ApiView):
    """A corpus's conversations in import order; ``q`` (text in a turn or response), ``system`` and
    ``speaker`` (a speaker's exact name) narrow them."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=ConversationRowSerializer(many=True), operation_id="corpus_conversation_list",
                   parameters=[OpenApiParameter("q", str, description="words in a turn or a response (any case)"),
                               OpenApiParameter("system", str, description="a system's name"),
                               OpenApiParameter("speaker", str, description="a speaker's exact name")])
    def get(self, request, slug):
        corpus = _corpus(request, slug)
        query_params_checked(request, {*PAGE_PARAMETERS, "q", "system", "speaker"})
        wanted = {k: request.query_params.get(k, "").strip()[:MAX_QUERY] for k in ("q", "system", "speaker")}
        found = browsing.conversations_found(corpus, text=wanted["q"], system=wanted["system"],
                                             speaker=wanted["speaker"])
        return paginate(self, found, request, ConversationRowSerializer)


class CorpusConversationDetailApi(ApiView):
    @extend_schema(responses=ConversationShownSerializer, operation_id="corpus_conversation_read")
    def get(self, request, slug, pk):
        corpus = _corpus(request, slug)
        conversation = get_object_or_404(corpus.conversations.select_related("corpus"), pk=pk)
        return Response(ConversationShownSerializer(browsing.conversation_shown(conversation)).data)
