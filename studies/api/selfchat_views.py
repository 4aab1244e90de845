"""Researcher API for self-chats (``studies.chat.selfchat``, the services the pages call): create a run
(into a new corpus or a self-chat corpus of your own), list and read runs with their progress, page
through a run's conversations (opener, personas, turns, the corpus conversation it became), cancel and
run again. Another researcher's run is a 404 and never listed (admins see every run, as on the pages)."""
from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies.api.base import ApiView
from studies.api.errors import Conflict
from studies.api.inputs import PAGE_PARAMETERS, StrictInput, choice_param, paginate, query_params_checked
from studies.chat import selfchat, selfchat_selectors
from studies.models import SelfChatDialogue, SelfChatRun

STATUSES = [value for value, _ in SelfChatRun.Status.choices]


class SelfChatBotInputSerializer(StrictInput):
    personas = serializers.ListField(child=serializers.CharField(max_length=selfchat.MAX_PERSONA_CHARS), required=False,
                                     max_length=selfchat.MAX_PERSONAS,
                                     help_text="one is drawn per conversation (seeded, balanced); none: no persona")
    system_prompt = serializers.CharField(max_length=4000, required=False, allow_blank=True)
    temperature = serializers.FloatField(min_value=0, max_value=2, required=False, allow_null=True)
    top_p = serializers.FloatField(min_value=0, max_value=1, required=False, allow_null=True)
    max_tokens = serializers.IntegerField(min_value=1, max_value=32000, required=False, allow_null=True)
    requests_per_minute = serializers.IntegerField(min_value=0, max_value=6000, required=False, allow_null=True,
                                                   help_text="spaces the calls to its endpoint; 0: no limit")


class SelfChatInputSerializer(StrictInput):
    title = serializers.CharField(max_length=200)
    system_a = serializers.CharField(max_length=200, help_text="the judged bot: a system you have an endpoint for")
    system_b = serializers.CharField(max_length=200, help_text="its partner (the same name: a bot with itself)")
    corpus = serializers.SlugField(required=False, allow_null=True,
                                   help_text="a self-chat corpus of yours to add to; absent: a new one")
    openers = serializers.ListField(child=serializers.CharField(max_length=selfchat.MAX_OPENER_CHARS), min_length=1,
                                    max_length=selfchat.MAX_OPENERS,
                                    help_text="opening contexts; one drawn per conversation, said by bot b")
    conversations = serializers.IntegerField(min_value=1, max_value=10000)
    turns = serializers.IntegerField(min_value=1, max_value=100, help_text="bot turns after the opener")
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False, allow_null=True,
                                    help_text="seeds the draws; absent: the corpus's first run's, else 0")
    bot_a = SelfChatBotInputSerializer(required=False)
    bot_b = SelfChatBotInputSerializer(required=False)


class SelfChatBotOutputSerializer(serializers.Serializer):
    system = serializers.CharField()
    speaker = serializers.CharField(help_text="its name in the transcripts")
    settings = serializers.DictField(help_text="system_prompt, temperature, top_p, max_tokens, requests_per_minute")
    personas = serializers.ListField(child=serializers.CharField())


class SelfChatProgressSerializer(serializers.Serializer):
    conversations = serializers.IntegerField()
    pending = serializers.IntegerField()
    running = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    turns_stored = serializers.IntegerField()
    turns_total = serializers.IntegerField()


class SelfChatBotsOutputSerializer(serializers.Serializer):
    a = SelfChatBotOutputSerializer()
    b = SelfChatBotOutputSerializer()


class SelfChatOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    status = serializers.ChoiceField(choices=SelfChatRun.Status.choices)
    error = serializers.CharField(help_text="why it stopped; empty when it did not")
    corpus = serializers.CharField(source="corpus.slug")
    system_a = serializers.CharField(source="system_a.name")
    system_b = serializers.CharField(source="system_b.name")
    openers = serializers.ListField(child=serializers.CharField())
    conversations = serializers.IntegerField()
    turns = serializers.IntegerField()
    seed = serializers.IntegerField()
    bots = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    @extend_schema_field(SelfChatBotsOutputSerializer)
    def get_bots(self, run) -> dict:
        return {bot["side"]: SelfChatBotOutputSerializer(bot).data for bot in selfchat_selectors.run_settings(run)}

    @extend_schema_field(SelfChatProgressSerializer)
    def get_progress(self, run) -> dict:
        return SelfChatProgressSerializer(selfchat.selfchat_progress(run)).data


class SelfChatTurnOutputSerializer(serializers.Serializer):
    speaker = serializers.CharField()
    text = serializers.CharField()
    opener = serializers.BooleanField(default=False, help_text="the opening context (bot b's first turn)")


class SelfChatConversationOutputSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    status = serializers.ChoiceField(choices=SelfChatDialogue.Status.choices)
    opener = serializers.CharField()
    personas = serializers.DictField(child=serializers.CharField(), help_text="{a, b}: the personas drawn")
    turns = serializers.SerializerMethodField()
    conversation = serializers.CharField(source="conversation.external_id", allow_null=True, default=None,
                                         help_text="its external_id in the corpus once done")
    error_side = serializers.CharField()
    error_kind = serializers.CharField()
    error = serializers.CharField()

    @extend_schema_field(SelfChatTurnOutputSerializer(many=True))
    def get_turns(self, dialogue) -> list:
        turns = selfchat_selectors.dialogue_turns(dialogue.run, dialogue)
        return SelfChatTurnOutputSerializer(turns, many=True).data


