"""Mechanical Turk behind the crowd protocol: HITs under one HIT type with an ExternalQuestion,
the experiment's "took part" qualification (between-subjects), sync by assignment id, review,
bonuses with an idempotency token, worker blocks and notifications, HIT changes.

Every call goes through ``crowd.clients.mturk.MTurk``; a client can be handed in (tests build one
behind botocore's Stubber), else one is built for the publication's sandbox or production endpoint.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from crowd import costs
from crowd.clients.mturk import MTurk, external_question, qualification_requirements
from crowd.errors import PlatformError, PublishRefused
from crowd.models import Bonus, Hit, Platform, Publication, QualificationType, WorkerAssignment
from crowd.platforms import mturk_practice
from crowd.platforms.base import CrowdPlatform, SyncSummary, mirror_review, record_error, simulated_id
from crowd.platforms.mturk_qualifications import qualification_grant, qualification_type
from crowd.scope import concord_assignments, entry_url, platform_assignment_id, worker_key
from studies.models import Assignment, Study
from studies.rating import review

ABANDON_GRACE = timedelta(minutes=5)
MTURK_STATES = {"Submitted": WorkerAssignment.State.SUBMITTED, "Approved": WorkerAssignment.State.APPROVED,
                "Rejected": WorkerAssignment.State.REJECTED}
DEFAULT_ASSIGNMENTS_PER_HIT = 9  # 10 or more costs 20 % more in fees (crowd.costs)


def _mturk(publication: Publication, client: MTurk | None) -> MTurk:
    return client if client is not None else MTurk(sandbox=publication.sandbox)


def mturk_balance(*, publication: Publication, client: MTurk | None = None) -> Decimal:
    return Decimal(_mturk(publication, client).balance())


# --- publishing -------------------------------------------------------------------------------------

def experiment_qualification(*, publication: Publication, client: MTurk) -> QualificationType:
    """The experiment's "took part" qualification type on MTurk (created once per sandbox/production)."""
    return qualification_type(experiment=publication.study.experiment, sandbox=publication.sandbox,
                              purpose=QualificationType.Purpose.TOOK_PART, client=client)


def _practice_required(publication: Publication, s: Mapping[str, Any]) -> str | None:
    """The practice qualification id the HITs require (``require_practice_of``), or None."""
    slug = s.get("require_practice_of")
    found = mturk_practice.required_practice_qualification(publication, slug) if slug else None
    return found.qualification_type_id if found else None


def mturk_publish(*, publication: Publication, confirm_production: bool = False,
                  client: MTurk | None = None) -> Publication:
    """Publish the study as HITs: refuse locally if it cannot be (nothing sent); check the balance
    covers the estimate; create the experiment's qualification, one HIT type and the HITs. Each HIT
    is recorded as soon as MTurk has created it; ``UniqueRequestToken`` per HIT makes a retried
    publish safe."""
    PLATFORM.refuse_unless_publishable(publication, confirm_production)
    client = _mturk(publication, client)
    s = PLATFORM.effective_settings(publication)
    estimate = PLATFORM.estimate(s)
    try:
        balance = Decimal(client.balance())
        if balance < estimate.total:
            raise PublishRefused(f"cannot publish: the account balance ${balance} is below the estimated cost "
                                 f"${estimate.total} (nothing was created)")
        qualification = experiment_qualification(publication=publication, client=client)
        hit_type = client.call(
            "create_hit_type", Title=s["title"][:128], Description=s["description"][:2000], Reward=str(costs.money(s["reward"])),
            AssignmentDurationInSeconds=int(s["duration_minutes"]) * 60,
            AutoApprovalDelayInSeconds=int(s["auto_approve_days"]) * 86400, Keywords=s["keywords"][:1000],
            QualificationRequirements=qualification_requirements(
                s, sandbox=publication.sandbox, experiment_qualification=qualification.qualification_type_id,
                practice_qualification=_practice_required(publication, s)),
        )["HITTypeId"]
        Publication.objects.filter(pk=publication.pk).update(external_id=hit_type)
        question = external_question(entry_url(publication.study, experiment=bool(s["experiment_link"])),
                                     int(s["frame_height"]))
        done = set(publication.hits.values_list("hit_id", flat=True))
        per_hit, places = int(s["assignments_per_hit"]), int(s["places"])
        for index in range(int(s["hits"]) - len(done)):
            number = len(done) + index  # the last HIT holds what is left of the places
            hit = client.call(
                "create_hit_with_hit_type", HITTypeId=hit_type, MaxAssignments=max(1, min(per_hit, places - number * per_hit)),
                LifetimeInSeconds=int(s["lifetime_hours"]) * 3600, Question=question,
                RequesterAnnotation=f"concord:{publication.study.slug}"[:255],
                UniqueRequestToken=f"concord-{publication.pk}-hit-{number}",
            )["HIT"]
            Hit.objects.create(publication=publication, hit_id=hit["HITId"], max_assignments=hit["MaxAssignments"],
                               expires_at=hit.get("Expiration"), hit_status=hit.get("HITStatus", ""))
    except (PlatformError, PublishRefused) as error:
        record_error(publication, error)
        raise
    Publication.objects.filter(pk=publication.pk).update(
        status=Publication.Status.PUBLISHED, published_at=timezone.now(), last_error="", external_id=hit_type,
        settings={**publication.settings, "reward": s["reward"]})  # what was sent, whatever the study says later
    publication.refresh_from_db()
    return publication


