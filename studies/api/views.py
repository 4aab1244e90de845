"""Researcher API: one view per operation, nested input/output serializers (HackSoft style).

A researcher sees only experiments they own or were given; anything else is a 404, never a 403,
so the API does not confirm that another researcher's study exists."""
from __future__ import annotations

import os
import tempfile
from urllib.parse import urlencode

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies import access
from studies.api.base import ApiView, django_errors
from studies.api.errors import Conflict
from studies.api.inputs import PAGE_PARAMETERS, StrictInput, choice_param, paginate, query_params_checked
from studies.api.report_schemas import ReliabilityReportSerializer
from studies.api.schema_fields import DesignConfigField
from studies.api.serializers import (
    CriterionSerializer,
    ImportInputSerializer,
    ImportOutputSerializer,
    InviteOutputSerializer,
    ProgressSerializer,
    StudyOutputSerializer,
)
from studies.authoring import selectors as study_selectors
from studies.authoring import services as authoring
from studies.compute_pool import Offloaded
from studies.corpora import selectors as corpus_selectors
from studies.corpora import services as corpus_imports
from studies.corpora.importing.records import ImportFailed
from studies.corpora.importing.uploads import SizeLimitUploadHandler
from studies.errors import StudyStateError
from studies.models import DEFAULT_ITEMS_PER_ASSIGNMENT, DEFAULT_RATERS_PER_ITEM, Design, ImportJob, Study, Unit
from studies.rating import closing, invites
from studies.rating.links import study_entry_path
from studies.reports import label_selectors, per_turn_selectors, system_scores
from studies.reports import selectors as report_selectors
from studies.reports.exporting import EXPORT_FORMATS, no_store, ratings_response, raw_ids_requested
from studies.reports.position_selectors import position_report


def _state_error(error: StudyStateError) -> Conflict:
    """A write the study's state does not allow (publishing a closed study, editing a published one): 409."""
    return Conflict(str(error))


def _visible_study(request, slug: str) -> Study:
    return get_object_or_404(access.studies_visible_to(request.user).prefetch_related("criteria"), slug=slug)


class ExperimentListApi(ApiView):
    class OutputSerializer(serializers.Serializer):
        slug = serializers.SlugField()
        title = serializers.CharField()
        description = serializers.CharField()
        is_benchmark = serializers.BooleanField()
        studies = inline_serializer("ExperimentStudy", {
            "slug": serializers.SlugField(), "design": serializers.CharField(), "status": serializers.CharField(),
        }, many=True, source="studies.all")

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS  # tells the schema that the list is paginated

    @extend_schema(responses=OutputSerializer(many=True))
    def get(self, request):
        query_params_checked(request, PAGE_PARAMETERS)
        experiments = access.experiments_visible_to(request.user).prefetch_related("studies").order_by("pk")
        return paginate(self, experiments, request, self.OutputSerializer)


