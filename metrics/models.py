"""Automatic metrics in the same database as the human ratings.

A ``Metric`` is a registered implementation (metrics/implementations/); a ``MetricModel`` is one
configured or trained instance of it (a heuristic's settings, or a learned checkpoint); scores of
responses (turn level) or conversations (dialogue level) are ``MetricScore`` rows, unique per model
and target, and join the ratings on ``Response``. ``ScoringRun`` / ``TrainingRun`` record work done
by workers: status, progress, attempts, device, log."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q, TextChoices
from django.utils import timezone

from studies.models import Conversation, Corpus, Response, Study


class Metric(models.Model):
    class Level(TextChoices):  # not models.TextChoices: in this class, "models" is the reverse relation
        TURN = "turn", "Turn (response given context)"
        DIALOGUE = "dialogue", "Dialogue"

    class Kind(TextChoices):
        HEURISTIC = "heuristic", "Heuristic"
        LEARNED = "learned", "Learned"
        JUDGE = "judge", "LLM judge"

    key = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=120)
    level = models.CharField(max_length=10, choices=Level.choices)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    description = models.TextField(blank=True)
    range_min = models.FloatField(null=True, blank=True)
    range_max = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return self.key


class MetricModel(models.Model):
    """One usable instance of a metric: heuristic settings or a trained checkpoint."""

    metric = models.ForeignKey(Metric, on_delete=models.CASCADE, related_name="models")
    name = models.SlugField(max_length=80, unique=True)
    base_encoder = models.CharField(max_length=300, blank=True)
    config = models.JSONField(default=dict, blank=True)
    artifact_path = models.CharField(max_length=500, blank=True)
    validation = models.JSONField(default=dict, blank=True)
    # the model beside the untrained baselines on every human-judgment set (metrics.benchmarking.model_cards)
    card = models.JSONField(default=dict, blank=True)
    # a researcher's own model (an LLM judge calls their endpoint with their key); empty: everyone's
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["metric", "name"]

    def __str__(self) -> str:
        return self.name


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class WorkerRun(models.Model):
    """What every run done by a worker records: status, progress (done of total), attempts (a run
    restarted after its worker died counts one more), device and a short log."""

    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=0)
    device = models.CharField(max_length=40, blank=True)
    log = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    @property
    def percent(self) -> float:
        return round(100.0 * self.done / self.total, 1) if self.total else (100.0 if self.status == RunStatus.DONE else 0.0)


class ScoringRun(WorkerRun):
    """Scoring a study's responses (or a corpus, or everything) with one metric model."""

    metric_model = models.ForeignKey(MetricModel, on_delete=models.CASCADE, related_name="scoring_runs")
    study = models.ForeignKey(Study, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    corpus = models.ForeignKey(Corpus, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    force = models.BooleanField(default=False, help_text="Score again responses that already have a score.")
    seconds = models.FloatField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    progress_at = models.DateTimeField(null=True, blank=True)
    # held by the running worker and renewed while it lives (studies.jobs.Lease); past it: the worker is gone
    lease_until = models.DateTimeField(null=True, blank=True)
    # when the run was last queued, or its task last waited its turn: a queued run nobody touched for a lease
    # lost its message with a killed worker, and the recover task sends it again (metrics.scoring.run_jobs)
    touched_at = models.DateTimeField(default=timezone.now)
    error = models.TextField(blank=True, help_text="Why the run failed, for the researcher.")

    def __str__(self) -> str:
        return f"{self.metric_model} on {self.study or self.corpus or 'everything'} ({self.status})"



class TrainingRun(WorkerRun):
    """Training a learned metric: ``config`` is the full ``ml.trainers.TrainingConfig`` (+ ``model_name``),
    ``losses`` the history (one entry per optimizer step and per validation), ``done``/``total`` steps."""

    metric = models.ForeignKey(Metric, on_delete=models.CASCADE, related_name="training_runs")
    config = models.JSONField(default=dict)
    losses = models.JSONField(default=list, blank=True)
    checkpoint_path = models.CharField(max_length=500, blank=True)
    result = models.ForeignKey(MetricModel, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # what the run does besides optimizer steps, e.g. "embedding training texts: 3,200/17,530" (empty once training)
    phase = models.CharField(max_length=120, blank=True)

    def __str__(self) -> str:
        return f"training {self.metric} {self.stage} ({self.status})"

    @property
    def stage(self) -> str:
        return self.config.get("stage", "")

    @property
    def model_name(self) -> str:
        return self.config.get("model_name", "")

    @property
    def last_loss(self) -> float | None:
        steps = [h["loss"] for h in self.losses if "loss" in h]
        return steps[-1] if steps else None

    @property
    def best_validation(self) -> float | None:
        values = [h["validation"] for h in self.losses if "validation" in h]
        return min(values) if values else None


class MetricScore(models.Model):
    metric_model = models.ForeignKey(MetricModel, on_delete=models.CASCADE, related_name="scores")
    response = models.ForeignKey(Response, null=True, blank=True, on_delete=models.CASCADE, related_name="metric_scores")
    conversation = models.ForeignKey(Conversation, null=True, blank=True, on_delete=models.CASCADE,
                                     related_name="metric_scores")
    value = models.FloatField()
    run = models.ForeignKey(ScoringRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="scores")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["metric_model", "response"], condition=Q(response__isnull=False),
                                    name="metric_score_unique_response"),
            models.UniqueConstraint(fields=["metric_model", "conversation"], condition=Q(conversation__isnull=False),
                                    name="metric_score_unique_conversation"),
            models.CheckConstraint(condition=Q(response__isnull=False) | Q(conversation__isnull=False),
                                   name="metric_score_has_target"),
        ]

    def __str__(self) -> str:
        return f"{self.metric_model}={self.value:.3f}"


class TrainingDataset(models.Model):
    """A generated training data set (MDD-Eval's augmented pairs): a JSON-lines file under the
    artifacts directory, its version (the file's SHA-256) and its counts (per technique; sources,
    skipped techniques). Later stages take it by ``name``."""

    metric = models.ForeignKey(Metric, on_delete=models.CASCADE, related_name="datasets")
    name = models.SlugField(max_length=80, unique=True)
    path = models.CharField(max_length=500)
    sha256 = models.CharField(max_length=64)
    counts = models.JSONField(default=dict, blank=True)
    run = models.ForeignKey(TrainingRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.counts.get('records', '?')} pairs, {self.sha256[:8]})"


