"""Researcher API for the study workflow (studies.authoring.editing, studies.authoring.planning, studies.reports.browser_selectors):
change settings, duplicate, delete a draft, re-open, pause, resume, pay plan, collaborators, and the
item & rating browser. Same visibility rule as the rest of the API: another researcher's study is a 404."""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies import access
from studies.api.base import ApiView, django_errors
from studies.api.inputs import PAGE_PARAMETERS, StrictInput, query_params_checked, whole_param
from studies.api.schema_fields import DesignConfigField
from studies.api.serializers import CriterionSerializer, StudyOutputSerializer
from studies.api.views import _state_error, _visible_study
from studies.authoring import editing, planning
from studies.authoring import services as authoring
from studies.errors import StudyStateError
from studies.models import Design, Study
from studies.reports import browser_selectors
from studies.reports.exporting import raw_ids_requested


class QuestionSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=60)
    kind = serializers.CharField(max_length=10, help_text="yes_no, choice or text")
    question = serializers.CharField(max_length=300)
    required = serializers.BooleanField(default=False)
    choices = serializers.ListField(child=serializers.CharField(max_length=100), required=False, max_length=50)


class StudySettingsApi(ApiView):
    """Change any of a study's settings; only the fields sent change. The design, its configuration,
    the criteria and the platform change only while the study is a draft no rater has started
    (400 on ``design`` says why otherwise); text, pay and limits change at any time."""

    class InputSerializer(StrictInput):
        title = serializers.CharField(max_length=200, required=False)
        design = serializers.ChoiceField(choices=Design.choices, required=False)
        design_config = DesignConfigField(required=False)
        criteria = CriterionSerializer(many=True, required=False)
        platform = serializers.ChoiceField(choices=[c for c in Study.Platform.choices if c[0] != "benchmark"],
                                           required=False)
        instructions = serializers.CharField(required=False, allow_blank=True)
        consent_text = serializers.CharField(required=False, allow_blank=True)
        language = serializers.ChoiceField(choices=settings.LANGUAGES, required=False,
                                           help_text="the rater pages' own words; the researcher's texts stay as written")
        language_from_browser = serializers.BooleanField(
            required=False, help_text="use the rater's browser language where the rater pages have it")
        questionnaire = QuestionSerializer(many=True, required=False)
        raters_per_item = serializers.IntegerField(min_value=1, max_value=100_000, required=False)
        items_per_assignment = serializers.IntegerField(min_value=1, max_value=100_000, required=False)
        reward = serializers.DecimalField(max_digits=8, decimal_places=2, min_value=0, required=False,
                                          allow_null=True, help_text="per assignment; null clears it")
        estimated_minutes = serializers.IntegerField(min_value=1, max_value=authoring.TIME_LIMIT_MAX_MINUTES,
                                                     required=False, allow_null=True)
        time_limit_minutes = serializers.IntegerField(min_value=1, max_value=authoring.TIME_LIMIT_MAX_MINUTES,
                                                      required=False, allow_null=True)
        closes_at = serializers.DateTimeField(required=False, allow_null=True,
                                              help_text="the deadline (in the future); null: none")

    class OutputSerializer(serializers.Serializer):
        study = StudyOutputSerializer()
        notes = serializers.ListField(child=serializers.CharField())

    @extend_schema(request=InputSerializer, responses=OutputSerializer, operation_id="study_settings_update")
    def patch(self, request, slug):
        study = _visible_study(request, slug)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        for key in ("time_limit_minutes", "closes_at"):
            if key in values:
                value = values[key]
                values[key] = "" if value is None else (value.isoformat() if key == "closes_at" else value)
        if "questionnaire" in values:
            values["questionnaire"] = [dict(q) for q in values["questionnaire"]]
        if "criteria" in values:
            values["criteria"] = [dict(c) for c in values["criteria"]]
        try:
            study, notes = editing.study_update(study=study, values=values)
        except DjangoValidationError as error:
            raise django_errors(error) from None
        study = _visible_study(request, study.slug)
        return Response(self.OutputSerializer({"study": study, "notes": notes}).data)


class StudyDuplicateApi(ApiView):
    """A new draft copy (settings, criteria, items; no raters), in the same experiment."""

    class InputSerializer(StrictInput):
        title = serializers.CharField(max_length=200, required=False, allow_blank=True)
        experiment = serializers.SlugField(required=False, allow_blank=True,
                                           help_text="another experiment of yours; blank: the study's own")

    @extend_schema(request=InputSerializer, responses={201: StudyOutputSerializer}, operation_id="study_duplicate")
    def post(self, request, slug):
        study = _visible_study(request, slug)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        target = None
        if data.validated_data.get("experiment"):
            target = access.experiments_visible_to(request.user).filter(
                is_benchmark=False, slug=data.validated_data["experiment"]).first()
            if target is None:
                raise ValidationError({"experiment": ["no experiment of yours has this slug"]})
        try:
            copy = editing.study_duplicate(study=study, title=data.validated_data.get("title") or None,
                                           experiment=target)
        except DjangoValidationError as error:
            raise django_errors(error) from None
        except StudyStateError as error:
            raise _state_error(error) from None
        return Response(StudyOutputSerializer(_visible_study(request, copy.slug)).data, status=status.HTTP_201_CREATED)


