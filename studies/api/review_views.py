"""Researcher API for the rater review (the pages of ``studies.reports.review_views``), through the same
selectors and services: the study's review queue (flagged raters, undecided first, and the most disputed
items), each rater's evidence (every flag with its figure and threshold, the check items, agreement,
position habit, speed, competence, active time, the decisions), keep/exclude decisions and their reversal
(``studies.rating.decisions``). Approve, reject and bonus go to the platform: ``crowd.api`` takes them
(``POST /api/crowd/studies/<slug>/raters/<rater>/decisions/``). Raters are named by pseudonym unless the
researcher asks for raw ids (``raw_ids=1``, where the experiment allows it). Another researcher's study is a
404, as is a rater without an assignment in the study."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from studies import access
from studies.api.base import ApiView
from studies.api.inputs import StrictInput, query_params_checked
from studies.api.schema_fields import number
from studies.models import RaterDecision
from studies.rating import decisions
from studies.reports import rater_evidence, review_queue
from studies.reports.exporting import raw_ids_requested

RAW_IDS = OpenApiParameter("raw_ids", bool, description="name raters by their platform ids (where allowed)")


def _study(request, slug):
    return get_object_or_404(access.studies_visible_to(request.user), slug=slug)


class FlagSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    figure = number(help_text="null: too little to compute")
    threshold = serializers.FloatField()
    rule = serializers.CharField(help_text="raised when the figure is below or above the threshold")
    raised = serializers.BooleanField()
    detail = serializers.CharField()


class DecisionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=RaterDecision.Kind.choices)
    reason = serializers.CharField()
    amount = serializers.DecimalField(max_digits=8, decimal_places=2, allow_null=True)
    platform_note = serializers.CharField()
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True, default=None)
    decided_at = serializers.DateTimeField()
    reverted_at = serializers.DateTimeField(allow_null=True)
    standing = serializers.SerializerMethodField(help_text="not reverted")

    def get_standing(self, decision) -> bool:
        return decision.reverted_at is None


class QueueRaterSerializer(serializers.Serializer):
    rater = serializers.IntegerField(source="rater_id", help_text="the rater's id in this API's rater routes")
    name = serializers.CharField(help_text="a pseudonym (or the platform id with raw_ids)")
    assignment = serializers.IntegerField(source="assignment.pk")
    status = serializers.CharField(source="assignment.status")
    checks_failed = serializers.BooleanField(source="assignment.checks_failed")
    excluded = serializers.BooleanField(source="assignment.excluded")
    raised = FlagSerializer(many=True, help_text="the flags that put the rater in the queue")
    verdict = DecisionSerializer(allow_null=True, help_text="the standing keep or exclude, null: undecided")


class DisputedItemSerializer(serializers.Serializer):
    item = serializers.IntegerField(source="item.pk")
    position = serializers.IntegerField(source="item.position")
    figure = serializers.FloatField(help_text="0 (all agree) to 1 (as disputed as can be)")
    what = serializers.CharField(help_text="the figure's criterion and kind")
    answers = serializers.DictField(child=serializers.IntegerField(), required=False,
                                    help_text="labels or choices: how many gave each")
    raters = serializers.ListField(child=serializers.CharField(), help_text="pseudonyms")


class ExclusionSerializer(serializers.Serializer):
    study = serializers.SlugField()
    rater = serializers.CharField()
    reason = serializers.CharField()


class ReviewQueueApi(ApiView):
    """The study's review queue: flagged raters (undecided first, then by flags raised), the most disputed
    items, and who was excluded and why."""

    class OutputSerializer(serializers.Serializer):
        raters = QueueRaterSerializer(many=True)
        items = DisputedItemSerializer(many=True)
        exclusions = ExclusionSerializer(many=True)

    @extend_schema(responses=OutputSerializer, parameters=[RAW_IDS], operation_id="study_review_queue")
    def get(self, request, slug):
        query_params_checked(request, {"raw_ids"})
        study = _study(request, slug)
        raw_ids = raw_ids_requested(request, [study.experiment_id])
        return Response(self.OutputSerializer({
            "raters": review_queue.flagged_raters(study, raw_ids=raw_ids),
            "items": review_queue.disputed_items(study),
            "exclusions": rater_evidence.exclusions(access.studies_visible_to(request.user).filter(pk=study.pk)),
        }).data)


class CheckResultSerializer(serializers.Serializer):
    item = serializers.IntegerField()
    position = serializers.IntegerField(help_text="1-based screen")
    kind = serializers.CharField()
    passed = serializers.BooleanField(allow_null=True, help_text="null until the assignment is submitted")


class AgreementSerializer(serializers.Serializer):
    criterion = serializers.CharField()
    ac1 = number(required=False, help_text="labels: Gwet's AC1 with the others' majority (the flag's figure)")
    agreement = number(required=False, help_text="labels: raw agreement with the others' majority")
    kappa = number(required=False, help_text="labels: Cohen's κ with the others' majority (shown, not flagged: "
                                             "a prevalent label makes it 0 at high agreement)")
    share = number(required=False, help_text="A/B: share of choices agreeing with the Bradley–Terry order")
    n = serializers.IntegerField(required=False)


class RaterPositionSerializer(serializers.Serializer):
    criterion = serializers.CharField(help_text="A/B choices: the criterion; scales: empty (pooled)")
    what = serializers.CharField()
    first = serializers.IntegerField()
    screens = serializers.IntegerField()
    chance = serializers.FloatField()
    p = number(help_text="exact two-sided binomial p against chance")


class SpeedSerializer(serializers.Serializer):
    median = serializers.FloatField(help_text="the rater's median active seconds per item")
    study_median = serializers.FloatField()
    share = number()


class CompetenceSerializer(serializers.Serializer):
    criterion = serializers.CharField()
    method = serializers.CharField()
    values = serializers.SerializerMethodField(help_text="each aggregation method's estimate of the rater")

    def get_values(self, row) -> dict[str, float | None]:
        return {title: value for title, value in row["values"]}


class SecondsSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    item = serializers.IntegerField(help_text="the item's position in the study")
    seconds = number()
    check = serializers.BooleanField()


class RaterEvidenceApi(ApiView):
    """One rater's evidence, as the rater's page shows it (their answers: ``/studies/<slug>/browse/``)."""

    class OutputSerializer(serializers.Serializer):
        rater = serializers.IntegerField(source="assignment.rater_id")
        name = serializers.CharField()
        assignment = serializers.IntegerField(source="assignment.pk")
        status = serializers.CharField(source="assignment.status")
        excluded = serializers.BooleanField(source="assignment.excluded")
        with_own_answers = serializers.BooleanField(
            help_text="true for an excluded rater: the figures are from before the exclusion, computed with "
                      "the rater's own answers put back (reports and the other raters' figures leave them out)")
        flags = FlagSerializer(many=True)
        checks = CheckResultSerializer(many=True)
        labels = AgreementSerializer(many=True)
        order = AgreementSerializer(many=True)
        position = RaterPositionSerializer(many=True, help_text="per criterion for A/B choices; one pooled row "
                                                                "for scales; empty when nothing was counted")
        speed = SpeedSerializer(allow_null=True)
        competence = CompetenceSerializer(many=True)
        seconds = SecondsSerializer(many=True)
        decisions = DecisionSerializer(many=True, help_text="newest first, reverted ones included")

    @extend_schema(responses=OutputSerializer, parameters=[RAW_IDS], operation_id="study_rater_evidence")
    def get(self, request, slug, rater):
        query_params_checked(request, {"raw_ids"})
        study = _study(request, slug)
        evidence = rater_evidence.rater_evidence(study, rater, raw_ids=raw_ids_requested(request, [study.experiment_id]))
        if evidence is None:
            raise NotFound("no such rater in this study")
        return Response(self.OutputSerializer(evidence).data)


class RaterDecisionApi(ApiView):
    """Keep or exclude the rater (an exclusion takes them out of every report, export figure and the live
    panel; a new verdict replaces the standing one; the same twice stores once). Approve, reject and bonus
    are the platform's: ``POST /api/crowd/studies/<slug>/raters/<rater>/decisions/``."""

    class InputSerializer(StrictInput):
        kind = serializers.ChoiceField(choices=list(decisions.VERDICTS))
        reason = serializers.CharField(max_length=decisions.MAX_REASON, allow_blank=True,
                                       help_text="why (an exclusion needs one; reports show it)")

    @extend_schema(request=InputSerializer, responses={201: DecisionSerializer}, operation_id="study_rater_decide")
    def post(self, request, slug, rater):
        study = _study(request, slug)
        assignment = rater_evidence.rater_assignment(study, rater)
        if assignment is None:
            raise NotFound("no such rater in this study")
        raw = request.data.get("kind") if hasattr(request.data, "get") else None
        if raw in ("approve", "reject", "bonus"):
            raise ValidationError({"kind": [f"{raw} goes to the platform: POST /api/crowd/studies/{study.slug}/raters/"
                                            f"{rater}/decisions/"]})
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        decision = decisions.rater_decision_record(assignment=assignment, user=request.user, **data.validated_data)
        return Response(DecisionSerializer(decision).data, status=status.HTTP_201_CREATED)


class DecisionRevertApi(ApiView):
    """Revert a keep or exclude (an excluded rater comes back into every report); a platform's approve,
    reject or bonus cannot be reverted from Concord (400)."""

    @extend_schema(request=None, responses=DecisionSerializer, operation_id="study_decision_revert")
    def post(self, request, slug, decision):
        study = _study(request, slug)
        found = get_object_or_404(RaterDecision.objects.select_related("assignment"), pk=decision,
                                  assignment__study=study)
        return Response(DecisionSerializer(decisions.rater_decision_revert(decision=found, user=request.user)).data)