# --- sync and qualifications ------------------------------------------------------------------------

def mturk_sync(*, publication: Publication, client: MTurk | None = None, now: datetime | None = None) -> SyncSummary:
    """Read every HIT's submitted/approved/rejected assignments (all pages), record them, match them
    to Concord's assignments by MTurk assignment id and worker id (a decision taken on MTurk, such as
    auto-approval, is mirrored in Concord), abandon Concord assignments whose
    MTurk assignment is gone (its duration has passed without a submission, or its HIT no longer
    exists), and grant the experiment's qualification to every worker seen."""
    client, now, summary = _mturk(publication, client), now or timezone.now(), SyncSummary()
    s = PLATFORM.effective_settings(publication)
    hits = {h.hit_id: h for h in publication.hits.all()}
    gone: set[str] = set()
    records: dict[str, dict] = {}
    for hit in hits.values():
        try:
            info = client.call("get_hit", HITId=hit.hit_id)["HIT"]
        except PlatformError as error:
            if "does not exist" in error.message.lower():
                gone.add(hit.hit_id)
                Hit.objects.filter(pk=hit.pk).update(hit_status="Gone")
                summary.problems.append(f"HIT {hit.hit_id} no longer exists on MTurk")
                continue
            raise
        Hit.objects.filter(pk=hit.pk).update(hit_status=info.get("HITStatus", ""), expires_at=info.get("Expiration"),
                                             max_assignments=info.get("MaxAssignments", hit.max_assignments))
        for row in client.assignments_for_hit(hit.hit_id):
            records[row["AssignmentId"]] = row
    summary.seen = len(records)
    concord = concord_assignments(publication, set(hits))
    # ids compare by worker_key (a worker once entered with an id in another case is still them)
    by_platform_id = {worker_key(platform_assignment_id(a)): a for a in concord}
    seen = {worker_key(assignment_id) for assignment_id in records}
    with transaction.atomic():
        for assignment_id, row in records.items():
            match = by_platform_id.get(worker_key(assignment_id))
            if match is not None and worker_key(match.rater.external_id) != worker_key(row["WorkerId"]):
                summary.problems.append(f"MTurk assignment {assignment_id}: worker {row['WorkerId']} differs from "
                                        f"Concord's {match.rater.external_id}; not matched")
                match = None
            accepted, submitted = row.get("AcceptTime"), row.get("SubmitTime")
            WorkerAssignment.objects.update_or_create(
                publication=publication, external_id=assignment_id,
                defaults={"worker_id": row["WorkerId"], "hit_id": row["HITId"], "assignment": match,
                          "state": MTURK_STATES.get(row["AssignmentStatus"], WorkerAssignment.State.SUBMITTED),
                          "platform_status": row["AssignmentStatus"], "accepted_at": accepted, "submitted_at": submitted,
                          "time_taken": (submitted - accepted).total_seconds() if accepted and submitted else None})
            summary.linked += match is not None
            mirror_review(match, MTURK_STATES.get(row["AssignmentStatus"], ""), row.get("RequesterFeedback", ""), "MTurk")
        duration = timedelta(minutes=int(s["duration_minutes"]))
        for assignment in concord:
            assignment_id = platform_assignment_id(assignment)
            if not assignment_id or worker_key(assignment_id) in seen:
                continue
            hit_id = (assignment.platform_data or {}).get("hitId", "")
            expired = assignment.started_at + duration + ABANDON_GRACE < now
            state = WorkerAssignment.State.ACTIVE
            if assignment.status == Assignment.Status.STARTED and (expired or hit_id in gone):
                review.assignment_abandon(assignment=assignment, reason="the MTurk assignment was returned, timed "
                                          "out or its HIT is gone" if hit_id not in gone else "its HIT no longer exists")
                summary.abandoned += 1
                state = WorkerAssignment.State.ABANDONED
            elif assignment.status == Assignment.Status.ABANDONED or expired:
                state = WorkerAssignment.State.ABANDONED
            WorkerAssignment.objects.update_or_create(
                publication=publication, external_id=assignment_id,
                defaults={"worker_id": assignment.rater.external_id, "hit_id": hit_id, "assignment": assignment,
                          "state": state, "accepted_at": assignment.started_at})
    # every worker once, spelled as MTurk spells them where MTurk has listed them
    workers = {worker_key(a.rater.external_id): a.rater.external_id for a in concord} \
        | {worker_key(r["WorkerId"]): r["WorkerId"] for r in records.values()}
    summary.granted = _grant_qualification(publication, client, set(workers.values()))
    Publication.objects.filter(pk=publication.pk).update(synced_at=now)
    return summary