class StudyDeleteApi(ApiView):
    """Delete a draft that no rater has started (400 on ``status`` otherwise)."""

    @extend_schema(request=None, responses={204: None}, operation_id="study_delete")
    def post(self, request, slug):
        try:
            editing.study_delete(study=_visible_study(request, slug))
        except StudyStateError as error:
            raise _state_error(error) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


class _StudyStateApi(ApiView):
    operation = None

    def post(self, request, slug):
        try:
            study = type(self).operation(study=_visible_study(request, slug))
        except StudyStateError as error:
            raise _state_error(error) from None
        return Response(StudyOutputSerializer(_visible_study(request, study.slug)).data)


class StudyPauseApi(_StudyStateApi):
    """A published study stops taking new raters; assignments in progress may finish."""

    operation = staticmethod(editing.study_pause)

    @extend_schema(request=None, responses=StudyOutputSerializer, operation_id="study_pause")
    def post(self, request, slug):
        return super().post(request, slug)


class StudyResumeApi(_StudyStateApi):
    """A paused study takes new raters again."""

    operation = staticmethod(editing.study_resume)

    @extend_schema(request=None, responses=StudyOutputSerializer, operation_id="study_resume")
    def post(self, request, slug):
        return super().post(request, slug)


class StudyReopenApi(_StudyStateApi):
    """closed -> published, unless it would close again at once (past deadline, items complete)."""

    operation = staticmethod(editing.study_reopen)

    @extend_schema(request=None, responses=StudyOutputSerializer, operation_id="study_reopen")
    def post(self, request, slug):
        return super().post(request, slug)


class StudyPayPlanApi(ApiView):
    """Reward, minutes per assignment (the pilot's median once raters have submitted, else the
    estimate), hourly rate = reward / (minutes / 60), raters needed and the rewards in total."""

    class OutputSerializer(serializers.Serializer):
        reward = serializers.DecimalField(max_digits=8, decimal_places=2, allow_null=True)
        estimated_minutes = serializers.IntegerField(allow_null=True)
        pilot_minutes = serializers.FloatField(allow_null=True)
        pilot_assignments = serializers.IntegerField()
        minutes = serializers.FloatField(allow_null=True)
        source = serializers.CharField(allow_null=True, help_text="pilot, estimate or null")
        hourly_rate = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
        places = serializers.IntegerField()
        total_rewards = serializers.DecimalField(max_digits=14, decimal_places=2, allow_null=True)
        currency = serializers.CharField(help_text="USD on Mechanical Turk; empty: the platform account's currency")

    @extend_schema(responses=OutputSerializer, operation_id="study_pay_plan")
    def get(self, request, slug):
        return Response(self.OutputSerializer(planning.pay_plan(_visible_study(request, slug))).data)


class CollaboratorInputSerializer(StrictInput):
    user = serializers.CharField(max_length=254, help_text="username or e-mail address")


class CollaboratorsOutputSerializer(serializers.Serializer):
    owner = serializers.CharField(allow_null=True)
    collaborators = serializers.ListField(child=serializers.CharField())


class _CollaboratorsMixin:
    OutputSerializer = CollaboratorsOutputSerializer

    @staticmethod
    def _output(experiment) -> dict:
        return {"owner": experiment.owner.get_username() if experiment.owner else None,
                "collaborators": [u.get_username() for u in experiment.collaborators.order_by("username")]}

    def _experiment(self, request, slug):
        return get_object_or_404(access.experiments_visible_to(request.user), slug=slug)

    def change(self, request, slug, operation):
        experiment = self._experiment(request, slug)
        data = CollaboratorInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            operation(experiment=experiment, by=request.user, identifier=data.validated_data["user"])
        except StudyStateError as error:
            raise ValidationError({"user": [str(error)]}) from None
        except DjangoValidationError as error:
            raise django_errors(error) from None
        return Response(self.OutputSerializer(self._output(experiment)).data)


