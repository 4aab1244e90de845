"""Ratings in and out in other tools' shapes: a study's ratings as a Label Studio task export (with the
labeling configuration that shows them), and a long-format table of ratings collected elsewhere imported
into a study (``studies.authoring.ratings_import``)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from studies.api.base import ApiView
from studies.api.views import _state_error, _visible_study
from studies.authoring.ratings_import import RatingsImportFailed, ratings_table_import
from studies.errors import StudyStateError
from studies.reports.label_studio_export import label_studio_config, label_studio_tasks


class LabelStudioExportApi(ApiView):
    class OutputSerializer(serializers.Serializer):
        label_config = serializers.CharField(help_text="Label Studio's labeling configuration (XML) for these tasks")
        tasks = serializers.ListField(child=serializers.DictField(), help_text="Label Studio tasks with annotations")

    @extend_schema(responses=OutputSerializer, operation_id="study_label_studio_export")
    def get(self, request, slug):
        """The study's ratings as Label Studio tasks (one per rated target, one annotation per rater)."""
        study = _visible_study(request, slug)
        return Response({"label_config": label_studio_config(study), "tasks": label_studio_tasks(study)})


class RatingsImportApi(ApiView):
    parser_classes = [MultiPartParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(help_text="CSV or XLSX: rater, conversation, system, criterion, value")

    class OutputSerializer(serializers.Serializer):
        study = serializers.SlugField()
        ratings = serializers.IntegerField()
        raters = serializers.IntegerField()

    @extend_schema(request={"multipart/form-data": InputSerializer}, responses={201: OutputSerializer},
                   operation_id="study_ratings_import")
    def post(self, request, slug):
        """Import a long-format table of ratings into the study (all or nothing; problems by row); it is closed."""
        study = _visible_study(request, slug)
        given = self.InputSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        upload = given.validated_data["file"]
        try:
            summary = ratings_table_import(study=study, stream=upload.file, source_name=upload.name)
        except RatingsImportFailed as failure:
            raise ValidationError({"file": failure.problems}) from None
        except StudyStateError as error:
            raise _state_error(error) from None
        return Response({"study": summary.study.slug, "ratings": summary.ratings, "raters": summary.raters},
                        status=status.HTTP_201_CREATED)
