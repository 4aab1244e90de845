"""Invites and places: a study's invitations listed and revoked, its assignments (the places
raters hold) listed and freed. For the researcher's own studies (``_visible_study``: another's is a
404). Raters appear by pseudonym, never by platform id."""
from __future__ import annotations

from datetime import datetime, timedelta

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies.api.base import ApiView
from studies.api.errors import Conflict
from studies.api.inputs import PAGE_PARAMETERS, choice_param, paginate, query_params_checked
from studies.api.serializers import InviteOutputSerializer
from studies.api.views import _visible_study
from studies.models import Assignment
from studies.pseudonyms import rater_pseudonym
from studies.rating import invites, review


class AssignmentOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    rater = serializers.SerializerMethodField(help_text="the rater's pseudonym in this experiment")
    rater_id = serializers.IntegerField(help_text="the rater's id in the review routes (/studies/<slug>/raters/<id>/)")
    status = serializers.ChoiceField(choices=Assignment.Status.choices)
    started_at = serializers.DateTimeField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    items = serializers.IntegerField(source="items_count")
    expires_at = serializers.SerializerMethodField(help_text="a started place is freed at this time (time limit)")

    def get_rater(self, assignment) -> str:
        return rater_pseudonym(assignment.study.experiment_id, assignment.rater_id)

    def get_expires_at(self, assignment) -> datetime | None:
        if assignment.status != Assignment.Status.STARTED:
            return None
        return assignment.started_at + timedelta(minutes=review.time_limit_minutes(assignment.study))


class InviteRevokeApi(ApiView):
    """The link stops working now; the place its rater holds (a started assignment) is freed."""

    @extend_schema(request=None, responses=InviteOutputSerializer, operation_id="invite_revoke")
    def post(self, request, slug, pk):
        invite = get_object_or_404(_visible_study(request, slug).invites, pk=pk)
        return Response(InviteOutputSerializer(invites.invite_revoke(invite=invite)).data)


class AssignmentListApi(ApiView):
    """The places raters hold or held (``status``: started, submitted, approved, rejected, abandoned)."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=AssignmentOutputSerializer(many=True), operation_id="assignment_list",
                   parameters=[OpenApiParameter("status", str, enum=[v for v, _ in Assignment.Status.choices])])
    def get(self, request, slug):
        from django.db.models import Count

        study = _visible_study(request, slug)
        query_params_checked(request, {*PAGE_PARAMETERS, "status"})
        assignments = (study.assignments.select_related("study").annotate(items_count=Count("assignment_items"))
                       .order_by("-started_at", "-pk"))
        if wanted := choice_param(request, "status", [v for v, _ in Assignment.Status.choices]):
            assignments = assignments.filter(status=wanted)
        return paginate(self, assignments, request, AssignmentOutputSerializer)


class AssignmentFreeApi(ApiView):
    """Free a started place now (its items go back to the pool); 409 for one that is not started."""

    @extend_schema(request=None, responses=AssignmentOutputSerializer, operation_id="assignment_free")
    def post(self, request, slug, pk):
        from django.db.models import Count

        assignments = _visible_study(request, slug).assignments.annotate(items_count=Count("assignment_items"))
        assignment = get_object_or_404(assignments.select_related("study"), pk=pk)
        if assignment.status != Assignment.Status.STARTED:
            raise Conflict(f"assignment {assignment.pk} is {assignment.status}; only a started one holds a place")
        review.assignment_abandon(assignment=assignment, reason="freed by the researcher")
        return Response(AssignmentOutputSerializer(get_object_or_404(assignments.select_related("study"), pk=pk)).data)
