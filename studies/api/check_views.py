"""Researcher API for attention checks and gold items (studies.authoring.checks): list, add, remove, settings.
Same visibility rule as the rest of the API: another researcher's study is a 404."""
from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies.api.base import ApiView, django_errors
from studies.api.inputs import PAGE_PARAMETERS, StrictInput, query_params_checked
from studies.api.views import _state_error, _visible_study
from studies.authoring import checks
from studies.errors import StudyStateError
from studies.models import CheckKind, StudyItem
from studies.rating.checks import checks_config
from studies.reports.check_selectors import checks_flagged

RULES_HELP = ('list of rules, responses numbered from 1: {"response": 1, "value": 2}, {"response": 1, "min": 4, '
              '"max": 6}, {"greater": 1, "than": 2} (Likert, magnitude), {"best": 1}, {"worst": 4} (BWS); '
              'optional "criterion" (default: every criterion); a categorical criterion: {"criterion": "safety", '
              '"response": 2, "label": "unsafe"}; a multi-label one: {"criterion": "problems", "response": 2, '
              '"labels": ["off-topic"]} ([] for none of these)')


LABELS_OR_LABEL = {"oneOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]}
EXPECTED_SPAN = {"type": "object", "required": ["start", "end", "label"], "properties": {
    "start": {"type": "integer"}, "end": {"type": "integer"}, "label": {"type": "string"},
    "turn": {"type": "integer", "nullable": True}}}


@extend_schema_field({"type": "object", "additionalProperties": LABELS_OR_LABEL,
                      "description": 'a per-turn criterion: the expected labels by turn index, {"1": ["redundant"]} '
                                    "(a categorical one: a label)"})
class ExpectedTurnsField(serializers.JSONField):
    pass


@extend_schema_field({"oneOf": [{"type": "array", "items": EXPECTED_SPAN}, {
    "type": "object", "required": ["spans"], "properties": {
        "spans": {"type": "array", "items": EXPECTED_SPAN}, "slack": {"type": "integer"},
        "min_overlap": {"type": "number"}}}],
    "description": "a span criterion: the expected spans (exact), or {spans, slack, min_overlap} (a tolerance)"})
class ExpectedSpansField(serializers.JSONField):
    pass


class CheckRuleSerializer(serializers.Serializer):
    """One rule of a check item (``studies.rating.check_rules``): which answer passes. The schema of a rule;
    the rules are checked (keys, criteria, values) when the check is added."""

    criterion = serializers.CharField(required=False, help_text="default: every criterion")
    response = serializers.IntegerField(required=False, help_text="the response numbered from 1 (a per-turn check, "
                                                                  "stored: its conversation's id)")
    value = serializers.FloatField(required=False)
    min = serializers.FloatField(required=False)
    max = serializers.FloatField(required=False)
    greater = serializers.IntegerField(required=False, help_text='with "than": this response scores higher')
    than = serializers.IntegerField(required=False)
    best = serializers.IntegerField(required=False, help_text="BWS: the best response")
    worst = serializers.IntegerField(required=False, help_text="BWS: the worst response")
    label = serializers.CharField(required=False, help_text="a categorical criterion's expected label")
    labels = serializers.ListField(child=serializers.CharField(), required=False,
                                   help_text="a multi-label criterion's expected labels ([] for none of these)")
    turns = ExpectedTurnsField(required=False)
    spans = ExpectedSpansField(required=False)
    min_match = serializers.FloatField(required=False, help_text="a per-turn check: the share of the listed turns "
                                                                 "that must match (default all)")


@extend_schema_field(CheckRuleSerializer(many=True))
class CheckRulesField(serializers.JSONField):
    """Rules as JSON, validated by the service (its messages name the rule); typed in the schema."""


CHECK_TURN = {"type": "object", "required": ["speaker", "text"], "properties": {
    "speaker": {"type": "string"}, "text": {"type": "string"}}}


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "array", "items": CHECK_TURN}]})
class CheckContextField(serializers.JSONField):
    pass


@extend_schema_field({"type": "array", "items": CHECK_TURN})
class CheckTurnsField(serializers.JSONField):
    """The check conversation's turns as stored (any further keys kept); typed in the schema."""


class CheckItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=CheckKind.choices)
    turns = CheckTurnsField(help_text="the check's conversation")
    responses = serializers.ListField(child=serializers.CharField())
    reference = serializers.CharField(allow_null=True)
    reference_value = serializers.FloatField(allow_null=True)
    rules = CheckRulesField(help_text=RULES_HELP)
    conversations = serializers.JSONField(help_text="a check pair of whole conversations (ACUTE-Eval): each "
                                                    "{turns, speaker} (the judged speaker); empty otherwise")
    scripted_reply = serializers.CharField(allow_null=True, help_text="a chat study's check: the bot reply shown "
                                                                      "in place of the bot's; null otherwise")
    position = serializers.IntegerField(allow_null=True, help_text="a chat study's check: the bot's reply it "
                                                                   "replaces (1 = the first); null: random per rater")


