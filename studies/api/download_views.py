"""The report pages' files and switches in the API: the report as CSV/XLSX and its SVG figures (a study's or
an experiment's), the experiment's ratings in one file, a chat study's transcripts, the live reliability
rule, and drawing more items at random from a study's frame. Each answers with what the page answers
(``studies.reports.downloads``, ``ratings_response``, ``studies.chat.selectors``, the live and draw services);
a study or experiment you cannot see is a 404."""
from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from studies import access
from studies.api.base import ApiView, django_errors
from studies.api.errors import Conflict
from studies.api.inputs import StrictInput, choice_param, query_params_checked
from studies.api.views import REPORT_PARAMETERS, _visible_study
from studies.authoring.item_draws import study_items_extend
from studies.chat.transcripts import transcripts_response
from studies.compute_pool import Offloaded
from studies.designs import design_for, unit_for
from studies.errors import StudyStateError
from studies.models import Study
from studies.reports import downloads, live_services
from studies.reports.exporting import EXPORT_FORMATS, ratings_response, raw_ids_requested
from studies.reports.live_selectors import live_config

FLAGS = ("exclude_flagged", "raw_ids")
FILE_RESPONSES = {(200, "text/csv"): OpenApiTypes.STR, (200, downloads.XLSX): OpenApiTypes.BINARY}


def _flag(request, name: str) -> bool:
    return request.query_params.get(name) in ("1", "true")


def _experiment_studies(request, slug: str):
    experiment = get_object_or_404(access.experiments_visible_to(request.user), slug=slug)
    return experiment, experiment.studies.all()


def _study_studies(request, slug: str):
    study = _visible_study(request, slug)
    return study, Study.objects.filter(pk=study.pk)


class _ReportDownload(Offloaded, ApiView):
    scope = staticmethod(_study_studies)

    @extend_schema(parameters=[
        OpenApiParameter("format", str, enum=list(downloads.REPORT_FORMATS), default="csv"),
        OpenApiParameter("table", str, enum=list(downloads.CSV_TABLES), default="icc",
                         description="the CSV's table (XLSX holds every table, one sheet each)"),
        *REPORT_PARAMETERS], responses=FILE_RESPONSES)
    def get(self, request, slug):
        query_params_checked(request, {"format", "table", *FLAGS})
        export_format = choice_param(request, "format", downloads.REPORT_FORMATS) or "csv"
        table = choice_param(request, "table", downloads.CSV_TABLES) or "icc"
        target, studies = self.scope(request, slug)
        return downloads.report_file(studies, target.slug, export_format, table=table,
                                     exclude_flagged=_flag(request, "exclude_flagged"),
                                     raw_ids=raw_ids_requested(request, set(studies.values_list("experiment_id", flat=True))))


class StudyReportDownloadApi(_ReportDownload):
    """The study's report as a file, as the report page's downloads: CSV (one table) or XLSX (every table)."""


class ExperimentReportDownloadApi(_ReportDownload):
    """The experiment's report (its conditions side by side) as a file: CSV (one table) or XLSX (every table)."""

    scope = staticmethod(_experiment_studies)


class _ReportFigure(Offloaded, ApiView):
    scope = staticmethod(_study_studies)

    @extend_schema(parameters=[OpenApiParameter("exclude_flagged", bool, description="recompute without flagged raters")],
                   responses={(200, "image/svg+xml"): OpenApiTypes.STR},
                   description="A report figure as SVG. Names: " + ", ".join(downloads.FIGURE_KINDS) + ".")
    def get(self, request, slug, name):
        query_params_checked(request, {"exclude_flagged"})
        _, studies = self.scope(request, slug)
        svg = downloads.report_figure_svg(studies, name, exclude_flagged=_flag(request, "exclude_flagged"))
        if svg is None:
            raise NotFound(f"the report has no figure {name[:80]!r}")
        return downloads.svg_response(svg)


class StudyReportFigureApi(_ReportFigure):
    pass


class ExperimentReportFigureApi(_ReportFigure):
    scope = staticmethod(_experiment_studies)


class ExperimentRatingsApi(Offloaded, ApiView):
    """Every rating of the experiment's conditions in one file (a between-subjects analysis reads them
    together), raters by pseudonym unless ``raw_ids``."""

    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=list(EXPORT_FORMATS), default="csv"), REPORT_PARAMETERS[1]],
        responses={(200, "text/csv"): OpenApiTypes.STR, (200, "application/x-ndjson"): OpenApiTypes.STR,
                   (200, downloads.XLSX): OpenApiTypes.BINARY})
    def get(self, request, slug):
        query_params_checked(request, {"format", "raw_ids"})
        export_format = choice_param(request, "format", EXPORT_FORMATS) or "csv"
        experiment, studies = _experiment_studies(request, slug)
        return ratings_response(studies, export_format, experiment.slug,
                                raw_ids=raw_ids_requested(request, [experiment.pk]))


