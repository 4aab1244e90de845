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


def corpus_systems(corpus: Corpus) -> list[tuple[str, int]]:
    """(system name, responses) in a corpus, most frequent first."""
    return list(
        corpus.conversations.values_list("responses__system__name").annotate(n=Count("responses"))
        .order_by("-n", "responses__system__name")
    )
