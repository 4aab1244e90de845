"""Writes to an experiment itself: its title and description changed, the experiment deleted.

The UI deletes studies (drafts no rater has started, ``editing.study_delete``) but no experiment; the API
deletes an experiment under the same rule for every condition: one whose studies could each be deleted
(drafts, no rater started), so no rating and no rater's history goes with it. Anything else is a state
conflict (``StudyStateError``, a 409 in the API): close the studies instead. Only the owner (or staff)
deletes; a collaborator works on the experiment but may not remove it (``PermissionDenied``)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import ProtectedError

from studies.authoring.editing import may_manage_collaborators
from studies.errors import StudyStateError
from studies.models import Assignment, Experiment, Study

TITLE_MAX = 200
EDITABLE = ("title", "description")


@transaction.atomic
def experiment_update(*, experiment: Experiment, values: Mapping[str, Any]) -> Experiment:
    """Change the title and/or description (only the keys given). An imported benchmark is read-only."""
    experiment = Experiment.objects.select_for_update().get(pk=experiment.pk)
    if experiment.is_benchmark:
        raise StudyStateError("an imported benchmark is read-only")
    unknown = sorted(set(values) - set(EDITABLE))
    if unknown:
        raise ValidationError({key: f"cannot be changed here; this takes {', '.join(EDITABLE)}" for key in unknown})
    if "title" in values:
        title = str(values["title"] or "").strip()
        if not title:
            raise ValidationError({"title": "give a title"})
        if len(title) > TITLE_MAX:
            raise ValidationError({"title": f"at most {TITLE_MAX} characters"})
        experiment.title = title
    if "description" in values:
        experiment.description = str(values["description"] or "")
    experiment.save(update_fields=[key for key in EDITABLE if key in values])
    return experiment


@transaction.atomic
def experiment_delete(*, experiment: Experiment, by) -> str:
    """Delete an experiment whose conditions are all drafts no rater has started (their items, criteria
    and invites go with them); returns its title. Only its owner or staff may."""
    experiment = Experiment.objects.select_for_update().get(pk=experiment.pk)
    if not may_manage_collaborators(by, experiment):
        raise PermissionDenied("only the experiment's owner can delete it")
    if experiment.is_benchmark:
        raise StudyStateError("cannot delete: an imported benchmark is read-only")
    started = list(experiment.studies.exclude(status=Study.Status.DRAFT).values_list("slug", flat=True))
    if started:
        raise StudyStateError(f"cannot delete: {', '.join(started[:5])} {'is' if len(started) == 1 else 'are'} "
                              f"no longer a draft (close the studies instead)")
    if Assignment.objects.filter(study__experiment=experiment).exists():
        raise StudyStateError("cannot delete: raters have started one of its studies")
    title = experiment.title
    try:
        experiment.delete()
    except ProtectedError:
        raise StudyStateError("cannot delete: other records depend on it") from None
    return title
