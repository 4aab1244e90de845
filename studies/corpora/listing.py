"""Reads for the API's corpus, system and import lists. Visibility is the import page's
(``selectors.item_corpora_visible_to``): a researcher's own corpora and the shared ones nobody owns (the
demo, imported benchmarks), never another researcher's; a system is listed where it has responses in such
a corpus, described by the researcher's own description (``SystemDescription``) when they wrote one.
Counts are aggregated in the database (one query per page, no per-row loops)."""
from __future__ import annotations

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery

from studies.corpora.selectors import item_corpora_visible_to
from studies.models import Corpus, ImportJob, Response, System, SystemDescription


def corpora_listed(user) -> QuerySet[Corpus]:
    """The corpora the user may build items from, with ``conversations_count`` and ``responses_count``."""
    return (item_corpora_visible_to(user).select_related("owner")
            .annotate(conversations_count=Count("conversations", distinct=True),
                      responses_count=Count("conversations__responses", distinct=True))
            .order_by("-created_at", "slug"))


def systems_listed(user, corpora: QuerySet[Corpus] | None = None) -> QuerySet[System]:
    """Systems with responses in ``corpora`` (default: every corpus the user may see), each with
    ``responses_count`` (in those corpora) and ``own_description`` / ``own_is_human`` (the user's own
    description, None where they wrote none)."""
    corpora = item_corpora_visible_to(user) if corpora is None else corpora
    in_corpora = Q(responses__conversation__corpus__in=corpora)
    own = SystemDescription.objects.filter(system=OuterRef("pk"), owner=user)
    return (System.objects.filter(pk__in=Response.objects.filter(conversation__corpus__in=corpora)
                                  .values("system_id"))
            .annotate(responses_count=Count("responses", filter=in_corpora),
                      own_description=Subquery(own.values("description")[:1]),
                      own_is_human=Subquery(own.values("is_human")[:1]))
            .order_by("name"))


def import_jobs_listed(user) -> QuerySet[ImportJob]:
    """The user's own background imports, newest first (another researcher's are never listed)."""
    return ImportJob.objects.filter(owner=user).select_related("corpus").order_by("-created_at", "-pk")