def _grant_qualification(publication: Publication, client: MTurk, workers: set[str]) -> int:
    """Grant the experiment's qualification to every worker seen who does not have it yet (so MTurk
    hides the experiment's other conditions from them)."""
    qualification = QualificationType.objects.filter(experiment=publication.study.experiment, sandbox=publication.sandbox,
                                                     purpose=QualificationType.Purpose.TOOK_PART).first()
    if qualification is None or not workers:
        return 0
    return qualification_grant(qualification, client, workers - set(qualification.grants.values_list("worker_id", flat=True)))


def qualifications_grant_new() -> int:
    """Grant each experiment's qualification to the MTurk workers who started one of its conditions
    and do not hold it yet, so MTurk hides the other conditions from them within a minute of their
    start (the beat runs this every minute; the full sync also grants what it sees). One query for
    the workers to grant per qualification; one platform call per new worker."""
    granted = 0
    for qualification in QualificationType.objects.filter(purpose=QualificationType.Purpose.TOOK_PART):
        workers = set(
            Assignment.objects.filter(experiment_id=qualification.experiment_id, rater__platform=Study.Platform.MTURK)
            .exclude(rater__external_id__in=qualification.grants.values("worker_id"))
            .values_list("rater__external_id", flat=True)
        )
        if workers:
            granted += qualification_grant(qualification, MTurk(sandbox=qualification.sandbox), workers)
    return granted


# --- bonuses and HITs -------------------------------------------------------------------------------

def _duplicate_token(error: PlatformError) -> bool:
    text = error.message.lower()
    return "uniquerequesttoken" in text.replace(" ", "") or "already been processed" in text


def mturk_bonuses_send(rows: list[Bonus], client: MTurk | None = None) -> None:
    """``send_bonus`` with the row's UniqueRequestToken, so a retry after a lost answer pays once
    (MTurk refuses the repeated token, which counts as sent)."""
    for bonus in rows:
        try:
            _mturk(bonus.publication, client).call(
                "send_bonus", WorkerId=bonus.assignment.rater.external_id, BonusAmount=str(bonus.amount),
                AssignmentId=platform_assignment_id(bonus.assignment), Reason=bonus.reason,
                UniqueRequestToken=bonus.token)
        except PlatformError as error:
            if not _duplicate_token(error):
                Bonus.objects.filter(pk=bonus.pk).update(status=Bonus.Status.FAILED, error=str(error)[:2000])
                raise
        Bonus.objects.filter(pk=bonus.pk).update(status=Bonus.Status.SENT, sent_at=timezone.now(), error="")


