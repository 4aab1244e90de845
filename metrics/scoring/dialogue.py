"""Scoring runs of dialogue-level metrics (SelF-Eval): one MetricScore per *conversation*.

``services.scoring_run_execute`` claims the run and hands over here when the implementation scores
conversations. Same contract as response scoring: batched, idempotent (only conversations without a
score from this model are scored, unless ``force``; a retry or a second worker keeps one score each
through the unique constraint), progress on the run row at most once a second, a cancel honoured at
the next batch. The run covers a study's conversations (those of its items), a corpus's, or all."""
from __future__ import annotations

from collections.abc import Callable

from django.db.models import QuerySet

from metrics.models import MetricScore, ScoringRun
from metrics.scoring.loop import scoring_run_batches
from studies.designs import unit_for
from studies.models import Conversation

BATCH = 32


def run_conversations(run: ScoringRun) -> QuerySet[Conversation]:
    conversations = Conversation.objects.all()
    if run.study is not None:
        # what the study's unit shows or collected: an item's conversation, the dialogues a ranking item
        # shows, a chat study's ended chats (StudyUnit.conversations)
        return unit_for(run.study).conversations(run.study)
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
    def scores_of(ids: list[int]) -> list[MetricScore]:
        conversations = list(Conversation.objects.filter(pk__in=ids).order_by("pk"))
        inputs = [dialogue_input(c) for c in conversations]
        values = implementation.score_dialogues([t for t, _ in inputs], [s for _, s in inputs])
        return [MetricScore(metric_model=run.metric_model, conversation=c, value=v, run=run)
                for c, v in zip(conversations, values, strict=True) if v is not None]  # None: missing, never 0

    def prepare(ids: list[int]) -> None:  # each distinct text embedded once, as benchmark_metric does
        implementation.prepare(dialogues=[dialogue_input(c)[0] for start in range(0, len(ids), 5000)
                                          for c in Conversation.objects.filter(pk__in=ids[start:start + 5000])
                                          .order_by("pk")])

    def notes() -> str:
        cut = getattr(implementation, "truncated", 0)
        text = f"; {cut} dialogue(s) longer than max_length were cut (their beginning was scored)" if cut else ""
        return text + (implementation.run_notes() if hasattr(implementation, "run_notes") else "")

    return scoring_run_batches(run=run, device=implementation.device, targets=run_conversations(run),
                               unscored=unscored_conversations(run), scores_of=scores_of, prepare=prepare,
                               batch=getattr(implementation, "batch_size", BATCH),
                               noun=" conversations", notes=notes, on_progress=on_progress)