class JudgeAnswer(models.Model):
    """An LLM judge's raw answer, kept once per (endpoint URL, model, settings, prompt) — the prompt holds
    the judged text — so a run resumed after a worker died, a second run or a new parse pays nothing
    again (``metrics.judging.services.JudgeCache``). Failed calls are never stored."""

    key = models.CharField(max_length=64, unique=True)
    text = models.TextField(blank=True)
    logprobs = models.JSONField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"judge answer {self.key[:12]}"


class HumanMetricSummary(models.Model):
    """A human-vs-metric page's costly part (the correlations with their bootstrap intervals, the judges'
    ranking, the baselines' shortfalls), computed by a worker when ratings or scores change and kept
    with the versions of the ratings and scores it used (``version``; ``key`` is its hash): the page
    reads the row for the versions it sees now, and says it is computing while there is none."""

    class Kind(TextChoices):
        REPORT = "report", "Correlations with humans"
        JUDGES = "judges", "Best-judge ranking"
        BASELINES = "baselines", "Below an untrained baseline"

    key = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    experiment = models.ForeignKey("studies.Experiment", on_delete=models.CASCADE, related_name="+")
    metric_model = models.ForeignKey(MetricModel, on_delete=models.CASCADE, related_name="+")
    version = models.TextField(help_text="The ratings' and scores' versions the result was computed from.")
    data = models.JSONField()
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["experiment", "metric_model", "kind"])]

    def __str__(self) -> str:
        return f"{self.kind} of {self.metric_model_id} on experiment {self.experiment_id}"
