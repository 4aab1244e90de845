"""Mechanical Turk's side of rater onboarding (``studies.onboarding``): the experiment's "passed the
practice" qualification type, created once per sandbox/production, and granted to every MTurk
worker who passed the practice, so that later HITs can require it (a QualificationRequirement
with ``Comparator: Exists`` on its id). Grants are recorded one by one as MTurk confirms them; the
minute beat (``crowd.tasks.crowd_qualifications_grant``) grants whatever a pass's own task missed."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction

from crowd.clients.mturk import MTurk
from crowd.models import Platform, PracticeGrant, PracticeQualification, Publication
from studies.models import Experiment, PracticeAttempt


def practice_qualification(*, experiment: Experiment, sandbox: bool, client: Any) -> PracticeQualification:
    """The experiment's practice qualification type (created on MTurk the first time it is needed)."""
    existing = PracticeQualification.objects.filter(experiment=experiment, sandbox=sandbox).first()
    if existing:
        return existing
    created = client.call(
        "create_qualification_type", Name=f"Concord {experiment.slug}: passed practice",
        Description=f"Granted by Concord to workers who passed the practice items of experiment '{experiment.title}'.",
        QualificationTypeStatus="Active", Keywords="concord,practice")
    qid = created["QualificationType"]["QualificationTypeId"]
    try:
        with transaction.atomic():
            return PracticeQualification.objects.create(experiment=experiment, sandbox=sandbox,
                                                        qualification_type_id=qid)
    except IntegrityError:
        return PracticeQualification.objects.get(experiment=experiment, sandbox=sandbox)


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
        done = set(PracticeGrant.objects.filter(qualification__experiment_id=experiment_pk,
                                                qualification__sandbox=sandbox).values_list("worker_id", flat=True))
        todo = passed - done
        if not todo:
            continue
        client = client_for(sandbox) if client_for else MTurk(sandbox=sandbox)
        qualification = practice_qualification(experiment=Experiment.objects.get(pk=experiment_pk), sandbox=sandbox,
                                                client=client)
        for worker in sorted(todo):
            client.call("associate_qualification_with_worker", QualificationTypeId=qualification.qualification_type_id,
                        WorkerId=worker, IntegerValue=1, SendNotification=False)
            PracticeGrant.objects.get_or_create(qualification=qualification, worker_id=worker)
            granted += 1
    return granted


def required_practice_qualification(publication: Publication, slug: str) -> PracticeQualification | None:
    """The practice qualification a publication's HITs require (setting ``require_practice_of``: the
    slug of an experiment of the same researcher), in the publication's sandbox or production; None
    when that experiment has none there yet (no MTurk worker has passed its practice)."""
    owner_id = publication.study.experiment.owner_id
    return PracticeQualification.objects.filter(experiment__slug=slug.strip(), experiment__owner_id=owner_id,
                                                sandbox=publication.sandbox).first()
