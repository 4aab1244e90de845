"""Mechanical Turk's side of rater onboarding (``studies.onboarding``): the experiment's "passed the
practice" qualification type, created once per sandbox/production, and granted to every MTurk
worker who passed the practice, so that later HITs can require it (a QualificationRequirement
with ``Comparator: Exists`` on its id). Grants are recorded one by one as MTurk confirms them; the
minute beat (``crowd.tasks.crowd_qualifications_grant``) grants whatever a pass's own task missed."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from crowd.clients.mturk import MTurk
from crowd.models import Platform, Publication, QualificationGrant, QualificationType
from crowd.platforms.mturk_qualifications import qualification_grant, qualification_type
from studies.models import Experiment, PracticeAttempt

PASSED_PRACTICE = QualificationType.Purpose.PASSED_PRACTICE


def practice_qualification(*, experiment: Experiment, sandbox: bool, client: Any) -> QualificationType:
    """The experiment's practice qualification type (created on MTurk the first time it is needed)."""
    return qualification_type(experiment=experiment, sandbox=sandbox, purpose=PASSED_PRACTICE, client=client)


def practice_qualifications_grant(*, experiment_id: int | None = None,
                                  client_for: Callable[[bool], Any] | None = None) -> int:
    """Grant each experiment's practice qualification to the MTurk workers who passed its practice
    and do not hold it yet, for every MTurk publication of it that has been sent (sandbox and
    production separately). One platform call per new worker; returns how many were granted."""
    sent = (Publication.objects.filter(platform=Platform.MTURK).exclude(status=Publication.Status.DRAFT)
            .exclude(external_id=""))
    if experiment_id is not None:
        sent = sent.filter(study__experiment_id=experiment_id)
    granted = 0
    for experiment_pk, sandbox in sorted(set(sent.values_list("study__experiment_id", "sandbox"))):
        passed = set(PracticeAttempt.objects.filter(experiment_id=experiment_pk, platform=Platform.MTURK,
                                                    status=PracticeAttempt.Status.PASSED)
                     .values_list("external_id", flat=True))
        done = set(QualificationGrant.objects.filter(qualification__experiment_id=experiment_pk,
                                                     qualification__sandbox=sandbox, qualification__purpose=PASSED_PRACTICE)
                   .values_list("worker_id", flat=True))
        todo = passed - done
        if not todo:
            continue
        client = client_for(sandbox) if client_for else MTurk(sandbox=sandbox)
        qualification = practice_qualification(experiment=Experiment.objects.get(pk=experiment_pk), sandbox=sandbox,
                                                client=client)
        granted += qualification_grant(qualification, client, todo)
    return granted


def required_practice_qualification(publication: Publication, slug: str) -> QualificationType | None:
    """The practice qualification a publication's HITs require (setting ``require_practice_of``: the
    slug of an experiment of the same researcher), in the publication's sandbox or production; None
    when that experiment has none there yet (no MTurk worker has passed its practice)."""
    owner_id = publication.study.experiment.owner_id
    return QualificationType.objects.filter(experiment__slug=slug.strip(), experiment__owner_id=owner_id,
                                            sandbox=publication.sandbox, purpose=PASSED_PRACTICE).first()
