"""The report's and the study page's reads of attention checks: who failed them (suggested for
rejection) and a summary of the settings and scores (``studies.rating.checks`` scores them)."""
from __future__ import annotations

from typing import Any

from studies.models import Assignment, Study
from studies.rating.checks import checks_config


def checks_flagged(study: Study) -> list[Assignment]:
    """Submitted or approved assignments that failed the checks: suggested for rejection."""
    return list(study.assignments.filter(checks_failed=True, status__in=(Assignment.Status.SUBMITTED,
                                                                          Assignment.Status.APPROVED))
                .select_related("rater").order_by("submitted_at"))


def study_checks_summary(study: Study) -> dict[str, Any]:
    """For the study page: how many check items, the settings, and who is suggested for rejection.
    ``checks_per_rater`` and ``items_per_rater`` are what a rater is actually shown: the configured number
    of checks (or of positions) capped by the check items there are (``checks.checks_place``), and the
    study's items per rater capped by its regular items (``entry``: an assignment takes at most them all)."""
    scored = study.assignments.filter(checks_shown__gt=0)
    config = checks_config(study)
    count = study.items.filter(check_kind__gt="").count()
    regular = study.items.filter(check_kind="").count()
    return {"count": count, "config": config, "scored": scored.count(), "flagged": checks_flagged(study),
            "checks_per_rater": min(len(config["positions"]) or config["per_assignment"], count),
            "items_per_rater": min(study.items_per_assignment, regular) if regular else study.items_per_assignment,
            "regular_items": regular}