def hit_extend(*, hit: Hit, hours: int = 0, additional_assignments: int = 0, client: MTurk | None = None) -> Hit:
    """Keep a HIT open longer (``hours`` from now) and/or add assignments to it."""
    if hours <= 0 and additional_assignments <= 0:
        raise ValidationError({"hours": "extend by some hours or some assignments"})
    client = client or MTurk(sandbox=hit.publication.sandbox)
    if hours > 0:
        expires = timezone.now() + timedelta(hours=hours)
        client.call("update_expiration_for_hit", HITId=hit.hit_id, ExpireAt=expires)
        Hit.objects.filter(pk=hit.pk).update(expires_at=expires, hit_status="Assignable")
    if additional_assignments > 0:
        client.call("create_additional_assignments_for_hit", HITId=hit.hit_id,
                    NumberOfAdditionalAssignments=additional_assignments,
                    UniqueRequestToken=f"concord-hit-{hit.pk}-add-{hit.max_assignments}")
        Hit.objects.filter(pk=hit.pk).update(max_assignments=hit.max_assignments + additional_assignments)
    hit.refresh_from_db()
    return hit


def hits_expire(*, publication: Publication, client: MTurk | None = None) -> int:
    """Expire every HIT of the publication now (MTurk: an expiry time in the past); workers who have
    accepted one may still submit it."""
    if publication.platform != Platform.MTURK:  # it would mark a Prolific study stopped without telling Prolific
        raise ValidationError({"publication": f"{publication.get_platform_display()} publications have no HITs"})
    client = _mturk(publication, client)
    count = 0
    for hit in publication.hits.exclude(hit_status="Gone"):
        client.call("update_expiration_for_hit", HITId=hit.hit_id, ExpireAt=datetime(2015, 1, 1, tzinfo=UTC))
        Hit.objects.filter(pk=hit.pk).update(expires_at=timezone.now(), hit_status="Unassignable")
        count += 1
    Publication.objects.filter(pk=publication.pk).update(status=Publication.Status.STOPPED)
    return count


# --- the protocol -----------------------------------------------------------------------------------