class ExperimentCreateApi(ApiView):
    class InputSerializer(StrictInput):
        title = serializers.CharField(max_length=200)
        slug = serializers.SlugField(required=False)
        description = serializers.CharField(required=False, allow_blank=True, default="")

    @extend_schema(request=InputSerializer, responses={201: ExperimentListApi.OutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            experiment = authoring.experiment_create(owner=request.user, **data.validated_data)
        except DjangoValidationError as error:
            raise django_errors(error) from None
        return Response(ExperimentListApi.OutputSerializer(experiment).data, status=status.HTTP_201_CREATED)


class StudyListApi(ApiView):
    """The studies you can see, filtered by ``experiment`` (slug), ``status`` and ``design``."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=StudyOutputSerializer(many=True), parameters=[
        OpenApiParameter("experiment", str, description="an experiment's slug"),
        OpenApiParameter("status", str, enum=[value for value, _ in Study.Status.choices]),
        OpenApiParameter("design", str, enum=[value for value, _ in Design.choices])])
    def get(self, request):
        query_params_checked(request, {*PAGE_PARAMETERS, "experiment", "status", "design"})
        studies = access.studies_visible_to(request.user).prefetch_related("criteria").order_by("pk")
        if experiment := request.query_params.get("experiment"):
            studies = studies.filter(experiment__slug=experiment)
        if wanted := choice_param(request, "status", [value for value, _ in Study.Status.choices]):
            studies = studies.filter(status=wanted)
        if design := choice_param(request, "design", [value for value, _ in Design.choices]):
            studies = studies.filter(design=design)
        return paginate(self, studies.select_related("experiment"), request, StudyOutputSerializer)


class StudyCreateApi(ApiView):
    class InputSerializer(StrictInput):
        experiment = serializers.SlugField()
        title = serializers.CharField(max_length=200)
        design = serializers.ChoiceField(choices=Design.choices)
        design_config = DesignConfigField(required=False, default=dict)
        criteria = CriterionSerializer(many=True, required=False)
        raters_per_item = serializers.IntegerField(min_value=1, max_value=100_000, default=DEFAULT_RATERS_PER_ITEM)
        items_per_assignment = serializers.IntegerField(min_value=1, max_value=100_000,
                                                        default=DEFAULT_ITEMS_PER_ASSIGNMENT)
        instructions = serializers.CharField(required=False, allow_blank=True, default="")
        platform = serializers.ChoiceField(choices=Study.Platform.choices, default=Study.Platform.INVITE)
        slug = serializers.SlugField(required=False)
        unit = serializers.ChoiceField(choices=Unit.choices, default=Unit.RESPONSE,
                                       help_text="what a rating judges: a response, the whole dialogue, or a chat "
                                                 "the rater has with a system first")
        unit_config = serializers.DictField(
            required=False, default=dict,
            help_text="the unit's settings; chat: systems_per_chat (1, or 2 side by side), min_turns, max_turns, "
                      "message_max_chars, messages_per_minute")

    @extend_schema(request=InputSerializer, responses={201: StudyOutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        experiment = get_object_or_404(access.experiments_visible_to(request.user), slug=values.pop("experiment"))
        try:
            study = authoring.study_create(experiment=experiment, **values)
        except DjangoValidationError as error:
            raise django_errors(error) from None
        return Response(StudyOutputSerializer(study).data, status=status.HTTP_201_CREATED)


class StudyDetailApi(ApiView):
    @extend_schema(responses=StudyOutputSerializer)
    def get(self, request, slug):
        return Response(StudyOutputSerializer(_visible_study(request, slug)).data)


class StudyPublishApi(ApiView):
    @extend_schema(request=None, responses=StudyOutputSerializer)
    def post(self, request, slug):
        try:
            study = authoring.study_publish(study=_visible_study(request, slug))
        except StudyStateError as error:
            raise _state_error(error) from None
        return Response(StudyOutputSerializer(study).data)


class StudyCloseApi(ApiView):
    @extend_schema(request=None, responses=StudyOutputSerializer)
    def post(self, request, slug):
        try:
            study = closing.study_close(study=_visible_study(request, slug))
        except StudyStateError as error:
            raise _state_error(error) from None
        return Response(StudyOutputSerializer(study).data)


class InviteLinkSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    label = serializers.CharField()
    url = serializers.CharField()
    expires_at = serializers.DateTimeField()


class InviteCreateApi(ApiView):
    """Single-use invitation links to an invite-platform study, valid for ``expires_in_days``: one, or
    ``count`` at once (as the study page makes them; all or none). The answer is the first link, and every
    link made under ``invites``."""

    class InputSerializer(StrictInput):
        label = serializers.CharField(max_length=120, required=False, allow_blank=True, default="")
        expires_in_days = serializers.IntegerField(min_value=1, max_value=invites.INVITE_DAYS_MAX,
                                                   default=invites.INVITE_DAYS_DEFAULT)
        count = serializers.IntegerField(min_value=1, max_value=invites.INVITES_AT_ONCE_MAX, default=1,
                                         help_text="how many links to make (each works once)")

    class OutputSerializer(InviteLinkSerializer):
        invites = InviteLinkSerializer(many=True, help_text="every link made, the first one first")

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=InviteOutputSerializer(many=True), operation_id="invite_list", parameters=[
        OpenApiParameter("status", str, enum=list(invites.INVITE_STATUSES)),
        OpenApiParameter("label", str, description="the links made for this label (exact)")])
    def get(self, request, slug):
        study = _visible_study(request, slug)
        query_params_checked(request, {*PAGE_PARAMETERS, "status", "label"})
        listed = study.invites.all()
        if wanted := choice_param(request, "status", invites.INVITE_STATUSES):
            listed = invites.invites_with_status(listed, wanted)
        if "label" in request.query_params:
            listed = listed.filter(label=request.query_params["label"])
        return paginate(self, listed.order_by("-created_at", "-pk"), request, InviteOutputSerializer)

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer}, operation_id="invite_create")
    def post(self, request, slug):
        study = _visible_study(request, slug)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        try:
            made = invites.invites_create(study=study, created_by=request.user, **values)
        except DjangoValidationError as error:
            raise django_errors(error) from None
        links = [{"id": invite.pk, "label": invite.label, "expires_at": invite.expires_at,
                  "url": request.build_absolute_uri(f"{study_entry_path(study)}?{urlencode({'invite': invite.token})}")}
                 for invite in made]
        output = {**links[0], "invites": links}
        return Response(self.OutputSerializer(output).data, status=status.HTTP_201_CREATED)


class StudyRaterSettingsApi(ApiView):
    """The rater-side settings of a study (``authoring.study_rater_settings_set``): Prolific's fixed
    completion and screened-out codes, the completion URL, the time limit, the closing time and
    whether the study closes once every item has its raters. Only the keys sent change; blank clears."""

    class InputSerializer(StrictInput):
        completion_code = serializers.CharField(required=False, allow_blank=True, max_length=40)
        screened_out_code = serializers.CharField(required=False, allow_blank=True, max_length=40)
        completion_url = serializers.CharField(required=False, allow_blank=True, max_length=500)
        time_limit_minutes = serializers.CharField(required=False, allow_blank=True, max_length=10)
        closes_at = serializers.CharField(required=False, allow_blank=True, max_length=40,
                                          help_text="ISO 8601, in the future; blank: no closing time")
        close_when_complete = serializers.BooleanField(required=False)
        currency = serializers.CharField(required=False, allow_blank=True, max_length=3,
                                         help_text="ISO 4217 code the reward is paid in (Prolific, invitations; "
                                                   "MTurk is always USD); blank: GBP on Prolific, else USD")

    class OutputSerializer(serializers.Serializer):
        slug = serializers.SlugField()
        platform = serializers.CharField()
        settings = serializers.DictField(help_text="the rater-side keys of platform_config")

    def _output(self, study: Study) -> dict:
        config = study.platform_config or {}
        return {"slug": study.slug, "platform": study.platform,
                "settings": {key: config[key] for key in authoring.RATER_SETTINGS if key in config}}

    @extend_schema(responses=OutputSerializer, operation_id="study_rater_settings_read")
    def get(self, request, slug):
        return Response(self.OutputSerializer(self._output(_visible_study(request, slug))).data)

    @extend_schema(request=InputSerializer, responses=OutputSerializer, operation_id="study_rater_settings_set")
    def post(self, request, slug):
        study = _visible_study(request, slug)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            study = authoring.study_rater_settings_set(study=study, values=data.validated_data)
        except DjangoValidationError as error:
            raise django_errors(error) from None
        return Response(self.OutputSerializer(self._output(study)).data)


class ExperimentLinkApi(ApiView):
    """The experiment's one link (``/r/x/<experiment>/``): each new rater goes to the least-filled open
    condition. ``problem`` says why the conditions cannot share one link (mixed platforms), if so."""

    class OutputSerializer(serializers.Serializer):
        url = serializers.CharField()
        platform = serializers.CharField(allow_null=True)
        conditions = serializers.ListField(child=serializers.SlugField())
        problem = serializers.CharField(allow_null=True)

    @extend_schema(responses=OutputSerializer, operation_id="experiment_link")
    def get(self, request, slug):
        from studies.rating import allocation

        experiment = get_object_or_404(access.experiments_visible_to(request.user), slug=slug)
        link = allocation.experiment_link(experiment)
        output = {"url": request.build_absolute_uri(reverse("raters:experiment_entry", args=[experiment.slug])),
                  "platform": link["platform"], "conditions": [s.slug for s in link["conditions"]],
                  "problem": link["problem"] or None}
        return Response(self.OutputSerializer(output).data)


class StudyProgressApi(ApiView):
    @extend_schema(responses=ProgressSerializer)
    def get(self, request, slug):
        return Response(ProgressSerializer(study_selectors.study_progress(_visible_study(request, slug))).data)


class StudyItemListApi(ApiView):
    # the project's (bounded limit/offset, config.pagination); also tells the schema that the list is paginated
    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        position = serializers.IntegerField()
        conversation = serializers.CharField(source="conversation.external_id", allow_null=True,
                                             help_text="empty for a best-worst tuple: see each response's")
        turns = serializers.JSONField(source="conversation.turns", allow_null=True)
        responses = inline_serializer("ItemResponse", {
            "id": serializers.IntegerField(), "system": serializers.CharField(source="system.name"),
            "text": serializers.CharField(),
            "conversation": serializers.CharField(source="conversation.external_id"),
        }, many=True, source="responses.all")
        reference_response = serializers.IntegerField(source="reference_response_id", allow_null=True)
        reference_conversation = serializers.CharField(
            source="reference_conversation.external_id", allow_null=True, default=None,
            help_text="dialogue-unit RME: the anchor dialogue (the item's own conversation is what is rated)")
        reference_value = serializers.FloatField(allow_null=True)
        check_kind = serializers.CharField(help_text="gold or instructed for a check item (studies.rating.checks), else empty")

    @extend_schema(responses=OutputSerializer(many=True))
    def get(self, request, slug):
        study = _visible_study(request, slug)
        items = study.items.select_related("conversation", "reference_conversation") \
            .prefetch_related("responses__system", "responses__conversation").order_by("position")
        query_params_checked(request, PAGE_PARAMETERS)
        return paginate(self, items, request, self.OutputSerializer)


class StudyItemsBuildApi(ApiView):
    class InputSerializer(StrictInput):
        corpus = serializers.SlugField(required=False, allow_null=True, default=None,
                                       help_text="where the items come from (a chat study needs none)")
        systems = serializers.ListField(child=serializers.SlugField(), required=False,
                                        help_text="a chat study: the systems (with endpoints) raters chat with")
        reference_system = serializers.SlugField(required=False, allow_null=True, default=None)
        limit = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)
        seed = serializers.IntegerField(default=0)
        reference_conversation = serializers.CharField(
            required=False, allow_null=True, default=None, max_length=120,
            help_text="dialogue-unit RME: the external id of the anchor dialogue (else reference_system's first)")

    @extend_schema(request=InputSerializer, responses=inline_serializer("ItemsBuilt", {"items": serializers.IntegerField()}))
    def post(self, request, slug):
        study = _visible_study(request, slug)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        slug = values.pop("corpus")
        corpus = get_object_or_404(corpus_selectors.corpora_visible_to(request.user), slug=slug) if slug else None
        try:
            count = authoring.study_items_build(study=study, corpus=corpus, **values)
        except DjangoValidationError as error:
            raise django_errors(error) from None
        except StudyStateError as error:
            raise _state_error(error) from None
        return Response({"items": count})


class DialoguesImportApi(ApiView):
    """Upload a dialogue file. Synchronous by default (all or nothing: 400 lists the problems by line
    and field); ``run_in_background`` queues a worker job and answers 202 with its id."""

    parser_classes = [MultiPartParser]  # a file: multipart only (one encoding for generated clients)

    def initial(self, request, *args, **kwargs):
        # Before anything reads the body: count the upload as it streams and stop at the limit.
        self.size_limit = SizeLimitUploadHandler(request._request)
        request._request.upload_handlers.insert(0, self.size_limit)
        super().initial(request, *args, **kwargs)

    @extend_schema(request=ImportInputSerializer, responses={201: ImportOutputSerializer, 202: inline_serializer("ImportJobQueued", {
        "job": serializers.IntegerField(), "status": serializers.CharField()})})
    def post(self, request):
        received = request.data
        if self.size_limit.exceeded:
            raise ValidationError({"file": [self.size_limit.message()]})
        data = ImportInputSerializer(data=received)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        upload = values["file"]
        if values["run_in_background"] and values["more_files"]:
            raise ValidationError({"more_files": ["several files are imported at once; leave run_in_background off"]})
        if values["run_in_background"] and values["judged_speaker"]:
            raise ValidationError({"judged_speaker": ["a background import keeps the file's judged speakers; leave "
                                                      "run_in_background off to choose one"]})
        if values["run_in_background"]:
            from django.conf import settings

            folder = settings.MEDIA_ROOT / "imports"
            folder.mkdir(parents=True, exist_ok=True)
            handle, path = tempfile.mkstemp(dir=folder, suffix="-" + os.path.basename(upload.name)[-100:])
            try:
                with os.fdopen(handle, "wb") as out:
                    for chunk in upload.chunks():
                        out.write(chunk)
            except OSError:
                os.unlink(path)
                raise
            try:
                job = corpus_imports.import_job_create(owner=request.user, path=path, source_name=upload.name,
                                                 source_format=values["format"],
                                                 corpus_slug=values.get("corpus") or "", systems=values["systems"])
            except Exception:
                os.unlink(path)
                raise
            return Response({"job": job.pk, "status": job.status}, status=status.HTTP_202_ACCEPTED)
        try:
            summary = corpus_imports.dialogues_import(
                stream=upload.file, source_name=upload.name, source_format=values["format"],
                corpus_slug=values.get("corpus") or None, owner=request.user, systems=values["systems"],
                more_files=[(f.name, f.file) for f in values["more_files"]], judged_speaker=values["judged_speaker"],
            )
        except ImportFailed as failure:
            raise ValidationError(_import_problems(failure)) from None
        corpus_imports.import_recorded(owner=request.user, source_name=upload.name, source_format=summary.format,
                                       summary=summary)
        return Response(ImportOutputSerializer(summary.as_dict()).data, status=status.HTTP_201_CREATED)


def _import_problems(failure: ImportFailed) -> dict[str, list[str]]:
    """The problems by request field: the corpus name's under ``corpus`` (the field the client sent), the
    file's (by line and field) under ``file``."""
    found: dict[str, list[str]] = {}
    for problem in failure.problems:
        if problem.line is None and problem.field == "corpus" and not problem.source:
            found.setdefault("corpus", []).append(problem.message)
        else:
            found.setdefault("file", []).append(str(problem))
    if failure.detected and "file" in found:
        found["format"] = [f"read as {failure.detected} (detected)"]
    return found


class ImportJobDetailApi(ApiView):
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        status = serializers.ChoiceField(choices=ImportJob.Status.choices)
        source_name = serializers.CharField()
        message = serializers.CharField()
        counts = serializers.DictField()

    @extend_schema(responses=OutputSerializer)
    def get(self, request, pk):
        job = get_object_or_404(ImportJob.objects.filter(owner=request.user), pk=pk)
        return Response(self.OutputSerializer(job).data)


class RatingsExportApi(Offloaded, ApiView):
    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=list(EXPORT_FORMATS), default="csv"),
                    OpenApiParameter("raw_ids", bool, description="platform worker ids instead of pseudonyms "
                                                                  "(owners, collaborators and staff only)")],
        responses={(200, "text/csv"): OpenApiTypes.STR, (200, "application/x-ndjson"): OpenApiTypes.STR,
                   (200, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"): OpenApiTypes.BINARY},
    )
    def get(self, request, slug):
        study = _visible_study(request, slug)
        export_format = request.query_params.get("format", "csv")
        if export_format not in EXPORT_FORMATS:
            raise ValidationError({"format": f"use one of {', '.join(EXPORT_FORMATS)}"})
        return ratings_download(Study.objects.filter(pk=study.pk), export_format, study.slug,
                                raw_ids=raw_ids_requested(request, [study.experiment_id]))


def ratings_download(studies, export_format: str, name: str, *, raw_ids: bool = False):
    """The ratings export as a download (raters by pseudonym unless ``raw_ids``), never cached."""
    return ratings_response(studies, export_format, name, raw_ids=raw_ids)


class ReportApiMixin:
    @staticmethod
    def report_response(request, studies) -> Response:
        exclude = request.query_params.get("exclude_flagged") in ("1", "true")
        raw_ids = raw_ids_requested(request, set(studies.values_list("experiment_id", flat=True)))
        report = report_selectors.reliability_report(studies, exclude_flagged=exclude, raw_ids=raw_ids)
        # Criteria answered by labels or free text: the report page's labels section (label_selectors), and
        # no "no ratings" note while such answers exist (the numeric tables are empty by design then).
        labelled = label_selectors.label_report(studies, exclude_flagged=exclude,
                                                excluded_raters=report.excluded_raters)
        data = {**report.as_dict(), "positions": position_report(studies), "labels": labelled,
                "per_turn": per_turn_selectors.per_turn_report(studies, exclude_flagged=exclude,
                                                               excluded_raters=report.excluded_raters)}
        if any(entry["n"] for entry in labelled) or any(entry["turns"] for entry in data["per_turn"]):
            data["notes"] = [note if not note.startswith("No submitted ratings yet") else
                             "No numeric ratings: these criteria are answered by labels or text (see labels)."
                             for note in data.get("notes", [])]
        # Each design's own section under its key ("pairwise", "bws_tuples"; empty where no study is of it).
        own = report_selectors.design_sections(studies, report, exclude_flagged=exclude)
        data.update({section.key: section.data for section in own})
        data["system_scores"] = system_scores.system_scores(report, own)  # the page's first section
        return no_store(Response(data))


REPORT_PARAMETERS = [OpenApiParameter("exclude_flagged", bool, description="recompute without flagged raters"),
                     OpenApiParameter("raw_ids", bool, description="platform worker ids instead of pseudonyms "
                                                                   "(owners, collaborators and staff only)")]


class StudyReportApi(Offloaded, ReportApiMixin, ApiView):
    """Reliability report of one study: ICC tables 1-7, Table 9, completion time, Krippendorff's alpha,
    raters needed, rater quality, system means (see studies.analysis.report), position effects."""

    @extend_schema(parameters=REPORT_PARAMETERS, responses=ReliabilityReportSerializer)
    def get(self, request, slug):
        study = _visible_study(request, slug)
        return self.report_response(request, Study.objects.filter(pk=study.pk))


class ExperimentReportApi(Offloaded, ReportApiMixin, ApiView):
    """Reliability report of an experiment: its conditions side by side, plus ANOVA and Tukey HSD."""

    @extend_schema(parameters=REPORT_PARAMETERS, responses=ReliabilityReportSerializer)
    def get(self, request, slug):
        experiment = get_object_or_404(access.experiments_visible_to(request.user), slug=slug)
        return self.report_response(request, experiment.studies.all())
