"""Metrics API: models, scoring and training runs (start, progress, cancel) and human-vs-metric reports."""
from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.settings import api_settings

from metrics import registry
from metrics.api.report_schemas import HumanMetricReportSerializer, PredictionPoweredReportSerializer
from metrics.models import Metric, TrainingRun
from metrics.scoring import run_jobs, selectors, services
from metrics.training import services as training
from studies import access
from studies.api.base import ApiView
from studies.api.errors import Conflict
from studies.api.inputs import PAGE_PARAMETERS, StrictInput, choice_param, paginate, query_params_checked
from studies.compute_pool import Offloaded

WORKER_WAIT_SECONDS = 30  # a queued run older than this: say that no worker has picked it up


def worker_waiting(run) -> str | None:
    """Why a queued run has not started: no worker has taken it yet (None once one has, or while young)."""
    if run.status != "queued" or run.attempts or not run.created_at:
        return None
    waited = (timezone.now() - run.created_at).total_seconds()
    if waited < WORKER_WAIT_SECONDS:
        return None
    if run_jobs.owner_at_limit(run):
        return "waiting for your other judge runs: each researcher runs a few at once, so others' runs are not held up"
    queue = run_jobs.scoring_queue(run.metric_model)
    return (f"queued {int(waited)} s ago and no worker has picked it up: is a Celery worker running on the {queue} "
            f"queue (python -m config.workers {queue})?")


class WorkerRunSerializer(serializers.Serializer):
    """What every worker run reports: status and progress (done of total), attempts, device, log, and
    ``waiting`` (why a queued run has not started)."""

    id = serializers.IntegerField()
    status = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    percent = serializers.FloatField()
    attempts = serializers.IntegerField()
    device = serializers.CharField()
    log = serializers.CharField()
    waiting = serializers.SerializerMethodField()

    def get_waiting(self, run) -> str | None:
        return worker_waiting(run)


class RunOutputSerializer(WorkerRunSerializer):
    metric_model = serializers.CharField(source="metric_model.name")
    error = serializers.CharField(help_text="Why the run failed (empty unless it did).")
    study = serializers.CharField(source="study.slug", allow_null=True, default=None)
    eta_seconds = serializers.SerializerMethodField()

    def get_eta_seconds(self, run) -> float | None:
        if run.status != "running" or not run.done or not run.started_at or not run.progress_at:
            return None
        rate = run.done / max((run.progress_at - run.started_at).total_seconds(), 1e-3)
        return round((run.total - run.done) / rate, 1) if rate else None


class MetricModelListApi(ApiView):
    class OutputSerializer(serializers.Serializer):
        name = serializers.SlugField()
        metric = serializers.CharField(source="metric.key")
        level = serializers.CharField(source="metric.level")
        kind = serializers.CharField(source="metric.kind")
        base_encoder = serializers.CharField()

        card_warnings = serializers.SerializerMethodField()

        def get_card_warnings(self, model) -> list[str]:
            return selectors.card_warnings(model.card)

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS  # tells the schema that the list is paginated

    @extend_schema(responses=OutputSerializer(many=True), parameters=[
        OpenApiParameter("metric", str, description="a metric's registry key"),
        OpenApiParameter("level", str, enum=Metric.Level.values), OpenApiParameter("kind", str, enum=Metric.Kind.values)])
    def get(self, request):
        query_params_checked(request, {*PAGE_PARAMETERS, "metric", "level", "kind"})
        models = selectors.metric_models_usable_by(request.user).select_related("metric")
        if "metric" in request.query_params:
            models = models.filter(metric__key=request.query_params["metric"])
        for name, choices in (("level", Metric.Level.values), ("kind", Metric.Kind.values)):
            if wanted := choice_param(request, name, choices):
                models = models.filter(**{f"metric__{name}": wanted})
        return paginate(self, models.order_by("name"), request, self.OutputSerializer)


class MetricModelDetailApi(ApiView):
    """One metric model with its card: the model beside every untrained baseline on every human-judgment set
    (``metrics.benchmarking.model_cards``), and the warnings where it is below one."""

    class OutputSerializer(MetricModelListApi.OutputSerializer):
        config = serializers.JSONField()
        validation = serializers.JSONField()
        card = serializers.JSONField()

    @extend_schema(responses=OutputSerializer)
    def get(self, request, name):
        return Response(self.OutputSerializer(get_object_or_404(
            selectors.metric_models_usable_by(request.user).select_related("metric"), name=name)).data)


# POST /api/metrics/runs/ (and its list): metrics.api.run_views.ScoringRunCreateApi


class ScoringRunDetailApi(ApiView):
    @extend_schema(responses=RunOutputSerializer)
    def get(self, request, pk):
        return Response(RunOutputSerializer(get_object_or_404(selectors.visible_runs(request.user), pk=pk)).data)