class ExperimentCollaboratorsApi(_CollaboratorsMixin, ApiView):
    """Who may work on the experiment besides its owner; the owner (or staff) adds by username or e-mail."""

    @extend_schema(responses=CollaboratorsOutputSerializer, operation_id="experiment_collaborators_list")
    def get(self, request, slug):
        return Response(self.OutputSerializer(self._output(self._experiment(request, slug))).data)

    @extend_schema(request=CollaboratorInputSerializer, responses=CollaboratorsOutputSerializer,
                   operation_id="experiment_collaborators_add")
    def post(self, request, slug):
        return self.change(request, slug, editing.experiment_collaborator_add)


class ExperimentCollaboratorRemoveApi(_CollaboratorsMixin, ApiView):
    """Take an account's access away (the owner or staff)."""

    @extend_schema(request=CollaboratorInputSerializer, responses=CollaboratorsOutputSerializer,
                   operation_id="experiment_collaborators_remove")
    def post(self, request, slug):
        return self.change(request, slug, editing.experiment_collaborator_remove)


class StudyBrowserApi(ApiView):
    """Items with their ratings per rater and criterion, and each rater's quality flags; paged by ``limit``
    and ``offset`` as every list, filtered by ``rater`` (id) or ``flagged``. Pseudonyms unless ``raw_ids``."""

    class OutputSerializer(serializers.Serializer):
        count = serializers.IntegerField()
        next = serializers.URLField(allow_null=True)
        previous = serializers.URLField(allow_null=True)
        results = inline_serializer("BrowserItem", {
            "id": serializers.IntegerField(), "position": serializers.IntegerField(),
            "conversation": serializers.CharField(allow_null=True, help_text="none on a bws_tuples item (its "
                                                  "responses come from several conversations)"),
            "check_kind": serializers.CharField(),
            "responses": inline_serializer("BrowserResponse", {
                "id": serializers.IntegerField(), "system": serializers.CharField(), "text": serializers.CharField()},
                many=True),
            "ratings": inline_serializer("BrowserRating", {
                "rater_id": serializers.IntegerField(), "rater": serializers.CharField(),
                "status": serializers.CharField(), "criterion": serializers.CharField(),
                "values": serializers.ListField(child=serializers.FloatField(allow_null=True),
                                                help_text="one per response (a dialogue in a dialogue-unit study), "
                                                          "in the responses' order (ranks in BWS)"),
                "choices": serializers.ListField(
                    child=serializers.CharField(allow_null=True),
                    help_text="bws_tuples and pairwise: best/worst or better/worse/tie per response (values are null)"),
                "seconds": serializers.FloatField(allow_null=True),
                "flags": serializers.ListField(child=serializers.CharField()),
                "loo_r": serializers.FloatField(allow_null=True)}, many=True),
        }, many=True)

    @extend_schema(parameters=[
        OpenApiParameter("limit", int), OpenApiParameter("offset", int),
        OpenApiParameter("rater", int, description="a rater id"),
        OpenApiParameter("flagged", bool, description="only raters with a quality flag"),
        OpenApiParameter("raw_ids", bool, description="platform worker ids instead of pseudonyms "
                                                      "(owners, collaborators and staff only)")],
        responses=OutputSerializer, operation_id="study_items_browse")
    def get(self, request, slug):
        study = _visible_study(request, slug)
        raw_ids = raw_ids_requested(request, [study.experiment_id])
        query_params_checked(request, {*PAGE_PARAMETERS, "rater", "flagged", "raw_ids"})
        paginator = api_settings.DEFAULT_PAGINATION_CLASS()
        paginator.default_limit = browser_selectors.PAGE_SIZE  # items carry every rating: a smaller page
        paginator.limit = paginator.get_limit(request)
        paginator.offset, paginator.request = paginator.get_offset(request), request
        paginator.count, rows = browser_selectors.item_slice(
            study, offset=paginator.offset, limit=paginator.limit, rater=whole_param(request, "rater"),
            flagged_only=request.query_params.get("flagged", "").lower() in ("1", "true"), raw_ids=raw_ids)
        results = [{
            "id": row.item.pk, "position": row.item.position,
            "conversation": row.item.conversation.external_id if row.item.conversation is not None else None,
            "check_kind": row.item.check_kind, "responses": row.responses,
            "ratings": [{"rater_id": line["rater_id"], "rater": line["rater"], "status": line["status"],
                         "criterion": line["criterion"], "seconds": line["seconds"],
                         "values": [None] * len(line["cells"]) if line["choice"] else line["cells"],
                         "choices": line["cells"] if line["choice"] else [None] * len(line["cells"]),
                         "flags": line["flags"].labels, "loo_r": line["flags"].loo_r} for line in row.ratings],
        } for row in rows]
        return Response(self.OutputSerializer({"count": paginator.count, "next": paginator.get_next_link(),
                                               "previous": paginator.get_previous_link(), "results": results}).data)
