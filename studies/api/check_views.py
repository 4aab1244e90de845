"""Researcher API for attention checks and gold items (studies.authoring.checks): list, add, remove, settings.
Same visibility rule as the rest of the API: another researcher's study is a 404."""
from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
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


class CheckItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=CheckKind.choices)
    turns = serializers.JSONField()
    responses = serializers.ListField(child=serializers.CharField())
    reference = serializers.CharField(allow_null=True)
    reference_value = serializers.FloatField(allow_null=True)
    rules = serializers.JSONField(help_text=RULES_HELP)
    conversations = serializers.JSONField(help_text="a check pair of whole conversations (ACUTE-Eval): each "
                                                    "{turns, speaker} (the judged speaker); empty otherwise")


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
        context = serializers.JSONField(required=False, default=None,
                                        help_text='turns: [{"speaker": "A", "text": "..."}] or text, one turn per line')
        responses = serializers.ListField(child=serializers.CharField(), min_length=1, required=False, default=None,
                                          help_text="the responses to judge (every design but ACUTE-Eval)")
        conversations = serializers.ListField(
            child=serializers.JSONField(), required=False, default=None,
            help_text='ACUTE-Eval: the two conversations of a check pair, each turns, text (one turn per line) or '
                      '{"turns": ..., "speaker": "bot"}; rules number them: [{"greater": 1, "than": 2}]')
        rules = serializers.JSONField(help_text=RULES_HELP)
        reference = serializers.CharField(required=False, allow_null=True, default=None,
                                          help_text="magnitude designs: the reference response")
        reference_value = serializers.FloatField(required=False, allow_null=True, default=None, help_text="BME only")

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