class ScoringRunRetryApi(ApiView):
    """A new run of the same model and scope that scores only what is still unscored (201); 400 naming
    ``run`` while it is queued or running, or when nothing is left to score."""

    @extend_schema(request=None, responses={201: RunOutputSerializer})
    def post(self, request, pk):
        run = get_object_or_404(selectors.visible_runs(request.user), pk=pk)
        try:
            again = services.scoring_run_retry(run=run)
        except DjangoValidationError as error:
            raise serializers.ValidationError(error.message_dict) from None
        return Response(RunOutputSerializer(again).data, status=status.HTTP_201_CREATED)


class ScoringRunCancelApi(ApiView):
    @extend_schema(request=None, responses=RunOutputSerializer)
    def post(self, request, pk):
        run = services.scoring_run_cancel(run=get_object_or_404(selectors.visible_runs(request.user), pk=pk))
        return Response(RunOutputSerializer(run).data)


class ScoringRunRerunApi(ApiView):
    """Queue a failed, cancelled or done run again (409 while it is queued or running): it continues from
    the stored scores, and a judge's cached answers are not asked again."""

    @extend_schema(request=None, responses={202: RunOutputSerializer})
    def post(self, request, pk):
        try:
            run = run_jobs.scoring_run_rerun(run=get_object_or_404(selectors.visible_runs(request.user), pk=pk))
        except DjangoValidationError as error:
            raise Conflict(" ".join(error.messages)) from None
        return Response(RunOutputSerializer(run).data, status=status.HTTP_202_ACCEPTED)


def _report_studies(request, slug: str):
    """The experiment's studies, or the one ``?study=`` names (a slug not among them: 400 naming it)."""
    experiment = get_object_or_404(access.experiments_visible_to(request.user), slug=slug)
    studies = experiment.studies.all()
    if wanted := request.query_params.get("study"):
        studies = studies.filter(slug=wanted)
        if not studies.exists():
            raise serializers.ValidationError({"study": [f"no study of experiment {slug} has the slug {wanted[:80]!r}"]})
    return studies


STUDY_PARAMETER = OpenApiParameter("study", str, description="one study's slug (default: every condition)")


class HumanMetricReportApi(Offloaded, ApiView):
    """Human vs metric for an experiment (all conditions) or a single study (``?study=``), with
    ``below_baselines``: where the model is below an untrained baseline on these studies' own ratings
    (``selectors.baseline_shortfalls``), and ``warnings``: those and its card's as lines."""

    @extend_schema(responses=HumanMetricReportSerializer, parameters=[STUDY_PARAMETER])
    def get(self, request, slug, model):
        query_params_checked(request, {"study"})
        studies = _report_studies(request, slug)
        metric_model = get_object_or_404(selectors.metric_models_usable_by(request.user), name=model)
        below = selectors.baseline_shortfalls(studies, metric_model)  # on these studies' own ratings
        report = selectors.human_metric_report(studies, metric_model)
        assert report is not None  # no queue: computed in this request when not stored yet
        return Response({**report, "below_baselines": below,
                         "warnings": selectors.card_warnings(metric_model.card)
                         + selectors.card_warnings({"below": below})})


class PredictionPoweredApi(Offloaded, ApiView):
    """Human + metric estimates (metrics.ppi.estimates) for an experiment's studies, or one (``?study=``); ``?width=``
    sets the planner's target interval width, ``?alpha=`` the error level (default 0.05)."""

    @extend_schema(responses=PredictionPoweredReportSerializer, parameters=[
        STUDY_PARAMETER, OpenApiParameter("width", float, description="the planner's target interval width (> 0)"),
        OpenApiParameter("alpha", float, description="the error level, between 0 and 1 (default 0.05)"),
        OpenApiParameter("combine", str, description="further metric models (comma-separated names) combined with "
                                                     "this one by cross-fitted weights, per system")])
    def get(self, request, slug, model):
        query_params_checked(request, {"study", "width", "alpha", "combine"})
        return Response(self.report(request, slug, model))

    @staticmethod
    def report(request, slug, model) -> dict:
        """The report for the request's experiment (or ``?study=``) and parameters; 400 naming a bad one."""
        from metrics.ppi import estimates as ppi

        studies = _report_studies(request, slug)
        metric_model = get_object_or_404(selectors.metric_models_usable_by(request.user), name=model)
        errors = {}
        values = {}
        for name, low, high in (("width", 0, None), ("alpha", 0, 1)):
            raw = request.query_params.get(name)
            if raw:
                try:
                    values[name] = float(raw)
                except ValueError:
                    errors[name] = [f"{raw[:40]!r} is not a number"]
                    continue
                if not (values[name] > low and (high is None or values[name] < high)):
                    errors[name] = [f"must be above {low}" + (f" and below {high}" if high else "") + f", got {raw[:40]}"]
        try:
            combine = selectors.combined_models(request.user, request.query_params.get("combine"))
        except DjangoValidationError as error:
            errors.update(error.message_dict)
            combine = []
        if errors:
            raise serializers.ValidationError(errors)
        return ppi.ppi_report(studies, metric_model, alpha=values.get("alpha", ppi.ALPHA),
                              target_width=values.get("width"), combine=combine)


