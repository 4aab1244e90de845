"""Crowd API: one view per operation (HackSoft style). Staff or the experiment's owner only (these
calls spend money); anyone else gets a 404. A refusal is a 409 saying why (nothing was sent); a
platform error is a 502 naming the failing call; bad input is a 400 naming the field."""
from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.response import Response

from crowd import bonuses, publishing, reviews, selectors, sync, workers
from crowd.errors import PlatformError, PublishRefused
from crowd.models import Hit, Platform, Publication
from crowd.platforms import PLATFORMS, mturk, platform_of, prolific
from studies.api.base import ApiView, django_errors
from studies.api.errors import Conflict
from studies.api.inputs import StrictInput
from studies.models import Assignment
from studies.rating.review import ReviewError

ErrorSerializer = inline_serializer("CrowdError", {"detail": serializers.CharField(),
                                                   "call": serializers.CharField(required=False)})
# 400 keeps the project-wide field-errors schema (config.schema): DRF answers bad input by field.
ERRORS = {404: ErrorSerializer, 409: ErrorSerializer, 502: ErrorSerializer}


class BadGateway(APIException):
    """A platform call failed; ``call`` names it (an extension member of the problem, config.errors)."""

    status_code = status.HTTP_502_BAD_GATEWAY
    default_detail = "The platform did not answer as expected."
    default_code = "bad_gateway"

    def __init__(self, detail=None, *, call: str = ""):
        super().__init__(detail)
        self.extensions = {"call": call}


class CrowdApiView(ApiView):
    """Maps the crowd app's exceptions onto HTTP answers (the one envelope of config.errors)."""

    def handle_exception(self, exc):
        if isinstance(exc, DjangoValidationError):
            exc = django_errors(exc)
        if isinstance(exc, PlatformError):
            exc = BadGateway(str(exc), call=exc.call)
        if isinstance(exc, PublishRefused | ReviewError):
            exc = Conflict(str(exc))
        return super().handle_exception(exc)

    def publication(self, request, pk: int) -> Publication:
        return get_object_or_404(Publication.objects.select_related("study__experiment"), pk=pk,
                                 study__in=selectors.studies_managed_by(request.user))


class EstimateSerializer(serializers.Serializer):
    places = serializers.IntegerField()
    reward = serializers.DecimalField(max_digits=10, decimal_places=2)
    fee_per_place = serializers.DecimalField(max_digits=10, decimal_places=2)
    rewards = serializers.DecimalField(max_digits=12, decimal_places=2)
    fees = serializers.DecimalField(max_digits=12, decimal_places=2)
    bonuses = serializers.DecimalField(max_digits=12, decimal_places=2)
    bonus_fees = serializers.DecimalField(max_digits=12, decimal_places=2)
    total = serializers.DecimalField(max_digits=12, decimal_places=2)
    notes = serializers.ListField(child=serializers.CharField())


class HitSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    hit_id = serializers.CharField()
    max_assignments = serializers.IntegerField()
    expires_at = serializers.DateTimeField(allow_null=True)
    hit_status = serializers.CharField()


class PublicationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    study = serializers.SlugField(source="study.slug")
    platform = serializers.ChoiceField(choices=Platform.choices)
    sandbox = serializers.BooleanField()
    status = serializers.ChoiceField(choices=Publication.Status.choices)
    external_id = serializers.CharField()
    settings = serializers.SerializerMethodField()
    estimate = serializers.SerializerMethodField()
    problems = serializers.SerializerMethodField()
    hits = HitSerializer(many=True, source="hits.all")
    last_error = serializers.CharField()
    published_at = serializers.DateTimeField(allow_null=True)
    synced_at = serializers.DateTimeField(allow_null=True)

    def get_settings(self, obj) -> dict:
        return publishing.effective_settings(obj)

    @extend_schema_field(EstimateSerializer)
    def get_estimate(self, obj) -> dict:
        return EstimateSerializer(publishing.publication_estimate(obj)).data

    def get_problems(self, obj) -> list[str]:
        return publishing.publish_problems(obj, confirm_production=True)


class RaterRowSerializer(serializers.Serializer):
    assignment = serializers.IntegerField(source="assignment.pk")
    rater = serializers.CharField(source="rater.external_id")
    platform = serializers.CharField(source="rater.platform")
    status = serializers.CharField(help_text="Concord's status")
    platform_state = serializers.CharField(source="record.state", default="", help_text="the platform's, after the last sync")
    platform_record = serializers.IntegerField(source="record.pk", default=None, allow_null=True)
    answered = serializers.IntegerField()
    total = serializers.IntegerField()
    checks = serializers.CharField(help_text="quality checks passed/shown, empty when none were scored")
    suggested_rejection = serializers.BooleanField(help_text="submitted and failed the quality checks")


