"""What a publication covers, whatever the platform: the studies it fills (its study, or with the
experiment link every open condition of the experiment), the places they need, the address workers
open, and the Concord assignments it brought in. Reads only."""
from __future__ import annotations

import unicodedata

from django.urls import reverse

from crowd import conf
from crowd.models import Publication
from studies.models import Assignment, Study
from studies.rating import allocation
from studies.rating.links import study_entry_path


def worker_key(worker_id: str) -> str:
    """A platform worker id as compared: Unicode NFKC (a full-width digit is the digit), trimmed,
    case-folded. MTurk and Prolific ids are letters and digits whose case carries no meaning, so two
    spellings with the same key are the same worker."""
    return unicodedata.normalize("NFKC", worker_id or "").strip().casefold()


def places_needed(study: Study) -> int:
    """Raters needed so every item reaches its target: ceil(items x raters per item / items per rater)
    (``studies.rating.allocation.places_needed``); check items ride along in every assignment."""
    items = study.items.filter(check_kind="").count()
    return allocation.places_needed(items, study.raters_per_item, study.items_per_assignment)


def uses_experiment_link(publication: Publication) -> bool:
    """True when the publication sends workers to the experiment-level link (one HIT type or one
    Prolific study for every condition; Concord assigns each new worker a condition)."""
    return bool(publication.settings.get("experiment_link"))


def linked_studies(publication: Publication) -> list[Study]:
    """The studies a publication fills: its study, or every open condition of the experiment."""
    if not uses_experiment_link(publication):
        return [publication.study]
    return list(allocation.experiment_conditions(publication.study.experiment)) or [publication.study]


def entry_url(study: Study, *, experiment: bool = False, query: str = "") -> str:
    """The address workers open: the study's link, or (``experiment``) its experiment's link, with
    the platform's ``query`` parameters when it has any."""
    path = reverse("raters:experiment_entry", args=[study.experiment.slug]) if experiment \
        else study_entry_path(study)
    url = conf.public_base_url() + path
    return f"{url}?{query}" if query else url


def concord_assignments(publication: Publication, hit_ids: set[str] | None = None) -> list[Assignment]:
    """Concord's assignments this publication brought in: its study's, or with the experiment link
    those of every condition of the experiment (``hit_ids``: only those entered through these HITs)."""
    where = {"experiment_id": publication.study.experiment_id} if uses_experiment_link(publication) \
        else {"study": publication.study}
    rows = list(Assignment.objects.filter(**where, rater__platform=publication.platform).select_related("rater"))
    if hit_ids is not None:
        rows = [a for a in rows if (a.platform_data or {}).get("hitId") in hit_ids]
    return rows


def platform_assignment_id(assignment: Assignment) -> str:
    """The platform's id for this acceptance (MTurk assignmentId, Prolific SESSION_ID), which the
    entry bound the assignment to (``Assignment.acceptance_id``); rows from before that binding keep
    it only in platform_data."""
    if assignment.acceptance_id:
        return assignment.acceptance_id
    data = assignment.platform_data or {}
    return str(data.get("assignmentId") or data.get("SESSION_ID") or "")
