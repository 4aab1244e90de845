"""Who may see what: the experiments and studies a user owns or was given access to, and whether
they may see raters' platform ids. Every page that shows a researcher's work reads these, from the
study builder down to the reports and the rater pages' preview, so they sit below all of them."""
from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q, QuerySet

from studies.models import Experiment, Study


def experiments_visible_to(user) -> QuerySet[Experiment]:
    """Experiments the user owns or was given access to; staff see all."""
    if not user.is_authenticated:
        return Experiment.objects.none()
    if user.is_staff:
        return Experiment.objects.all()
    return Experiment.objects.filter(Q(owner=user) | Q(collaborators=user)).distinct()


def studies_visible_to(user) -> QuerySet[Study]:
    return Study.objects.filter(experiment__in=experiments_visible_to(user)).select_related("experiment")


def raw_ids_allowed(user, experiment_ids: Iterable[int]) -> bool:
    """Whether the user may see raters' platform ids for these experiments: staff, or an owner or
    collaborator of every one of them (exports and reports show pseudonyms otherwise)."""
    if not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    wanted = set(experiment_ids)
    mine = Experiment.objects.filter(Q(owner=user) | Q(collaborators=user), pk__in=wanted).values_list("pk", flat=True)
    return set(mine) == wanted