class StudyCrowdApi(CrowdApiView):
    class StudyCrowdOutputSerializer(serializers.Serializer):
        study = serializers.SlugField()
        publications = PublicationSerializer(many=True)
        raters = RaterRowSerializer(many=True)
        counts = serializers.DictField(child=serializers.IntegerField())

    @extend_schema(responses={200: StudyCrowdOutputSerializer, 404: ErrorSerializer}, summary="A study's publications and rater dashboard")
    def get(self, request, slug):
        study = get_object_or_404(selectors.studies_managed_by(request.user), slug=slug)
        board = selectors.dashboard(study)
        return Response(self.StudyCrowdOutputSerializer({
            "study": study.slug, "publications": selectors.publications_of(study), "raters": board["rows"],
            "counts": {k: board[k] for k in ("working", "finished", "returned", "rejected", "submitted_on_platform",
                                                   "failed_checks")},
        }).data)


class PublicationConfigureApi(CrowdApiView):
    class PublicationConfigureInputSerializer(StrictInput):
        platform = serializers.ChoiceField(choices=Platform.choices)
        sandbox = serializers.BooleanField(default=True, help_text="MTurk only")
        settings = serializers.DictField(required=False, default=dict,
                                         help_text=". ".join(f"{p.label}: {', '.join(sorted(p.setting_keys))}"
                                                             for p in PLATFORMS.values()))

    @extend_schema(request=PublicationConfigureInputSerializer, responses={200: PublicationSerializer, **ERRORS},
                   summary="Create or update a study's publication on a platform (nothing is sent)")
    def post(self, request, slug):
        study = get_object_or_404(selectors.studies_managed_by(request.user), slug=slug)
        data = self.PublicationConfigureInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        publication = publishing.publication_configure(study=study, **data.validated_data)
        return Response(PublicationSerializer(publication).data)


class BalanceApi(CrowdApiView):
    @extend_schema(responses={200: inline_serializer("Balance", {"balance": serializers.DecimalField(12, 2),
                                                                 "estimate": EstimateSerializer()}), **ERRORS},
                   summary="MTurk account balance, next to the publication's cost estimate")
    def get(self, request, pk):
        publication = self.publication(request, pk)
        return Response({"balance": platform_of(publication).balance(publication=publication),
                         "estimate": EstimateSerializer(publishing.publication_estimate(publication)).data})


class PublishApi(CrowdApiView):
    class PublishInputSerializer(StrictInput):
        confirm_production = serializers.BooleanField(default=False, help_text="required for production MTurk and Prolific")
        draft_only = serializers.BooleanField(default=False, help_text="Prolific: create the draft, do not publish")

    @extend_schema(request=PublishInputSerializer, responses={200: PublicationSerializer, **ERRORS}, summary="Publish")
    def post(self, request, pk):
        publication = self.publication(request, pk)
        data = self.PublishInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        publication = publishing.publication_publish(publication=publication, **data.validated_data)
        return Response(PublicationSerializer(publication).data)


class SyncApi(CrowdApiView):
    @extend_schema(request=None, responses={200: inline_serializer("SyncSummary", {
        "seen": serializers.IntegerField(), "linked": serializers.IntegerField(),
        "abandoned": serializers.IntegerField(), "granted": serializers.IntegerField(),
        "problems": serializers.ListField(child=serializers.CharField())}), **ERRORS}, summary="Sync with the platform")
    def post(self, request, pk):
        summary = sync.publication_sync(publication=self.publication(request, pk))
        return Response(vars(summary))


class ReviewApi(CrowdApiView):
    class ReviewInputSerializer(StrictInput):
        decision = serializers.ChoiceField(choices=("approve", "reject"))
        records = serializers.ListField(child=serializers.IntegerField(), required=False, default=list,
                                        help_text="platform record ids (see the study's raters)")
        all_submitted = serializers.BooleanField(default=False)
        checks = serializers.ChoiceField(
            choices=("passed", "failed"), required=False, allow_blank=True, default="",
            help_text="passed: approve all that passed the quality checks; failed: reject all that failed "
                      "(decision must match; feedback required)")
        feedback = serializers.CharField(required=False, allow_blank=True, default="")
        rejection_category = serializers.ChoiceField(choices=prolific.PLATFORM.rejection_categories, required=False,
                                                     allow_blank=True, default="")

    class ReviewOutputSerializer(serializers.Serializer):
        done = serializers.ListField(child=serializers.IntegerField())
        skipped = serializers.ListField(child=serializers.CharField())
        failed = serializers.ListField(child=serializers.CharField())

    @extend_schema(request=ReviewInputSerializer, responses={200: ReviewOutputSerializer, **ERRORS},
                   summary="Approve or reject one, many, or all submitted assignments")
    def post(self, request, pk):
        publication = self.publication(request, pk)
        data = self.ReviewInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        if v["checks"]:
            if v["decision"] != ("approve" if v["checks"] == "passed" else "reject"):
                raise ValidationError({"decision": f"checks={v['checks']} goes with "
                                                   f"{'approve' if v['checks'] == 'passed' else 'reject'}"})
            outcome = reviews.assignments_review_checked(publication=publication, passed=v["checks"] == "passed",
                                                          feedback=v["feedback"], rejection_category=v["rejection_category"])
            return self._outcome(outcome)
        records = (reviews.submitted_records(publication) if v["all_submitted"] else
                   list(publication.worker_assignments.filter(pk__in=v["records"]).select_related("assignment")))
        if not records:
            raise ValidationError({"records": "nothing to review"})
        outcome = reviews.assignments_review(publication=publication, records=records, decision=v["decision"],
                                              feedback=v["feedback"], rejection_category=v["rejection_category"])
        return self._outcome(outcome)

    @staticmethod
    def _outcome(outcome) -> Response:
        return Response({"done": [r.pk for r in outcome.done], "skipped": [f"{r.pk}: {m}" for r, m in outcome.skipped],
                         "failed": [f"{r.pk}: {m}" for r, m in outcome.failed]},
                        status=status.HTTP_502_BAD_GATEWAY if outcome.failed and not outcome.done else status.HTTP_200_OK)


