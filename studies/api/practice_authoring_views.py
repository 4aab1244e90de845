"""Researcher API for writing a study's practice (the study page's Practice card,
``studies.authoring.practice_views``), through the same services (``studies.onboarding.services``):
add a practice item, remove one, set the pass mark, share the practice with the experiment's other
conditions. Drafts only, as on the page (409 otherwise); every problem names its field (``rules.0.value``,
``explanation``) with nothing written; another researcher's study is a 404."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response

from studies.api.base import ApiView
from studies.api.check_views import RULES_HELP
from studies.api.inputs import StrictInput
from studies.api.practice_views import PracticeItemSerializer, PracticeListApi
from studies.api.views import _visible_study
from studies.models import PracticeItem
from studies.onboarding import selectors, services


def _panel(study) -> dict:
    panel = selectors.study_practice_panel(study)
    return {"pass_mark": panel["pass_mark"], "owner_wide": panel["owner_wide"], "items": panel["items"],
            "max_wrong": panel["max_wrong"], "retakes": panel["retakes"]}


class PracticeItemCreateApi(ApiView):
    """Add a practice item to a draft study: the conversation, the responses shown (in this order), the
    expected answer as check rules and the explanation the rater reads after answering."""

    class InputSerializer(StrictInput):
        context = serializers.JSONField(help_text='turns: [{"speaker": "A", "text": "..."}] or text, one turn a line; '
                                                  'a chat study\'s practice transcript: speakers "user" and "bot"')
        responses = serializers.JSONField(required=False, default=None,
                                          help_text="the responses to judge: a list, or text with one a line (not "
                                                    "for a conversation judged whole: a dialogue-unit or chat study, "
                                                    "whose practice item is the conversation in `context`)")
        rules = serializers.JSONField(help_text="the expected answer: " + RULES_HELP)
        explanation = serializers.CharField(max_length=services.MAX_EXPLANATION,
                                            help_text="Markdown: why the expected answer is right")
        reference = serializers.CharField(required=False, allow_null=True, default=None,
                                          help_text="magnitude designs: the reference response")
        reference_value = serializers.FloatField(required=False, allow_null=True, default=None, help_text="BME only")

    @extend_schema(request=InputSerializer, responses={201: PracticeItemSerializer},
                   operation_id="study_practice_item_create", summary="Add a practice item (draft studies)")
    def post(self, request, slug):
        study = _visible_study(request, slug)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = services.practice_item_create(study=study, **data.validated_data)
        row = next(r for r in selectors.study_practice_panel(study)["items"] if r["item"].pk == item.pk)
        return Response(PracticeItemSerializer(row).data, status=status.HTTP_201_CREATED)


class PracticeItemDetailApi(ApiView):
    """Remove a practice item (draft studies); the others are renumbered and the pass mark never exceeds
    what is left."""

    @extend_schema(request=None, responses={204: None}, operation_id="study_practice_item_destroy")
    def delete(self, request, slug, pk):
        study = _visible_study(request, slug)
        services.practice_item_delete(item=get_object_or_404(PracticeItem, study=study, pk=pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class PracticeSettingsApi(ApiView):
    """The pass mark (practice items a rater must agree with, from 1 to their number) and whether a pass
    in any of your experiments counts (draft studies)."""

    class InputSerializer(StrictInput):
        pass_mark = serializers.IntegerField(help_text="from 1 to the number of practice items")
        owner_wide = serializers.BooleanField(required=False, default=False)
        max_wrong = serializers.IntegerField(required=False, allow_null=True, default=None,
                                             help_text="the most wrong answers before the practice ends as failed "
                                                       "(null: no limit)")
        retakes = serializers.IntegerField(required=False, default=0,
                                           help_text="how many times a rater who failed may start again")

    @extend_schema(request=InputSerializer, responses=PracticeListApi.OutputSerializer,
                   operation_id="study_practice_settings_update")
    def put(self, request, slug):
        study = _visible_study(request, slug)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.onboarding_configure(study=study, **data.validated_data)
        return Response(PracticeListApi.OutputSerializer(_panel(study)).data)


class PracticeShareApi(ApiView):
    """Use this study's practice in every other draft condition of its experiment with the same design and
    criteria; the others are listed with the reason they were skipped."""

    @extend_schema(request=None, operation_id="study_practice_share", responses=inline_serializer("PracticeShared", {
        "updated": serializers.ListField(child=serializers.SlugField(), help_text="the conditions given the practice"),
        "skipped": inline_serializer("PracticeSkipped", {"study": serializers.SlugField(),
                                                         "reason": serializers.CharField()}, many=True)}))
    def post(self, request, slug):
        updated, skipped = services.practice_share(study=_visible_study(request, slug))
        return Response({"updated": [s.slug for s in updated],
                         "skipped": [{"study": s.slug, "reason": why} for s, why in skipped]})