class ChecksSettingsSerializer(serializers.Serializer):
    per_assignment = serializers.IntegerField(min_value=0, max_value=checks.MAX_PER_ASSIGNMENT, required=False)
    positions = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False,
                                      max_length=checks.MAX_PER_ASSIGNMENT,
                                      help_text="1-based screens; empty: random positions")
    min_pass_rate = serializers.FloatField(min_value=0, max_value=1, required=False)


class CheckListApi(ApiView):
    class OutputSerializer(serializers.Serializer):
        count = serializers.IntegerField(help_text="how many check items the study has")
        next = serializers.URLField(allow_null=True)
        previous = serializers.URLField(allow_null=True)
        results = CheckItemSerializer(many=True, help_text="one page of the check items (limit, offset)")
        settings = ChecksSettingsSerializer()
        flagged = serializers.ListField(child=serializers.IntegerField(), help_text="assignment ids suggested for rejection")

    @extend_schema(responses=OutputSerializer, operation_id="study_checks_list",
                   parameters=[OpenApiParameter("limit", int), OpenApiParameter("offset", int)],
                   summary="The study's check items (paged as every list), check settings and the assignments that failed")
    def get(self, request, slug):
        query_params_checked(request, PAGE_PARAMETERS)  # a filter it would ignore is refused, named
        study = _visible_study(request, slug)
        paginator = api_settings.DEFAULT_PAGINATION_CLASS()
        page = paginator.paginate_queryset(checks.study_check_items(study), request, view=self)
        return Response(self.OutputSerializer({
            "count": paginator.count, "next": paginator.get_next_link(), "previous": paginator.get_previous_link(),
            "results": page, "settings": checks_config(study),
            "flagged": [a.pk for a in checks_flagged(study)]}).data)


class CheckCreateApi(ApiView):
    class InputSerializer(StrictInput):
        kind = serializers.ChoiceField(choices=CheckKind.choices)
        context = CheckContextField(required=False, default=None,
                                    help_text='turns: [{"speaker": "A", "text": "..."}] or text, one turn per line')
        responses = serializers.ListField(child=serializers.CharField(), min_length=1, required=False, default=None,
                                          help_text="the responses to judge (every design but ACUTE-Eval)")
        conversations = serializers.ListField(
            child=serializers.JSONField(), required=False, default=None,
            help_text='ACUTE-Eval: the two conversations of a check pair, each turns, text (one turn per line) or '
                      '{"turns": ..., "speaker": "bot"}; rules number them: [{"greater": 1, "than": 2}]')
        rules = CheckRulesField(help_text=RULES_HELP)
        reference = serializers.CharField(required=False, allow_null=True, default=None,
                                          help_text="magnitude designs: the reference response")
        reference_value = serializers.FloatField(required=False, allow_null=True, default=None, help_text="BME only")
        scripted_reply = serializers.CharField(required=False, allow_null=True, default=None,
                                               help_text="chat studies: the bot reply the check shows in place of "
                                                         "the bot's; rules number the rater's conversation 1")
        position = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1,
                                            help_text="chat studies: the bot's reply it replaces (1 = the first; "
                                                      "at most the turns before the rater may end); null: random")

    @extend_schema(request=InputSerializer, responses={201: CheckItemSerializer}, operation_id="study_check_create",
                   summary="Add a check item (draft studies)")
    def post(self, request, slug):
        study = _visible_study(request, slug)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            item = checks.check_item_create(study=study, **data.validated_data)
        except DjangoValidationError as error:
            raise django_errors(error) from None
        except StudyStateError as error:
            raise _state_error(error) from None
        row = next(r for r in checks.study_check_items(study) if r["id"] == item.pk)
        return Response(CheckItemSerializer(row).data, status=status.HTTP_201_CREATED)


class CheckDeleteApi(ApiView):
    @extend_schema(request=None, responses={204: None}, operation_id="study_check_delete",
                   summary="Remove a check item (draft studies)")
    def post(self, request, slug, pk):
        study = _visible_study(request, slug)
        item = get_object_or_404(StudyItem, study=study, pk=pk, check_kind__gt="")
        try:
            checks.check_item_delete(item=item)
        except StudyStateError as error:
            raise _state_error(error) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


class ChecksSettingsApi(ApiView):
    @extend_schema(request=ChecksSettingsSerializer, responses=ChecksSettingsSerializer,
                   operation_id="study_checks_settings", summary="How many checks per rater, where, and the pass rate")
    def post(self, request, slug):
        study = _visible_study(request, slug)
        data = ChecksSettingsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            study = checks.study_checks_configure(study=study, **data.validated_data)
        except DjangoValidationError as error:
            raise django_errors(error) from None
        except StudyStateError as error:
            raise _state_error(error) from None
        return Response(ChecksSettingsSerializer(checks_config(study)).data)
