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


class LabelStudioTurnSerializer(serializers.Serializer):
    author = serializers.CharField(allow_blank=True)
    text = serializers.CharField(allow_blank=True)


class LabelStudioTaskDataSerializer(serializers.Serializer):
    conversation_id = serializers.CharField(allow_null=True, allow_blank=True)
    dialogue = LabelStudioTurnSerializer(many=True, help_text="the turns, as Label Studio's <Paragraphs> shows them")
    response = serializers.CharField(required=False, allow_blank=True, help_text="the judged response (not in a "
                                                                                 "dialogue-unit study)")
    system = serializers.CharField(required=False, allow_null=True, allow_blank=True)


class LabelStudioValueSerializer(serializers.Serializer):
    rating = serializers.IntegerField(required=False, help_text="a scale answer shown as stars")
    number = serializers.FloatField(required=False, help_text="any other scale answer")
    choices = serializers.ListField(child=serializers.CharField(), required=False, help_text="a label or label set")
    text = serializers.ListField(child=serializers.CharField(), required=False, help_text="free text or a reason")


class LabelStudioResultSerializer(serializers.Serializer):
    id = serializers.CharField()
    from_name = serializers.CharField(help_text="the criterion (<criterion>-rationale: its reason)")
    to_name = serializers.CharField()
    origin = serializers.CharField()
    type = serializers.ChoiceField(choices=["rating", "number", "choices", "textarea"])
    value = LabelStudioValueSerializer()


class LabelStudioAnnotationSerializer(serializers.Serializer):
    completed_by = serializers.IntegerField(help_text="the rater's number in this export (1, 2, ...)")
    was_cancelled = serializers.BooleanField()
    ground_truth = serializers.BooleanField()
    result = LabelStudioResultSerializer(many=True)


class LabelStudioTaskSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    data = LabelStudioTaskDataSerializer()
    annotations = LabelStudioAnnotationSerializer(many=True, help_text="one per rater who answered the target")


class LabelStudioExportApi(ApiView):
    class OutputSerializer(serializers.Serializer):
        label_config = serializers.CharField(help_text="Label Studio's labeling configuration (XML) for these tasks")
        tasks = LabelStudioTaskSerializer(many=True, help_text="Label Studio tasks with annotations")

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
