"""Whether a rater must pass a study's practice before the entry gives them a slot: the gate the rater's
entry asks (``studies.rating.entry``). The practice itself, its pages and its report are
``studies.onboarding``, which builds on the rating pages and so sits above them."""
from __future__ import annotations

from django.db.models import Q

from studies.models import Onboarding, PracticeAttempt, PracticeItem, Study

# Every link a rater arrives by: an invitation is a chosen person, but the practice also trains them.
PLATFORMS_WITH_PRACTICE = (Study.Platform.MTURK, Study.Platform.PROLIFIC, Study.Platform.INVITE)


def onboarding_of(study: Study) -> Onboarding | None:
    return Onboarding.objects.filter(study=study).first()


def has_practice(study: Study) -> bool:
    return PracticeItem.objects.filter(study=study).exists()


def passed_attempts(study: Study, platform: str, external_id: str):
    """Passes that count for this study: in its experiment, or (where the study says so) in any
    experiment of the same researcher; the identity compared as the entry normalised it."""
    scope = Q(experiment_id=study.experiment_id)
    onboarding = onboarding_of(study)
    if onboarding is not None and onboarding.owner_wide and study.experiment.owner_id is not None:
        scope |= Q(experiment__owner_id=study.experiment.owner_id)
    return PracticeAttempt.objects.filter(scope, platform=platform, external_id=external_id,
                                          status=PracticeAttempt.Status.PASSED)


def practice_needed(study: Study, platform: str, external_id: str) -> bool:
    """Whether this identity must pass the study's practice before it may get a slot: on every
    platform, invitations included (the invite's rater, ``Invite.rater_id_text``)."""
    if platform not in PLATFORMS_WITH_PRACTICE or not has_practice(study):
        return False
    return not passed_attempts(study, platform, external_id).exists()
