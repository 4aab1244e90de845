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
    """For the study page: how many check items, the settings, and who is suggested for rejection."""
    scored = study.assignments.filter(checks_shown__gt=0)
    return {"count": study.items.filter(check_kind__gt="").count(), "config": checks_config(study),
            "scored": scored.count(), "flagged": checks_flagged(study)}