def _field_of(key: str) -> str:
    """The input field a service error names: ``bot_settings.a.temperature`` → ``bot_a.temperature``,
    ``personas.b`` → ``bot_b.personas``."""
    parts = key.split(".")
    if parts[0] == "bot_settings" and len(parts) == 3:
        return f"bot_{parts[1]}.{parts[2]}"
    if parts[0] == "personas" and len(parts) == 2:
        return f"bot_{parts[1]}.personas"
    return key


def _run(request, pk: int) -> SelfChatRun:
    return get_object_or_404(selfchat_selectors.selfchat_runs_of(request.user), pk=pk)


class SelfChatListApi(ApiView):
    """GET: your self-chat runs, newest first (``status``, ``corpus`` filter). POST: start one (201): the
    same checks as the page, every problem named by field (``bot_a.temperature``); nothing is written then."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=SelfChatOutputSerializer(many=True), operation_id="selfchat_list",
                   parameters=[OpenApiParameter("status", str, enum=STATUSES),
                               OpenApiParameter("corpus", str, description="the slug of the corpus it fills")])
    def get(self, request):
        query_params_checked(request, {*PAGE_PARAMETERS, "status", "corpus"})
        runs = selfchat_selectors.selfchat_runs_of(request.user).order_by("-created_at", "-pk")
        if wanted := choice_param(request, "status", STATUSES):
            runs = runs.filter(status=wanted)
        if corpus := request.query_params.get("corpus"):
            runs = runs.filter(corpus__slug=corpus)
        return paginate(self, runs, request, SelfChatOutputSerializer)

    @extend_schema(request=SelfChatInputSerializer, responses={201: SelfChatOutputSerializer},
                   operation_id="selfchat_create")
    def post(self, request):
        data = SelfChatInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        corpus = None
        if values.get("corpus"):
            corpus = selfchat_selectors.selfchat_corpora(request.user).filter(slug=values["corpus"]).first()
            if corpus is None:
                raise ValidationError({"corpus": [f"you have no self-chat corpus with the slug {values['corpus'][:80]!r}"]})
        bots = {side: dict(values.get(f"bot_{side}") or {}) for side in ("a", "b")}
        personas = {side: bot.pop("personas") for side, bot in bots.items() if bot.get("personas")}
        settings = {side: {k: v for k, v in bot.items() if v not in (None, "")} for side, bot in bots.items()}
        try:
            run = selfchat.selfchat_create(
                owner=request.user, corpus=corpus, title=values["title"], system_a=values["system_a"],
                system_b=values["system_b"], openers=values["openers"], conversations=values["conversations"],
                turns=values["turns"], seed=values.get("seed"), bot_settings=settings, personas=personas)
        except DjangoValidationError as error:
            raise ValidationError({_field_of(key): problems for key, problems in error.message_dict.items()}) from None
        return Response(SelfChatOutputSerializer(_run(request, run.pk)).data, status=status.HTTP_201_CREATED)


class SelfChatDetailApi(ApiView):
    """One run of yours: its settings and progress."""

    @extend_schema(responses=SelfChatOutputSerializer, operation_id="selfchat_read")
    def get(self, request, pk):
        query_params_checked(request, ())
        return Response(SelfChatOutputSerializer(_run(request, pk)).data)


class SelfChatConversationListApi(ApiView):
    """A run's conversations in order (``status`` filters): opener, personas, the turns so far, the corpus
    conversation each became, and why one failed."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=SelfChatConversationOutputSerializer(many=True), operation_id="selfchat_conversation_list",
                   parameters=[OpenApiParameter("status", str, enum=list(SelfChatDialogue.Status.values))])
    def get(self, request, pk):
        run = _run(request, pk)
        query_params_checked(request, {*PAGE_PARAMETERS, "status"})
        dialogues = run.dialogues.select_related("conversation", "run__system_a", "run__system_b").order_by("index")
        if wanted := choice_param(request, "status", list(SelfChatDialogue.Status.values)):
            dialogues = dialogues.filter(status=wanted)
        return paginate(self, dialogues, request, SelfChatConversationOutputSerializer)


class _RunAction(ApiView):
    service = staticmethod(selfchat.selfchat_rerun)

    def post(self, request, pk):
        run = _run(request, pk)
        try:
            self.service(run=run)
        except DjangoValidationError as error:
            raise Conflict(" ".join(error.messages)) from None
        return Response(SelfChatOutputSerializer(_run(request, pk)).data)


class SelfChatCancelApi(_RunAction):
    """Stop a queued or running run before its next call (409 when done or cancelled already); the
    finished conversations stay in the corpus."""

    service = staticmethod(selfchat.selfchat_cancel)

    @extend_schema(request=None, responses=SelfChatOutputSerializer, operation_id="selfchat_cancel")
    def post(self, request, pk):
        return super().post(request, pk)


class SelfChatRerunApi(_RunAction):
    """Queue a failed or cancelled run again: it continues from the stored turns (409 when done)."""

    service = staticmethod(selfchat.selfchat_rerun)

    @extend_schema(request=None, responses=SelfChatOutputSerializer, operation_id="selfchat_rerun")
    def post(self, request, pk):
        return super().post(request, pk)
