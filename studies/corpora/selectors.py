"""Reads of corpora: which a user may see, and the systems of one corpus."""
from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from studies.models import (
    Corpus,
)


def corpora_visible_to(user) -> QuerySet[Corpus]:
    if not user.is_authenticated:
        return Corpus.objects.none()
    if user.is_staff:
        return Corpus.objects.all()
    return Corpus.objects.filter(Q(owner=user) | Q(owner__isnull=True))


CHECKS_FORMAT = "checks"  # a study's own attention-check conversations (studies.rating.checks), not a corpus to build from


def item_corpora_visible_to(user) -> QuerySet[Corpus]:
    """The corpora a researcher may build items from, newest first: those visible to them, without the
    per-study corpora that hold attention-check conversations."""
    return corpora_visible_to(user).exclude(source_format=CHECKS_FORMAT)


def corpus_systems(corpus: Corpus) -> list[tuple[str, int]]:
    """(system name, responses) in a corpus, most frequent first."""
    return list(
        corpus.conversations.values_list("responses__system__name").annotate(n=Count("responses"))
        .order_by("-n", "responses__system__name")
    )