class StudyChatsApi(ApiView):
    """A chat study's transcripts as JSON lines: one chat a line, its turns with their timing (raters by
    pseudonym unless ``raw_ids``). A study whose items have no chat: 404."""

    @extend_schema(parameters=[REPORT_PARAMETERS[1]], responses={(200, "application/x-ndjson"): OpenApiTypes.STR})
    def get(self, request, slug):
        query_params_checked(request, {"raw_ids"})
        study = _visible_study(request, slug)
        if not unit_for(study).collects_dialogues:
            raise NotFound("only chat studies have transcripts")
        return transcripts_response(study, raw_ids=raw_ids_requested(request, [study.experiment_id]))


class LiveRuleSerializer(serializers.Serializer):
    target = serializers.FloatField(help_text="the reliability aimed at, between 0 and 1")
    form = serializers.ChoiceField(choices=live_services.LIVE_FORMS, help_text="the ICC the target applies to")
    close_when_reached = serializers.BooleanField(
        help_text="close the study once every criterion's lower 95% bound of the ICC reaches the target")


class LiveRuleOutputSerializer(LiveRuleSerializer):
    closed = serializers.BooleanField(help_text="the rule closed the study just now (PUT only; false on GET)")


class StudyLiveApi(ApiView):
    """The study's live reliability rule, as on the study page: the target, the ICC it applies to, and
    whether reaching it closes the study. PUT sets it and applies the rule at once (``closed``). A design
    without a live ICC (pairwise, best-worst): 400 under ``live_config``."""

    class InputSerializer(StrictInput):
        target = serializers.FloatField(help_text="between 0 and 1 (exclusive)")
        form = serializers.ChoiceField(choices=live_services.LIVE_FORMS, required=False, default="ICC(A,k)")
        close_when_reached = serializers.BooleanField(required=False, default=False)

    @extend_schema(responses=LiveRuleOutputSerializer)
    def get(self, request, slug):
        query_params_checked(request, set())
        study = _visible_study(request, slug)
        if not design_for(study).live_icc:
            raise ValidationError({"live_config": [f"does not apply: {design_for(study).live_icc_absent}"]})
        return Response(LiveRuleOutputSerializer({**live_config(study), "closed": False}).data)

    @extend_schema(request=InputSerializer, responses=LiveRuleOutputSerializer)
    def put(self, request, slug):
        study = _visible_study(request, slug)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            study = live_services.study_live_config_set(study=study, **data.validated_data)
        except DjangoValidationError as error:  # "live_config.target" -> "target": the field as sent
            raise ValidationError({key.removeprefix("live_config."): problems
                                   for key, problems in error.message_dict.items()}) from None
        closed = live_services.study_close_if_reliable(study=study)
        return Response(LiveRuleOutputSerializer({**live_config(study), "closed": closed}).data)


class StudyItemsExtendApi(ApiView):
    """Draw ``count`` more items at random from the study's frame (the prediction-powered planner's "draw
    more items"): shaped like the existing ones, handed to the next raters first. ``expected_items`` is the
    item count you saw: a repeat that finds more adds nothing (400 under ``count``)."""

    class InputSerializer(StrictInput):
        count = serializers.IntegerField(min_value=1, max_value=100000)
        expected_items = serializers.IntegerField(min_value=0, required=False, allow_null=True,
                                                  help_text="the study's item count as you last saw it")

    class OutputSerializer(serializers.Serializer):
        added = serializers.IntegerField()
        items = serializers.IntegerField(help_text="the study's item count now")
        corpus = serializers.CharField(help_text="the corpus the items were drawn from")

    @extend_schema(request=InputSerializer, responses=OutputSerializer)
    def post(self, request, slug):
        study = _visible_study(request, slug)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            with transaction.atomic():
                added = study_items_extend(study=study, count=data.validated_data["count"],
                                           expected_items=data.validated_data.get("expected_items"))
        except DjangoValidationError as error:
            raise django_errors(error) from None
        except StudyStateError as error:
            raise Conflict(str(error)) from None
        study.refresh_from_db()
        return Response(self.OutputSerializer({"added": added, "items": study.items.filter(check_kind="").count(),
                                               "corpus": study.item_draw.get("corpus_slug", "")}).data)