class BonusApi(CrowdApiView):
    class BonusInputSerializer(StrictInput):
        assignment = serializers.IntegerField()
        amount = serializers.DecimalField(max_digits=8, decimal_places=2)
        reason = serializers.CharField()

    class BonusOutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        amount = serializers.DecimalField(max_digits=8, decimal_places=2)
        status = serializers.CharField()
        token = serializers.CharField()

    @extend_schema(request=BonusInputSerializer, responses={201: BonusOutputSerializer, **ERRORS},
                   summary="Record and send a bonus (idempotent: a retry pays once)")
    def post(self, request, pk):
        publication = self.publication(request, pk)
        data = self.BonusInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        assignment = get_object_or_404(Assignment, pk=data.validated_data["assignment"], study=publication.study)
        bonus = bonuses.bonus_create(publication=publication, assignment=assignment, user=request.user,
                                      amount=data.validated_data["amount"], reason=data.validated_data["reason"])
        bonus = bonuses.bonuses_send(bonuses=[bonus])[0]
        return Response(self.BonusOutputSerializer(bonus).data, status=status.HTTP_201_CREATED)


class WorkerBlockApi(CrowdApiView):
    class WorkerBlockInputSerializer(StrictInput):
        worker_id = serializers.CharField()
        reason = serializers.CharField(required=False, allow_blank=True, default="", help_text="required to block")
        unblock = serializers.BooleanField(default=False)

    @extend_schema(request=WorkerBlockInputSerializer, responses={200: inline_serializer("Block", {
        "worker_id": serializers.CharField(), "active": serializers.BooleanField()}), **ERRORS},
        summary="Block a worker of this publication from the owner's studies (with a reason), or lift that block")
    def post(self, request, pk):
        publication = self.publication(request, pk)
        data = self.WorkerBlockInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        service = workers.worker_unblock if v["unblock"] else workers.worker_block
        block = service(publication=publication, worker_id=v["worker_id"], reason=v["reason"], user=request.user)
        return Response({"worker_id": v["worker_id"], "active": bool(block and block.active)})


class NotifyApi(CrowdApiView):
    class NotifyInputSerializer(StrictInput):
        worker_ids = serializers.ListField(child=serializers.CharField(), min_length=1)
        subject = serializers.CharField(max_length=200)
        message = serializers.CharField(max_length=4096)

    @extend_schema(request=NotifyInputSerializer, responses={200: inline_serializer("NotifyResult", {
        "failures": serializers.ListField(child=serializers.DictField())}), **ERRORS}, summary="Message workers of this publication (MTurk)")
    def post(self, request, pk):
        publication = self.publication(request, pk)
        data = self.NotifyInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response({"failures": workers.workers_notify(publication=publication, **data.validated_data)})


class HitExtendApi(CrowdApiView):
    class HitExtendInputSerializer(StrictInput):
        hours = serializers.IntegerField(min_value=0, default=0)
        additional_assignments = serializers.IntegerField(min_value=0, default=0)

    @extend_schema(request=HitExtendInputSerializer, responses={200: HitSerializer, **ERRORS}, summary="Extend a HIT")
    def post(self, request, pk, hit_id):
        publication = self.publication(request, pk)
        hit = get_object_or_404(Hit, publication=publication, hit_id=hit_id)
        data = self.HitExtendInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(HitSerializer(mturk.hit_extend(hit=hit, **data.validated_data)).data)


class ExpireApi(CrowdApiView):
    @extend_schema(request=None, responses={200: inline_serializer("Expired", {"expired": serializers.IntegerField()}),
                                            **ERRORS}, summary="Expire every HIT of the publication now")
    def post(self, request, pk):
        return Response({"expired": mturk.hits_expire(publication=self.publication(request, pk))})


class TransitionApi(CrowdApiView):
    class TransitionInputSerializer(StrictInput):
        action = serializers.ChoiceField(choices=tuple(prolific.PLATFORM.transitions))

    @extend_schema(request=TransitionInputSerializer, responses={200: PublicationSerializer, **ERRORS},
                   summary="Prolific: publish, pause, start (resume) or stop the study")
    def post(self, request, pk):
        publication = self.publication(request, pk)
        data = self.TransitionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(PublicationSerializer(
            prolific.prolific_transition(publication=publication, action=data.validated_data["action"])).data)
