"""Scoring runs of dialogue-level metrics (SelF-Eval): one MetricScore per *conversation*.

``services.scoring_run_execute`` claims the run and hands over here when the implementation scores
conversations. Same contract as response scoring: batched, idempotent (only conversations without a
score from this model are scored, unless ``force``; a retry or a second worker keeps one score each
through the unique constraint), progress on the run row at most once a second, a cancel honoured at
the next batch. The run covers a study's conversations (those of its items), a corpus's, or all."""
from __future__ import annotations

import time
from collections.abc import Callable

from django.db.models import Q, QuerySet
from django.db.models.functions import Now

from metrics.models import MetricScore, RunStatus, ScoringRun
from studies.models import Conversation, StudyItemConversation

BATCH = 32
PROGRESS_EVERY_S = 1.0


def run_conversations(run: ScoringRun) -> QuerySet[Conversation]:
    conversations = Conversation.objects.all()
    if run.study_id:
        # an item's conversation, and the dialogues a dialogue-ranking item shows (StudyItemConversation)
        return conversations.filter(Q(pk__in=run.study.items.values("conversation_id"))
                                    | Q(pk__in=StudyItemConversation.objects.filter(item__study=run.study)
                                        .values("conversation_id")))
    if run.corpus_id:
        return conversations.filter(corpus_id=run.corpus_id)
    return conversations


def unscored_conversations(run: ScoringRun) -> QuerySet[Conversation]:
    scored = MetricScore.objects.filter(metric_model_id=run.metric_model_id,
                                        conversation__isnull=False).values("conversation_id")
    return run_conversations(run).exclude(pk__in=scored)


def conversation_scores(metric_model, conversation_ids) -> dict[int, float]:
    return dict(MetricScore.objects.filter(metric_model=metric_model, conversation_id__in=conversation_ids)
                .values_list("conversation_id", "value"))


def dialogue_input(conversation: Conversation) -> tuple[list[str], list[str]]:
    turns = [t for t in conversation.turns if isinstance(t, dict)]
    return [str(t.get("text", "")) for t in turns], [str(t.get("speaker", "")) for t in turns]


def scoring_run_execute_conversations(*, run: ScoringRun, implementation,
                                      on_progress: Callable[[int, int], None] | None = None) -> ScoringRun:
    """Score the run's unscored conversations (the run is already claimed: RUNNING, attempts counted)."""
    if run.force and run.attempts == 1:
        MetricScore.objects.filter(metric_model=run.metric_model, conversation__in=run_conversations(run)).delete()
    total = run_conversations(run).count()
    pending = list(unscored_conversations(run).order_by("pk").values_list("pk", flat=True))
    done = total - len(pending)
    ScoringRun.objects.filter(pk=run.pk).update(total=total, done=done, device=implementation.device, progress_at=Now())
    started, last_progress = time.monotonic(), 0.0
    for offset in range(0, len(pending), BATCH):
        conversations = list(Conversation.objects.filter(pk__in=pending[offset:offset + BATCH]).order_by("pk"))
        inputs = [dialogue_input(c) for c in conversations]
        values = implementation.score_dialogues([t for t, _ in inputs], [s for _, s in inputs])
        MetricScore.objects.bulk_create(
            [MetricScore(metric_model=run.metric_model, conversation=c, value=v, run=run)
             for c, v in zip(conversations, values, strict=True)],
            ignore_conflicts=True,  # a conversation scored meanwhile (another worker, a retry) keeps one score
        )
        done += len(conversations)
        if on_progress:
            on_progress(done, total)
        now = time.monotonic()
        if now - last_progress >= PROGRESS_EVERY_S or offset + BATCH >= len(pending):
            last_progress = now
            ScoringRun.objects.filter(pk=run.pk).update(done=done, progress_at=Now())
            if ScoringRun.objects.filter(pk=run.pk, status=RunStatus.CANCELLED).exists():
                run.refresh_from_db()
                return run
    log = f"attempt {run.attempts}: scored {len(pending)} of {total} conversations on {implementation.device}"
    truncated = getattr(implementation, "truncated", 0)
    if truncated:
        log += f"; {truncated} dialogue(s) longer than max_length were cut (their beginning was scored)"
    ScoringRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
        status=RunStatus.DONE, done=done, finished_at=Now(), seconds=time.monotonic() - started,
        log=(run.log + "\n" + log).strip())
    run.refresh_from_db()
    return run
