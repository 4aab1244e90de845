"""Researcher API for rater onboarding (studies.onboarding), read-only: a study's practice items with
their expected answers and explanations, its pass mark, and how raters have done (attempts passed and
failed, the pass rate, the practice items most often answered against the expected answer). Same
visibility rule as the rest of the API: another researcher's study is a 404. Rater identities are not
shown: practice results are figures, as in the report's Practice section."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from studies.api.base import ApiView
from studies.api.check_views import RULES_HELP
from studies.api.views import _visible_study
from studies.onboarding import selectors


class PracticeItemSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="item.id")
    number = serializers.IntegerField(help_text="1-based, in the order raters see them")
    turns = serializers.JSONField()
    responses = serializers.ListField(child=serializers.CharField(), help_text="in the fixed order shown (A, B, ...)")
    reference = serializers.CharField(source="item.reference_response.text", allow_null=True, default=None)
    reference_value = serializers.FloatField(source="item.reference_value", allow_null=True)
    rules = serializers.JSONField(help_text="the expected answer: " + RULES_HELP)
    explanation = serializers.CharField(source="item.explanation", help_text="Markdown, shown after answering")


class PracticeListApi(ApiView):
    class OutputSerializer(serializers.Serializer):
        pass_mark = serializers.IntegerField(help_text="practice items a rater must agree with (0: no practice)")
        owner_wide = serializers.BooleanField(help_text="a pass in any of the researcher's experiments counts")
        max_wrong = serializers.IntegerField(allow_null=True, required=False,
                                             help_text="the most wrong answers before the practice ends as failed")
        retakes = serializers.IntegerField(required=False, help_text="retakes a rater who failed may take")
        items = PracticeItemSerializer(many=True)

    @extend_schema(responses=OutputSerializer, operation_id="study_practice_list",
                   summary="The study's practice items with their expected answers, and the pass mark")
    def get(self, request, slug):
        study = _visible_study(request, slug)
        panel = selectors.study_practice_panel(study)
        return Response(self.OutputSerializer({"pass_mark": panel["pass_mark"], "owner_wide": panel["owner_wide"],
                                               "max_wrong": panel["max_wrong"], "retakes": panel["retakes"],
                                               "items": panel["items"]}).data)


class PracticeItemResultSerializer(serializers.Serializer):
    number = serializers.IntegerField(help_text="1-based, in the order raters see them")
    answered = serializers.IntegerField()
    failed = serializers.IntegerField(help_text="answers against the expected answer")
    fail_rate = serializers.FloatField(allow_null=True, help_text="failed / answered; null when unanswered")


class PracticeResultsApi(ApiView):
    class OutputSerializer(serializers.Serializer):
        pass_mark = serializers.IntegerField()
        in_practice = serializers.IntegerField(help_text="attempts started and not finished")
        finished = serializers.IntegerField()
        passed = serializers.IntegerField()
        failed = serializers.IntegerField()
        pass_rate = serializers.FloatField(allow_null=True, help_text="passed / finished; null before any finished")
        items = PracticeItemResultSerializer(many=True, help_text="practice items, most often failed first")

    @extend_schema(responses=OutputSerializer, operation_id="study_practice_results",
                   summary="How raters have done in the study's practice: pass rate, items most often failed")
    def get(self, request, slug):
        study = _visible_study(request, slug)
        report = selectors.practice_report([study])
        row = report["studies"][0] if report and report["studies"] else {
            "finished": 0, "passed": 0, "failed": 0, "in_practice": 0, "pass_rate": None,
            "pass_mark": selectors.effective_pass_mark(study)}
        items = [{"number": i["number"], "answered": i["answered"], "failed": i["failed"], "fail_rate": i["fail_rate"]}
                 for i in (report or {}).get("items", [])]
        return Response(self.OutputSerializer({**row, "items": items}).data)