class MTurkPlatform(CrowdPlatform):
    key = Platform.MTURK
    label = "MTurk"
    has_sandbox = True
    has_balance = True
    messages_workers = True
    external_label = "HIT type"
    reward_setting = "reward"
    setting_kinds = {
        "reward": "money", "planned_bonus_total": "money", "hits": "count", "assignments_per_hit": "count",
        "lifetime_hours": "count", "duration_minutes": "count", "auto_approve_days": "count0", "frame_height": "count0",
        "min_approval_rate": "count", "min_approved": "count0", "masters": "switch", "experiment_link": "switch",
        "locales": "list", "title": "text", "description": "text", "keywords": "text", "require_practice_of": "text",
    }
    setting_fields = (
        ("reward", "Reward per assignment (USD)"), ("hits", "HITs"), ("assignments_per_hit", "Assignments per HIT"),
        ("lifetime_hours", "HIT lifetime (hours)"), ("duration_minutes", "Time allowed (minutes)"),
        ("auto_approve_days", "Auto-approve after (days)"), ("title", "Title"), ("description", "Description"),
        ("keywords", "Keywords"), ("masters", "Masters only"), ("min_approval_rate", "Minimum approval rate (%)"),
        ("min_approved", "Minimum approved HITs"), ("locales", "Locales (e.g. US, GB)"),
        ("planned_bonus_total", "Planned bonuses (USD)"),
        ("require_practice_of", "Only workers who passed the practice of experiment (its slug)"))

    def default_settings(self, publication: Publication, *, places: int, reward: Decimal,
                         minutes: float | None) -> dict[str, Any]:
        study = publication.study
        per_hit = int(publication.settings.get("assignments_per_hit") or DEFAULT_ASSIGNMENTS_PER_HIT)
        if publication.settings.get("hits"):  # HITs the researcher chose are filled whole
            places = int(publication.settings["hits"]) * per_hit
        return {
            # the places the study needs (studies.authoring.planning), the last HIT holding the rest
            "places": places, "hits": max(1, math.ceil(places / per_hit)),
            "reward": str(costs.money(reward)), "assignments_per_hit": per_hit,
            "lifetime_hours": 72, "duration_minutes": int(study.platform_config.get("time_limit_minutes") or 60),
            "auto_approve_days": 3, "keywords": "dialogue, chatbot, rating, evaluation, survey", "masters": False,
            "min_approval_rate": 95, "min_approved": 100, "locales": ["US"], "frame_height": 0,
        }

    def check_setting(self, key: str, value: Any) -> Any:
        if key == "min_approval_rate" and value > 100:
            raise ValueError("is a percentage (0-100)")
        if key == "locales" and any(len(v.partition("-")[0]) != 2 for v in value):
            raise ValueError("locales are ISO country codes such as US, GB or US-NY")
        if key == "assignments_per_hit" and value > 1_000_000:
            raise ValueError("too many")
        return value

    def estimate(self, settings: Mapping[str, Any]) -> costs.Estimate:
        s = settings
        return costs.mturk_estimate(reward=s["reward"], hits=int(s["hits"]), assignments_per_hit=int(s["assignments_per_hit"]),
                                    bonuses=s["planned_bonus_total"], masters=bool(s["masters"]), places=int(s["places"]))

    def platform_problems(self, publication: Publication, s: Mapping[str, Any], *,
                          confirm_production: bool) -> list[str]:
        problems = []
        if Decimal(s["reward"]) <= 0:
            problems.append("no reward is set")
        if not publication.sandbox and not confirm_production:
            problems.append("this is production MTurk (real money): confirm it explicitly")
        if (slug := s.get("require_practice_of")) and mturk_practice.required_practice_qualification(publication,
                                                                                                   slug) is None:
            problems.append(f"require_practice_of: experiment {slug!r} of yours has no practice qualification "
                            f"{'in the sandbox' if publication.sandbox else 'in production'} yet (nobody has passed "
                            "its practice on MTurk there)")
        return problems

    def publish(self, *, publication: Publication, confirm_production: bool = False, draft_only: bool = False,
                client: MTurk | None = None) -> Publication:
        return mturk_publish(publication=publication, confirm_production=confirm_production, client=client)

    def published_summary(self, publication: Publication) -> str:
        return f"published as {publication.hits.count()} HIT(s) of type {publication.external_id}"

    def balance(self, *, publication: Publication, client: MTurk | None = None) -> Decimal:
        return mturk_balance(publication=publication, client=client)

    def sync(self, *, publication: Publication, client: MTurk | None = None) -> SyncSummary:
        return mturk_sync(publication=publication, client=client)

    def client(self, publication: Publication, client: MTurk | None = None) -> MTurk:
        return _mturk(publication, client)

    def rejection_problem(self, feedback: str, category: str) -> str:
        return "" if feedback else "a rejection needs feedback: the worker sees why"

    def review(self, client: MTurk, record: WorkerAssignment, *, decision: str, feedback: str, category: str) -> None:
        if decision == "approve":
            client.call("approve_assignment", AssignmentId=record.external_id,
                        **({"RequesterFeedback": feedback[:1024]} if feedback else {}))
        else:
            client.call("reject_assignment", AssignmentId=record.external_id, RequesterFeedback=feedback[:1024])

    def bonus_problems(self, publication: Publication, assignment: Assignment) -> dict[str, str]:
        return {} if platform_assignment_id(assignment) else {"assignment": "this assignment has no MTurk assignment id"}

    def bonuses_send(self, rows: list[Bonus], client: MTurk | None = None) -> None:
        mturk_bonuses_send(rows, client)

    def simulated_entry(self, run: str, index: int) -> tuple[str, dict[str, str]]:
        """Worker ids are "A" and 13 upper-case letters or digits; assignment and HIT ids 30."""
        worker = "A" + simulated_id(run, index, "worker", length=13).upper()
        return worker, {"workerId": worker, "assignmentId": simulated_id(run, index, "assignment", length=30).upper(),
                        "hitId": simulated_id(run, "hit", length=30).upper(),
                        "turkSubmitTo": "https://workersandbox.mturk.com"}

    def workers_notify(self, client: MTurk, worker_ids: Sequence[str], subject: str, message: str) -> list[dict]:
        """MTurk's NotifyWorkers takes at most 100 workers per call; returns the per-worker failures."""
        failures: list[dict] = []
        for start in range(0, len(worker_ids), 100):
            answer = client.call("notify_workers", Subject=subject[:200], MessageText=message[:4096],
                                 WorkerIds=list(worker_ids[start:start + 100]))
            failures.extend(answer.get("NotifyWorkersFailureStatuses", []))
        return failures


PLATFORM = MTurkPlatform()
