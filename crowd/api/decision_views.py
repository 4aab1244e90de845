"""Crowd API for a reviewer's platform decisions on one rater of a study (the review pages' approve,
reject and bonus, ``crowd.views.rater_decide``), through the same service (``crowd.rater_decisions``):
sent to MTurk or Prolific first, recorded only once the platform accepted. Keep and exclude are Concord's
own (``studies.api.review_views``). Staff or the experiment's owner only (these calls spend money or
reach workers); anyone else gets a 404, as does a rater without an assignment in the study. A platform
error is a 502 naming the call; a refusal a 400 naming the field, nothing recorded."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from crowd import rater_decisions, selectors
from crowd.api.views import CrowdApiView
from studies.api.inputs import StrictInput
from studies.api.review_views import DecisionSerializer
from studies.models import Assignment


class RaterPlatformDecisionApi(CrowdApiView):
    """Approve, reject (the worker sees ``reason``) or bonus (``amount`` in the publication's currency)
    the rater's platform assignment. A bonus sent twice (same amount and reason) pays once."""

    class InputSerializer(StrictInput):
        kind = serializers.ChoiceField(choices=list(rater_decisions.PLATFORM_KINDS))
        reason = serializers.CharField(max_length=1000, help_text="the worker sees it; the decision keeps it")
        amount = serializers.DecimalField(max_digits=8, decimal_places=2, required=False, allow_null=True,
                                          min_value=0, help_text="a bonus's amount")
        rejection_category = serializers.CharField(required=False, allow_blank=True, default="",
                                                   help_text="Prolific's rejection category, for a reject")

    @extend_schema(request=InputSerializer, responses={201: DecisionSerializer}, operation_id="crowd_rater_decide")
    def post(self, request, slug, rater):
        study = get_object_or_404(selectors.studies_managed_by(request.user), slug=slug)
        assignment = get_object_or_404(Assignment, study=study, rater_id=rater)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        decision = rater_decisions.rater_platform_decide(assignment=assignment, user=request.user,
                                                         **data.validated_data)
        return Response(DecisionSerializer(decision).data, status=status.HTTP_201_CREATED)
