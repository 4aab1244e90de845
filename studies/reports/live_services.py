"""Writes for live reliability:
the study's live settings and the close rule, which ``assignment_submit`` queues after a submit
(``studies.tasks.study_close_if_reliable_run``) when the rule is on."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from studies.designs import design_for
from studies.errors import StudyStateError
from studies.models import Study
from studies.rating.closing import study_close
from studies.reports.live_selectors import live_config, live_reliability

LIVE_FORMS = ("ICC(C,k)", "ICC(A,k)")


@transaction.atomic
def study_live_config_set(*, study: Study, target: float, form: str = "ICC(A,k)",
                          close_when_reached: bool = False) -> Study:
    """Live-reliability settings: the target reliability, the ICC it applies to, and the rule
    "close the study when the lower 95% bound reaches the target" (off unless switched on)."""
    design = design_for(study)
    if not design.live_icc:
        raise ValidationError({"live_config": f"does not apply: {design.live_icc_absent}"})
    errors = {}
    if isinstance(target, bool) or not isinstance(target, int | float) or not 0 < target < 1:
        errors["live_config.target"] = f"must be a number between 0 and 1 (exclusive), got {target!r}"
    if form not in LIVE_FORMS:
        errors["live_config.form"] = f"must be one of {', '.join(LIVE_FORMS)}, got {form!r}"
    if errors:
        raise ValidationError(errors)
    study = Study.objects.select_for_update().get(pk=study.pk)
    study.live_config = {"target": float(target), "form": form, "close_when_reached": bool(close_when_reached)}
    study.save(update_fields=["live_config"])
    return study


def study_close_if_reliable(*, study: Study) -> bool:
    """Apply the close rule: a published study whose rule is on is closed once every criterion's
    lower 95% bound of the chosen ICC reaches the target (live summary, cached per ratings version).
    Returns whether it closed the study. Computes outside the closing transaction."""
    study = Study.objects.get(pk=study.pk)
    if study.status != Study.Status.PUBLISHED or not live_config(study)["close_when_reached"]:
        return False
    if not live_reliability(study)["reached"]:
        return False
    try:
        study_close(study=study)
    except StudyStateError:  # closed meanwhile
        return False
    return True
