"""An experiment's custom MTurk qualifications (``QualificationType``: "took part", "passed practice"): the
type created on MTurk the first time it is needed, once per purpose in sandbox and production, and grants
recorded one by one as MTurk confirms them (a retry grants the rest)."""
from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from crowd.models import QualificationGrant, QualificationType
from studies.models import Experiment

Purpose = QualificationType.Purpose
NAMES = {Purpose.TOOK_PART: ("took part", "started a condition of experiment '{title}'; its other conditions are "
                                          "not open to them.", "concord"),
         Purpose.PASSED_PRACTICE: ("passed practice", "passed the practice items of experiment '{title}'.",
                                   "concord,practice")}


def qualification_type(*, experiment: Experiment, sandbox: bool, purpose: str, client: Any) -> QualificationType:
    """The experiment's qualification type of this purpose (created on MTurk the first time it is needed)."""
    existing = QualificationType.objects.filter(experiment=experiment, sandbox=sandbox, purpose=purpose).first()
    if existing:
        return existing
    name, description, keywords = NAMES[Purpose(purpose)]
    created = client.call(
        "create_qualification_type", Name=f"Concord {experiment.slug}: {name}",
        Description="Granted by Concord to workers who " + description.format(title=experiment.title),
        QualificationTypeStatus="Active", Keywords=keywords)
    qid = created["QualificationType"]["QualificationTypeId"]
    try:
        with transaction.atomic():
            return QualificationType.objects.create(experiment=experiment, sandbox=sandbox, purpose=purpose,
                                                    qualification_type_id=qid)
    except IntegrityError:
        return QualificationType.objects.get(experiment=experiment, sandbox=sandbox, purpose=purpose)


def qualification_grant(qualification: QualificationType, client: Any, workers: set[str]) -> int:
    """One platform call per worker, each recorded as soon as MTurk has it (a retry grants the rest)."""
    for worker in sorted(workers):
        client.call("associate_qualification_with_worker", QualificationTypeId=qualification.qualification_type_id,
                    WorkerId=worker, IntegerValue=1, SendNotification=False)
        QualificationGrant.objects.get_or_create(qualification=qualification, worker_id=worker)
    return len(workers)