class TrainingRunOutputSerializer(WorkerRunSerializer):
    metric = serializers.CharField(source="metric.key")
    stage = serializers.CharField()
    model_name = serializers.CharField()
    last_loss = serializers.FloatField(allow_null=True)
    best_validation = serializers.FloatField(allow_null=True)
    checkpoint_path = serializers.CharField()
    phase = serializers.CharField()
    result = serializers.CharField(source="result.name", allow_null=True, default=None)
    config = serializers.JSONField()


class TrainingRunCreateApi(ApiView):
    """Queue a training run on the ``gpu`` queue (staff only: training uses the workers for hours)."""

    permission_classes = [IsAdminUser]

    class InputSerializer(StrictInput):
        metric = serializers.ChoiceField(choices=registry.trainable_keys(), default="quantidce")
        stage = serializers.ChoiceField(choices=registry.all_stages())  # per metric: its Trainable's stages
        model_name = serializers.SlugField(required=False, allow_blank=True)  # no "" default: it breaks the pattern
        init_from = serializers.CharField(required=False, allow_blank=True, default="")
        encoder = serializers.CharField(required=False, allow_blank=True, default="")
        epochs = serializers.IntegerField(required=False, min_value=1)
        batch_size = serializers.IntegerField(required=False, min_value=1)
        grad_accumulation = serializers.IntegerField(required=False, min_value=1)
        learning_rate = serializers.FloatField(required=False, min_value=0)
        head_learning_rate = serializers.FloatField(required=False, min_value=0)
        train_limit = serializers.IntegerField(required=False, min_value=0)
        validation_limit = serializers.IntegerField(required=False, min_value=0)
        max_steps = serializers.IntegerField(required=False, min_value=0)
        seed = serializers.IntegerField(required=False)
        # MDD-Eval (metric mdd_eval): augment's sources and models; the student's data set and threshold
        train_data = serializers.CharField(required=False, allow_blank=True, default="",
                                           help_text="mdd_eval student: the augmented data set's name")
        sources = serializers.CharField(required=False, allow_blank=True, default="")
        per_technique = serializers.IntegerField(required=False, min_value=1)
        pairs_limit = serializers.IntegerField(required=False, min_value=0)
        mask_model = serializers.CharField(required=False, allow_blank=True, default="")
        translate_forward = serializers.CharField(required=False, allow_blank=True, default="")
        translate_backward = serializers.CharField(required=False, allow_blank=True, default="")
        generator_model = serializers.CharField(required=False, allow_blank=True, default="")
        threshold = serializers.FloatField(required=False, min_value=0, max_value=1)

    @extend_schema(request=InputSerializer, responses={201: TrainingRunOutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        given = {k: v for k, v in data.validated_data.items() if v not in ("", None)}
        try:
            run = training.training_run_create(**given)
        except ValueError as error:
            field, _, message = str(error).partition(": ")
            raise serializers.ValidationError({field if message else "non_field_errors": [message or str(error)]}) from None
        return Response(TrainingRunOutputSerializer(run).data, status=status.HTTP_201_CREATED)


class TrainingRunDetailApi(ApiView):
    permission_classes = [IsAdminUser]

    @extend_schema(responses=TrainingRunOutputSerializer)
    def get(self, request, pk):
        return Response(TrainingRunOutputSerializer(get_object_or_404(TrainingRun, pk=pk)).data)


class TrainingRunCancelApi(ApiView):
    permission_classes = [IsAdminUser]

    @extend_schema(request=None, responses=TrainingRunOutputSerializer)
    def post(self, request, pk):
        run = training.training_run_cancel(run=get_object_or_404(TrainingRun, pk=pk))
        return Response(TrainingRunOutputSerializer(run).data)


class JudgeCreateApi(ApiView):
    """Make an LLM judge of one of your study's criteria through one of your OpenAI-compatible chat endpoints
    (``metrics.scoring.judges.judge_model_create``); score with it through ``/api/metrics/runs/``."""

    class InputSerializer(StrictInput):
        endpoint = serializers.IntegerField(help_text="the id of one of your chat endpoints (OpenAI-compatible)")
        study = serializers.SlugField()
        criterion = serializers.SlugField()
        name = serializers.SlugField(required=False, max_length=80, help_text="default judge-<study>-<criterion>")
        logprobs = serializers.BooleanField(default=False, help_text="score = sum_k p(k) k where the server gives logprobs")
        concurrency = serializers.IntegerField(default=4, min_value=1, max_value=32)
        requests_per_minute = serializers.IntegerField(default=0, min_value=0)
        price_prompt_per_million = serializers.FloatField(default=0.0, min_value=0.0)
        price_completion_per_million = serializers.FloatField(default=0.0, min_value=0.0)

    @extend_schema(request=InputSerializer, responses={201: MetricModelDetailApi.OutputSerializer})
    def post(self, request):
        from metrics.scoring.judges import judge_model_create

        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        study = get_object_or_404(access.studies_visible_to(request.user), slug=values.pop("study"))
        try:
            model = judge_model_create(owner=request.user, endpoint_id=values.pop("endpoint"), study=study, **values)
        except DjangoValidationError as error:
            raise serializers.ValidationError(error.message_dict) from None
        return Response(MetricModelDetailApi.OutputSerializer(model).data, status=status.HTTP_201_CREATED)
