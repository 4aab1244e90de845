"""Every write of the crowd app: publishing on Mechanical Turk and Prolific, syncing their view of
the assignments, reviews, bonuses, blocks, HIT changes.

Order of work, so that a platform error leaves Concord's state unchanged: check locally (refuse,
sending nothing), call the platform, then record what the platform accepted. Status changes of
Concord's assignments go through ``studies.rating.review``. Platform clients are passed in (tests hand in
stubbed ones); by default they are built from the environment.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from crowd import conf, costs, prolific
from crowd.errors import PlatformError, PublishRefused
from crowd.models import (
    Bonus,
    Hit,
    Platform,
    Publication,
    QualificationGrant,
    QualificationType,
    WorkerAssignment,
    WorkerBlock,
)
from crowd.mturk import MTurk, external_question, qualification_requirements
from studies.authoring import allocation, editing, planning
from studies.models import Assignment, Study
from studies.rating import platforms, review

MTURK_KEYS = {"reward", "hits", "assignments_per_hit", "lifetime_hours", "duration_minutes", "auto_approve_days",
              "title", "description", "keywords", "masters", "min_approval_rate", "min_approved", "locales",
              "frame_height", "planned_bonus_total", "experiment_link"}
PROLIFIC_KEYS = {"reward_cents", "places", "estimated_minutes", "max_minutes", "devices", "filters", "title",
                 "description", "completion_code", "screened_out_code", "planned_bonus_total", "fee_rate",
                 "block_other_conditions", "experiment_link"}
ABANDON_GRACE = timedelta(minutes=5)


# --- settings ---------------------------------------------------------------------------------------

def places_needed(study: Study) -> int:
    """Raters needed so every item reaches its target: ceil(items x raters per item / items per rater)."""
    items = study.items.filter(check_kind="").count()  # check items ride along in every assignment
    if not items:
        return 0
    per_rater = min(study.items_per_assignment, items)
    return math.ceil(items * study.raters_per_item / per_rater)


def uses_experiment_link(publication: Publication) -> bool:
    """True when the publication sends workers to the experiment-level link (one HIT type or one
    Prolific study for every condition; Concord assigns each new worker a condition)."""
    return bool(publication.settings.get("experiment_link"))


def _linked_studies(publication: Publication) -> list[Study]:
    """The studies a publication fills: its study, or every open condition of the experiment."""
    if not uses_experiment_link(publication):
        return [publication.study]
    return list(allocation.experiment_conditions(publication.study.experiment)) or [publication.study]


def effective_settings(publication: Publication) -> dict[str, Any]:
    """The publication's settings with defaults filled in (a researcher sets only what differs).
    With the experiment link, places default to the sum over the experiment's open conditions."""
    study = publication.study
    needed = sum(places_needed(s) for s in _linked_studies(publication))
    # The reward and the expected minutes are the study's (studies.authoring.planning: one source of truth); a
    # publication keeps its own reward only once sent (the record of what the platform was told).
    reward = study.reward if study.reward is not None else Decimal("0")
    minutes = planning.pay_plan(study)["minutes"]
    if publication.platform == Platform.MTURK:
        per_hit = int(publication.settings.get("assignments_per_hit") or 9)
        defaults = {
            "reward": str(costs.money(reward)), "assignments_per_hit": per_hit, "hits": max(1, math.ceil(needed / per_hit)),
            "lifetime_hours": 72, "duration_minutes": int(study.platform_config.get("time_limit_minutes") or 60),
            "auto_approve_days": 3, "title": study.title,
            "description": "Read short conversations and rate the replies of dialogue systems.",
            "keywords": "dialogue, chatbot, rating, evaluation, survey", "masters": False, "min_approval_rate": 95,
            "min_approved": 100, "locales": ["US"], "frame_height": 0, "planned_bonus_total": "0",
            "experiment_link": False,
        }
    else:
        defaults = {
            "reward_cents": int(reward * 100), "places": needed,
            "estimated_minutes": math.ceil(minutes) if minutes else 20, "max_minutes": None,
            "devices": ["desktop"], "filters": [], "title": study.title,
            "description": "Read short conversations and rate the replies of dialogue systems.",
            # The study's own fixed codes: the done page gives raters exactly these (studies.rating.answers).
            "completion_code": platforms.prolific_completion_code(study.platform_config or {}),
            "screened_out_code": str((study.platform_config or {}).get("screened_out_code") or ""),
            "planned_bonus_total": "0", "fee_rate": str(costs.PROLIFIC_DEFAULT_FEE), "block_other_conditions": True,
            "experiment_link": False,
        }
    return {**defaults, **{k: v for k, v in publication.settings.items() if v not in (None, "")}}


def _clean_settings(platform: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """Checked, typed settings; ValidationError names every bad field."""
    allowed = MTURK_KEYS if platform == Platform.MTURK else PROLIFIC_KEYS
    errors: dict[str, str] = {}
    cleaned: dict[str, Any] = {}
    for key, value in values.items():
        if key not in allowed:
            errors[key] = f"not a {platform} setting (known: {', '.join(sorted(allowed))})"
            continue
        if value in (None, ""):
            continue
        try:
            if key in ("reward", "planned_bonus_total", "fee_rate"):
                amount = Decimal(str(value))
                if not amount.is_finite() or amount < 0:
                    raise ValueError("must be a non-negative amount")
                cleaned[key] = str(costs.money(amount)) if key != "fee_rate" else str(amount)
            elif key in ("hits", "assignments_per_hit", "lifetime_hours", "duration_minutes", "auto_approve_days",
                         "frame_height", "min_approval_rate", "min_approved", "reward_cents", "places",
                         "estimated_minutes", "max_minutes"):
                number = int(value)
                if number < 0 or (number == 0 and key not in ("frame_height", "min_approved", "auto_approve_days")):
                    raise ValueError("must be a positive whole number")
                if key == "min_approval_rate" and number > 100:
                    raise ValueError("is a percentage (0-100)")
                cleaned[key] = number
            elif key in ("masters", "block_other_conditions", "experiment_link"):
                cleaned[key] = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
            elif key in ("locales", "devices"):
                items = [v.strip() for v in (value.split(",") if isinstance(value, str) else value) if str(v).strip()]
                if key == "devices" and set(items) - set(prolific.DEVICES):
                    raise ValueError(f"devices are {', '.join(prolific.DEVICES)}")
                if key == "locales" and any(len(v.partition("-")[0]) != 2 for v in items):
                    raise ValueError("locales are ISO country codes such as US, GB or US-NY")
                cleaned[key] = items
            elif key == "filters":
                if not isinstance(value, list) or not all(isinstance(f, dict) and "filter_id" in f for f in value):
                    raise ValueError("must be a list of Prolific filters ({filter_id, selected_values | selected_range})")
                cleaned[key] = value
            else:
                cleaned[key] = str(value).strip()
        except (TypeError, ValueError, InvalidOperation) as error:
            readable = not isinstance(error, InvalidOperation) and "invalid literal" not in str(error)
            errors[key] = str(error) if readable and str(error) else "not a valid number"
    if platform == Platform.MTURK and cleaned.get("assignments_per_hit", 1) > 1_000_000:
        errors["assignments_per_hit"] = "too many"
    if errors:
        raise ValidationError(errors)
    return cleaned


@transaction.atomic
def publication_configure(*, study: Study, platform: str, sandbox: bool = True,
                          settings: Mapping[str, Any] | None = None) -> Publication:
    """Create or update a study's publication on a platform (nothing is sent). Settings merge into
    the stored ones; the settings of a publication already sent can no longer change."""
    if platform not in Platform.values:
        raise ValidationError({"platform": f"one of {', '.join(Platform.values)}"})
    sandbox = bool(sandbox) and platform == Platform.MTURK
    cleaned = _clean_settings(platform, settings or {})
    publication, _ = Publication.objects.select_for_update().get_or_create(
        study=study, platform=platform, sandbox=sandbox)
    if cleaned and publication.status != Publication.Status.DRAFT:
        raise ValidationError({"settings": "this publication was already sent to the platform; its settings are fixed"})
    reward = cleaned.pop("reward", None) if "reward" in cleaned else cleaned.pop("reward_cents", None)
    if reward is not None:  # the study's reward (studies.authoring.planning reads it too)
        amount = Decimal(str(reward)) / (100 if platform == Platform.PROLIFIC else 1)
        editing.study_update(study=study, values={"reward": costs.money(amount)})
        study.refresh_from_db(fields=["reward"])
        publication.study = study
    publication.settings = {**publication.settings, **cleaned}
    publication.save(update_fields=["settings"])
    return publication


def publication_estimate(publication: Publication) -> costs.Estimate:
    s = effective_settings(publication)
    if publication.platform == Platform.MTURK:
        return costs.mturk_estimate(reward=s["reward"], hits=int(s["hits"]), assignments_per_hit=int(s["assignments_per_hit"]),
                                    bonuses=s["planned_bonus_total"], masters=bool(s["masters"]))
    return costs.prolific_estimate(reward_cents=int(s["reward_cents"]), places=int(s["places"]),
                                   bonuses=s["planned_bonus_total"], fee_rate=s["fee_rate"])


def entry_url(study: Study, *, prolific_parameters: bool = False, experiment: bool = False) -> str:
    """The address workers open: the study's link, or (``experiment``) its experiment's link."""
    path = reverse("raters:experiment_entry", args=[study.experiment.slug]) if experiment \
        else reverse("raters:entry", args=[study.slug])
    url = conf.public_base_url() + path
    return f"{url}?{prolific.URL_PARAMETERS}" if prolific_parameters else url


def _experiment_link_problems(publication: Publication, s: Mapping[str, Any]) -> list[str]:
    """Why the experiment link cannot carry this publication: conditions on other platforms,
    Prolific conditions with different completion codes (one Prolific study has one set), or
    another condition already published with the experiment link."""
    conditions = _linked_studies(publication)
    problems = []
    if problem := allocation.experiment_platform_problem(conditions):
        problems.append(problem)
    elif conditions[0].platform != publication.platform:
        problems.append(f"the experiment's conditions take raters from {conditions[0].get_platform_display()}")
    if publication.platform == Platform.PROLIFIC:
        differing = sorted(c.slug for c in conditions
                           if platforms.prolific_completion_code(c.platform_config or {}) != s["completion_code"])
        if differing:
            problems.append("with one Prolific study for the experiment every condition needs the completion code "
                            f"{s['completion_code'] or '(none)'} in its settings; these differ: {', '.join(differing)}")
    twin = Publication.objects.filter(study__experiment_id=publication.study.experiment_id, platform=publication.platform,
                                      sandbox=publication.sandbox, settings__experiment_link=True) \
        .exclude(pk=publication.pk).exclude(status=Publication.Status.DRAFT).select_related("study").first()
    if twin is not None:
        problems.append(f"the experiment link is already published through {twin.study.slug}'s publication")
    return problems


def publish_problems(publication: Publication, *, confirm_production: bool) -> list[str]:
    """Why this publication cannot be sent now (empty when it can). Checked before any call."""
    study, s = publication.study, effective_settings(publication)
    problems = []
    if study.status != Study.Status.PUBLISHED:
        problems.append(f"the study is {study.status}: publish it in Concord first" if study.status == Study.Status.DRAFT
                        else "the study is closed")
    if not study.items.exists():
        problems.append("the study has no items")
    if publication.status != Publication.Status.DRAFT and not (
            publication.platform == Platform.PROLIFIC and publication.status == Publication.Status.UNPUBLISHED):
        problems.append(f"it is already on {publication.get_platform_display()} ({publication.get_status_display()})")
    base = conf.public_base_url()
    if not base:
        problems.append("CONCORD_PUBLIC_URL is not set (the address workers open)")
    elif not base.startswith("https://"):
        problems.append("CONCORD_PUBLIC_URL must be an https:// address (both platforms open the task over https)")
    if s["experiment_link"]:
        problems.extend(_experiment_link_problems(publication, s))
    if publication.platform == Platform.MTURK:
        if Decimal(s["reward"]) <= 0:
            problems.append("no reward is set")
        if not publication.sandbox and not confirm_production:
            problems.append("this is production MTurk (real money): confirm it explicitly")
    else:
        if int(s["reward_cents"]) <= 0:
            problems.append("no reward is set")
        if not s["completion_code"]:
            problems.append("no completion code is set (the study's fixed code)")
        if int(s["places"]) <= 0:
            problems.append("no places")
        if not confirm_production:
            problems.append("Prolific has no sandbox (real money): confirm it explicitly")
    return problems


def _refuse_unless_publishable(publication: Publication, confirm_production: bool) -> None:
    problems = publish_problems(publication, confirm_production=confirm_production)
    if problems:
        raise PublishRefused("cannot publish: " + "; ".join(problems) + " (nothing was sent)")


def _record_error(publication: Publication, error: Exception) -> None:
    Publication.objects.filter(pk=publication.pk).update(last_error=str(error)[:2000])


# --- Mechanical Turk --------------------------------------------------------------------------------

def _mturk(publication: Publication, client: MTurk | None) -> MTurk:
    return client if client is not None else MTurk(sandbox=publication.sandbox)


def mturk_balance(*, publication: Publication, client: MTurk | None = None) -> Decimal:
    return Decimal(_mturk(publication, client).balance())


def experiment_qualification(*, publication: Publication, client: MTurk) -> QualificationType:
    """The experiment's "took part" qualification type on MTurk (created once per sandbox/production)."""
    experiment = publication.study.experiment
    existing = QualificationType.objects.filter(experiment=experiment, sandbox=publication.sandbox).first()
    if existing:
        return existing
    created = client.call(
        "create_qualification_type", Name=f"Concord {experiment.slug}: took part",
        Description=f"Granted by Concord to workers who started a condition of experiment '{experiment.title}'; "
                    "its other conditions are not open to them.",
        QualificationTypeStatus="Active", Keywords="concord")
    qid = created["QualificationType"]["QualificationTypeId"]
    try:
        with transaction.atomic():
            return QualificationType.objects.create(experiment=experiment, sandbox=publication.sandbox,
                                                    qualification_type_id=qid)
    except IntegrityError:
        return QualificationType.objects.get(experiment=experiment, sandbox=publication.sandbox)


def mturk_publish(*, publication: Publication, confirm_production: bool = False,
                  client: MTurk | None = None) -> Publication:
    """Publish the study as HITs: refuse locally if it cannot be (nothing sent); check the balance
    covers the estimate; create the experiment's qualification, one HIT type and the HITs. Each HIT
    is recorded as soon as MTurk has created it; ``UniqueRequestToken`` per HIT makes a retried
    publish safe."""
    _refuse_unless_publishable(publication, confirm_production)
    client = _mturk(publication, client)
    s = effective_settings(publication)
    estimate = publication_estimate(publication)
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
                s, sandbox=publication.sandbox, experiment_qualification=qualification.qualification_type_id),
        )["HITTypeId"]
        Publication.objects.filter(pk=publication.pk).update(external_id=hit_type)
        question = external_question(entry_url(publication.study, experiment=bool(s["experiment_link"])),
                                     int(s["frame_height"]))
        done = set(publication.hits.values_list("hit_id", flat=True))
        for index in range(int(s["hits"]) - len(done)):
            hit = client.call(
                "create_hit_with_hit_type", HITTypeId=hit_type, MaxAssignments=int(s["assignments_per_hit"]),
                LifetimeInSeconds=int(s["lifetime_hours"]) * 3600, Question=question,
                RequesterAnnotation=f"concord:{publication.study.slug}"[:255],
                UniqueRequestToken=f"concord-{publication.pk}-hit-{len(done) + index}",
            )["HIT"]
            Hit.objects.create(publication=publication, hit_id=hit["HITId"], max_assignments=hit["MaxAssignments"],
                               expires_at=hit.get("Expiration"), hit_status=hit.get("HITStatus", ""))
    except (PlatformError, PublishRefused) as error:
        _record_error(publication, error)
        raise
    Publication.objects.filter(pk=publication.pk).update(
        status=Publication.Status.PUBLISHED, published_at=timezone.now(), last_error="", external_id=hit_type,
        settings={**publication.settings, "reward": s["reward"]})  # what was sent, whatever the study says later
    publication.refresh_from_db()
    return publication


MTURK_STATES = {"Submitted": WorkerAssignment.State.SUBMITTED, "Approved": WorkerAssignment.State.APPROVED,
                "Rejected": WorkerAssignment.State.REJECTED}


def platform_assignment_id(assignment: Assignment) -> str:
    """The platform's id for this acceptance (MTurk assignmentId, Prolific SESSION_ID), which the
    entry bound the assignment to (``Assignment.acceptance_id``); rows from before that binding keep
    it only in platform_data."""
    if assignment.acceptance_id:
        return assignment.acceptance_id
    data = assignment.platform_data or {}
    return str(data.get("assignmentId") or data.get("SESSION_ID") or "")


@dataclass
class SyncSummary:
    seen: int = 0
    linked: int = 0
    abandoned: int = 0
    granted: int = 0
    problems: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = (f"{self.seen} platform assignment(s) seen, {self.linked} matched to Concord, "
                f"{self.abandoned} abandoned, {self.granted} qualification(s) granted")
        return text + (f"; problems: {'; '.join(self.problems)}" if self.problems else "")


def _concord_assignments(publication: Publication, hit_ids: set[str] | None = None) -> list[Assignment]:
    """Concord's assignments this publication brought in: its study's, or with the experiment link
    those of every condition of the experiment."""
    where = {"experiment_id": publication.study.experiment_id} if uses_experiment_link(publication) \
        else {"study": publication.study}
    rows = list(Assignment.objects.filter(**where, rater__platform=publication.platform).select_related("rater"))
    if hit_ids is not None:
        rows = [a for a in rows if (a.platform_data or {}).get("hitId") in hit_ids]
    return rows


def _mirror_review(assignment: Assignment | None, state: str, feedback: str, platform: str) -> None:
    """A decision taken on the platform itself (MTurk's auto-approval, a review in Prolific's web app)
    is mirrored onto Concord's submitted assignment, so both say the same."""
    if assignment is None or assignment.status != Assignment.Status.SUBMITTED:
        return
    if state == WorkerAssignment.State.APPROVED:
        review.assignment_approve(assignment=assignment)
    elif state == WorkerAssignment.State.REJECTED:
        review.assignment_reject(assignment=assignment, reason=feedback or f"rejected on {platform}")


def mturk_sync(*, publication: Publication, client: MTurk | None = None, now: datetime | None = None) -> SyncSummary:
    """Read every HIT's submitted/approved/rejected assignments (all pages), record them, match them
    to Concord's assignments by MTurk assignment id and worker id (a decision taken on MTurk, such as
    auto-approval, is mirrored in Concord), abandon Concord assignments whose
    MTurk assignment is gone (its duration has passed without a submission, or its HIT no longer
    exists), and grant the experiment's qualification to every worker seen."""
    client, now, summary = _mturk(publication, client), now or timezone.now(), SyncSummary()
    s = effective_settings(publication)
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
    concord = _concord_assignments(publication, set(hits))
    by_platform_id = {platform_assignment_id(a): a for a in concord}
    with transaction.atomic():
        for assignment_id, row in records.items():
            match = by_platform_id.get(assignment_id)
            if match is not None and match.rater.external_id != row["WorkerId"]:
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
            _mirror_review(match, MTURK_STATES.get(row["AssignmentStatus"], ""), row.get("RequesterFeedback", ""), "MTurk")
        duration = timedelta(minutes=int(s["duration_minutes"]))
        for assignment in concord:
            assignment_id = platform_assignment_id(assignment)
            if not assignment_id or assignment_id in records:
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
    summary.granted = _grant_qualification(publication, client, {a.rater.external_id for a in concord}
                                           | {r["WorkerId"] for r in records.values()})
    Publication.objects.filter(pk=publication.pk).update(synced_at=now)
    return summary


def _grant_qualification(publication: Publication, client: MTurk, workers: set[str]) -> int:
    """Grant the experiment's qualification to every worker seen who does not have it yet (so MTurk
    hides the experiment's other conditions from them)."""
    qualification = QualificationType.objects.filter(experiment=publication.study.experiment,
                                                     sandbox=publication.sandbox).first()
    if qualification is None or not workers:
        return 0
    return _grant(qualification, client, workers - set(qualification.grants.values_list("worker_id", flat=True)))


def _grant(qualification: QualificationType, client: MTurk, workers: set[str]) -> int:
    """One platform call per worker, each recorded as soon as MTurk has it (a retry grants the rest)."""
    for worker in sorted(workers):
        client.call("associate_qualification_with_worker", QualificationTypeId=qualification.qualification_type_id,
                    WorkerId=worker, IntegerValue=1, SendNotification=False)
        QualificationGrant.objects.get_or_create(qualification=qualification, worker_id=worker)
    return len(workers)


def qualifications_grant_new() -> int:
    """Grant each experiment's qualification to the MTurk workers who started one of its conditions
    and do not hold it yet, so MTurk hides the other conditions from them within a minute of their
    start (the beat runs this every minute; the full sync also grants what it sees). One query for
    the workers to grant per qualification; one platform call per new worker."""
    granted = 0
    for qualification in QualificationType.objects.select_related("experiment"):
        workers = set(
            Assignment.objects.filter(experiment_id=qualification.experiment_id, rater__platform=Study.Platform.MTURK)
            .exclude(rater__external_id__in=qualification.grants.values("worker_id"))
            .values_list("rater__external_id", flat=True)
        )
        if workers:
            granted += _grant(qualification, MTurk(sandbox=qualification.sandbox), workers)
    return granted


# --- review -----------------------------------------------------------------------------------------

@dataclass
class ReviewOutcome:
    done: list[WorkerAssignment] = field(default_factory=list)
    failed: list[tuple[WorkerAssignment, str]] = field(default_factory=list)
    skipped: list[tuple[WorkerAssignment, str]] = field(default_factory=list)

    def __str__(self) -> str:
        parts = [f"{len(self.done)} done"]
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped ({self.skipped[0][1]}{', ...' if len(self.skipped) > 1 else ''})")
        if self.failed:
            parts.append(f"{len(self.failed)} failed: " + "; ".join(message for _, message in self.failed[:3]))
        return ", ".join(parts)


REVIEWABLE = (WorkerAssignment.State.SUBMITTED,)


def submitted_records(publication: Publication) -> list[WorkerAssignment]:
    return list(publication.worker_assignments.filter(state=WorkerAssignment.State.SUBMITTED).select_related("assignment"))


def assignments_review(*, publication: Publication, records: Sequence[WorkerAssignment], decision: str,
                       feedback: str = "", rejection_category: str = "", mturk_client: MTurk | None = None,
                       prolific_client: prolific.Prolific | None = None) -> ReviewOutcome:
    """Approve or reject platform assignments, one at a time: the platform first, then Concord
    (``studies.rating.review``). One failing call leaves that assignment unchanged in Concord and is
    reported with the call's name; the others go on."""
    if decision not in ("approve", "reject"):
        raise ValidationError({"decision": "approve or reject"})
    feedback = (feedback or "").strip()
    if decision == "reject":
        if publication.platform == Platform.MTURK and not feedback:
            raise ValidationError({"feedback": "a rejection needs feedback: the worker sees why"})
        if publication.platform == Platform.PROLIFIC:
            problem = prolific.rejection_problem(rejection_category, feedback)
            if problem:
                raise ValidationError({"feedback": problem})
    outcome = ReviewOutcome()
    mturk_client = _mturk(publication, mturk_client) if publication.platform == Platform.MTURK else None
    prolific_client = _prolific(prolific_client) if publication.platform == Platform.PROLIFIC else None
    for record in records:
        if record.publication_id != publication.pk:
            outcome.skipped.append((record, "belongs to another publication"))
            continue
        if record.state not in REVIEWABLE:
            outcome.skipped.append((record, f"{record.external_id} is {record.state}"))
            continue
        try:
            if mturk_client is not None:
                if decision == "approve":
                    mturk_client.call("approve_assignment", AssignmentId=record.external_id,
                                      **({"RequesterFeedback": feedback[:1024]} if feedback else {}))
                else:
                    mturk_client.call("reject_assignment", AssignmentId=record.external_id,
                                      RequesterFeedback=feedback[:1024])
            elif decision == "approve":
                prolific_client.approve(record.external_id)
            else:
                prolific_client.reject(record.external_id, category=rejection_category, message=feedback)
        except PlatformError as error:
            outcome.failed.append((record, str(error)))
            continue
        with transaction.atomic():
            record.state = WorkerAssignment.State.APPROVED if decision == "approve" else WorkerAssignment.State.REJECTED
            record.platform_status = "Approved" if decision == "approve" else "Rejected"
            record.save(update_fields=["state", "platform_status", "synced_at"])
            if record.assignment is not None:
                try:
                    if decision == "approve":
                        review.assignment_approve(assignment=record.assignment)
                    else:
                        review.assignment_reject(assignment=record.assignment, reason=feedback)
                except review.ReviewError as error:
                    outcome.skipped.append((record, f"platform done; Concord: {error}"))
                    continue
        outcome.done.append(record)
    return outcome


def checked_records(publication: Publication, *, passed: bool) -> list[WorkerAssignment]:
    """Platform assignments waiting for review whose Concord assignment was submitted and scored on
    the study's attention checks / gold items (``studies.rating.checks``), and passed (pass rate at least
    the study's minimum) or failed. Assignments with no check shown are in neither list."""
    return list(publication.worker_assignments.filter(
        state=WorkerAssignment.State.SUBMITTED, assignment__status=Assignment.Status.SUBMITTED,
        assignment__checks_shown__gt=0, assignment__checks_failed=not passed).select_related("assignment"))


def assignments_review_checked(*, publication: Publication, passed: bool, feedback: str = "",
                               rejection_category: str = "", mturk_client: MTurk | None = None,
                               prolific_client: prolific.Prolific | None = None) -> ReviewOutcome:
    """"Approve all that passed the quality checks" (``passed=True``) or "reject all that failed"
    (``passed=False``; feedback required on every platform, the worker sees why). Refused, sending
    nothing, when the study has no check items (there is nothing to have passed)."""
    if not publication.study.items.filter(check_kind__gt="").exists():
        raise ValidationError({"checks": "this study has no attention checks or gold items: approve or reject by hand"})
    if not passed and not (feedback or "").strip():
        raise ValidationError({"feedback": "rejecting those who failed the checks needs feedback: the worker sees why"})
    return assignments_review(publication=publication, records=checked_records(publication, passed=passed),
                              decision="approve" if passed else "reject", feedback=feedback,
                              rejection_category=rejection_category, mturk_client=mturk_client,
                              prolific_client=prolific_client)


# --- bonuses ----------------------------------------------------------------------------------------

def bonus_create(*, publication: Publication, assignment: Assignment, amount, reason: str, user=None) -> Bonus:
    """Record a bonus to send (stored before anything is sent: its id is the idempotency token)."""
    errors = {}
    try:
        value = costs.money(amount)
        if value <= 0:
            errors["amount"] = "a bonus must be more than 0"
    except (InvalidOperation, ValueError, TypeError):
        errors["amount"] = f"{amount!r} is not an amount"
    if not (reason or "").strip():
        errors["reason"] = "the worker sees the reason; give one"
    if assignment.study_id != publication.study_id:
        errors["assignment"] = "this assignment is not part of the study"
    elif publication.platform == Platform.MTURK and not platform_assignment_id(assignment):
        errors["assignment"] = "this assignment has no MTurk assignment id"
    if publication.platform == Platform.PROLIFIC and not publication.external_id:
        errors["publication"] = "the study is not on Prolific yet"
    if errors:
        raise ValidationError(errors)
    return Bonus.objects.create(publication=publication, assignment=assignment, amount=value,
                                reason=reason.strip()[:500], created_by=user)


def _duplicate_token(error: PlatformError) -> bool:
    text = error.message.lower()
    return "uniquerequesttoken" in text.replace(" ", "") or "already been processed" in text


def bonuses_send(*, bonuses: Iterable[Bonus], mturk_client: MTurk | None = None,
                 prolific_client: prolific.Prolific | None = None) -> list[Bonus]:
    """Send pending or failed bonuses. MTurk: ``send_bonus`` with the row's UniqueRequestToken, so a
    retry after a lost answer pays once (MTurk refuses the repeated token, which counts as sent).
    Prolific: one bulk bonus for all rows, its id stored before paying; a bulk that was created but
    whose payment failed is not paid again automatically (Prolific's pay call is not idempotent)."""
    rows = [b for b in bonuses if b.status != Bonus.Status.SENT]
    mturk_rows = [b for b in rows if b.publication.platform == Platform.MTURK]
    prolific_rows = [b for b in rows if b.publication.platform == Platform.PROLIFIC]
    for bonus in mturk_rows:
        client = mturk_client or MTurk(sandbox=bonus.publication.sandbox)
        try:
            client.call("send_bonus", WorkerId=bonus.assignment.rater.external_id, BonusAmount=str(bonus.amount),
                        AssignmentId=platform_assignment_id(bonus.assignment), Reason=bonus.reason,
                        UniqueRequestToken=bonus.token)
        except PlatformError as error:
            if not _duplicate_token(error):
                Bonus.objects.filter(pk=bonus.pk).update(status=Bonus.Status.FAILED, error=str(error)[:2000])
                raise
        Bonus.objects.filter(pk=bonus.pk).update(status=Bonus.Status.SENT, sent_at=timezone.now(), error="")
    if prolific_rows:
        _prolific_bonuses_send(prolific_rows, _prolific(prolific_client))
    return list(Bonus.objects.filter(pk__in=[b.pk for b in rows]))


def _prolific_bonuses_send(rows: list[Bonus], client: prolific.Prolific) -> None:
    unpaid = [b for b in rows if b.platform_ref]
    if unpaid:
        raise PublishRefused(f"bonus {unpaid[0].pk} was set up on Prolific as {unpaid[0].platform_ref} but its payment "
                             "failed; check it on Prolific before paying again (paying is not idempotent)")
    by_study: dict[int, list[Bonus]] = {}
    for bonus in rows:
        by_study.setdefault(bonus.publication_id, []).append(bonus)
    for group in by_study.values():
        publication = group[0].publication
        try:
            bulk = client.bonus_create(publication.external_id,
                                       [(b.assignment.rater.external_id, str(b.amount)) for b in group])
        except PlatformError as error:
            Bonus.objects.filter(pk__in=[b.pk for b in group]).update(status=Bonus.Status.FAILED, error=str(error)[:2000])
            raise
        Bonus.objects.filter(pk__in=[b.pk for b in group]).update(platform_ref=bulk["id"])
        try:
            client.bonus_pay(bulk["id"])
        except PlatformError as error:
            Bonus.objects.filter(pk__in=[b.pk for b in group]).update(status=Bonus.Status.FAILED, error=str(error)[:2000])
            raise
        Bonus.objects.filter(pk__in=[b.pk for b in group]).update(status=Bonus.Status.SENT, sent_at=timezone.now(),
                                                                  error="")


# --- workers and HITs -------------------------------------------------------------------------------

def worker_block(*, worker_id: str, reason: str, sandbox: bool, client: MTurk | None = None) -> WorkerBlock:
    """Block a worker on MTurk (they can no longer take this requester's HITs) and in Concord."""
    worker_id, reason = (worker_id or "").strip(), (reason or "").strip()
    if not worker_id or not reason:
        raise ValidationError({"reason" if worker_id else "worker_id": "a block needs a worker id and a reason"})
    (client or MTurk(sandbox=sandbox)).call("create_worker_block", WorkerId=worker_id, Reason=reason[:500])
    with transaction.atomic():
        block, _ = WorkerBlock.objects.update_or_create(
            sandbox=sandbox, worker_id=worker_id, defaults={"reason": reason[:500], "active": True, "lifted_at": None})
        review.rater_blocked_set(platform=Platform.MTURK, external_id=worker_id, blocked=True)
    return block


def worker_unblock(*, worker_id: str, reason: str, sandbox: bool, client: MTurk | None = None) -> WorkerBlock | None:
    worker_id = (worker_id or "").strip()
    if not worker_id:
        raise ValidationError({"worker_id": "which worker?"})
    (client or MTurk(sandbox=sandbox)).call("delete_worker_block", WorkerId=worker_id,
                                            **({"Reason": reason.strip()[:500]} if (reason or "").strip() else {}))
    with transaction.atomic():
        WorkerBlock.objects.filter(sandbox=sandbox, worker_id=worker_id).update(active=False, lifted_at=timezone.now())
        review.rater_blocked_set(platform=Platform.MTURK, external_id=worker_id, blocked=False)
    return WorkerBlock.objects.filter(sandbox=sandbox, worker_id=worker_id).first()


def workers_notify(*, worker_ids: Sequence[str], subject: str, message: str, sandbox: bool,
                   client: MTurk | None = None) -> list[dict]:
    """E-mail workers through MTurk (100 per call, MTurk's limit); returns the per-worker failures."""
    ids = sorted({w.strip() for w in worker_ids if w and w.strip()})
    if not ids or not (subject or "").strip() or not (message or "").strip():
        raise ValidationError({"message": "a notification needs workers, a subject and a message"})
    client = client or MTurk(sandbox=sandbox)
    failures: list[dict] = []
    for start in range(0, len(ids), 100):
        answer = client.call("notify_workers", Subject=subject.strip()[:200], MessageText=message.strip()[:4096],
                             WorkerIds=ids[start:start + 100])
        failures.extend(answer.get("NotifyWorkersFailureStatuses", []))
    return failures


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
    client = _mturk(publication, client)
    count = 0
    for hit in publication.hits.exclude(hit_status="Gone"):
        client.call("update_expiration_for_hit", HITId=hit.hit_id, ExpireAt=datetime(2015, 1, 1, tzinfo=UTC))
        Hit.objects.filter(pk=hit.pk).update(expires_at=timezone.now(), hit_status="Unassignable")
        count += 1
    Publication.objects.filter(pk=publication.pk).update(status=Publication.Status.STOPPED)
    return count


# --- Prolific ---------------------------------------------------------------------------------------

def _prolific(client: prolific.Prolific | None) -> prolific.Prolific:
    return client if client is not None else prolific.Prolific(token=conf.prolific_token())


def other_conditions_participants(study: Study) -> list[str]:
    """Prolific ids of raters who took part in the experiment's other conditions."""
    return sorted(set(Assignment.objects.filter(experiment_id=study.experiment_id, rater__platform=Platform.PROLIFIC)
                      .exclude(study=study).values_list("rater__external_id", flat=True)))


def prolific_study_body(publication: Publication) -> dict[str, Any]:
    """The body of ``POST /studies/``: a draft study whose URL carries Prolific's three parameters."""
    s, study = effective_settings(publication), publication.study
    codes = [{"code": s["completion_code"], "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}]
    if s.get("screened_out_code"):
        codes.append({"code": s["screened_out_code"], "code_type": "FAILED_ATTENTION_CHECK",
                      "actions": [{"action": "MANUALLY_REVIEW"}]})
    filters = list(s["filters"])
    # With the experiment link the other conditions are in this same Prolific study: nobody to block.
    blocked = other_conditions_participants(study) if s["block_other_conditions"] and not s["experiment_link"] else []
    if blocked:
        filters.append({"filter_id": "custom_blocklist", "selected_values": blocked})
    body = {
        "name": s["title"], "internal_name": f"concord:{study.experiment.slug if s['experiment_link'] else study.slug}", "description": s["description"],
        "external_study_url": entry_url(study, prolific_parameters=True, experiment=bool(s["experiment_link"])),
        "prolific_id_option": "url_parameters",
        "completion_codes": codes, "total_available_places": int(s["places"]),
        "estimated_completion_time": int(s["estimated_minutes"]), "reward": int(s["reward_cents"]),
        "device_compatibility": list(s["devices"]), "filters": filters,
    }
    if s.get("max_minutes"):
        body["maximum_allowed_time"] = int(s["max_minutes"])
    return body


def prolific_publish(*, publication: Publication, confirm_production: bool = False, publish: bool = True,
                     client: prolific.Prolific | None = None) -> Publication:
    """Create the draft study on Prolific (once), then publish it when asked."""
    _refuse_unless_publishable(publication, confirm_production)
    client = _prolific(client)
    try:
        if not publication.external_id:
            body = prolific_study_body(publication)
            created = client.create_study(body)
            Publication.objects.filter(pk=publication.pk).update(  # the reward sent stays with the publication
                external_id=created["id"], status=Publication.Status.UNPUBLISHED,
                settings={**publication.settings, "reward_cents": body["reward"]})
            publication.refresh_from_db()
        if publish:
            client.transition_study(publication.external_id, "PUBLISH")
            Publication.objects.filter(pk=publication.pk).update(status=Publication.Status.PUBLISHED,
                                                                 published_at=timezone.now(), last_error="")
    except PlatformError as error:
        _record_error(publication, error)
        raise
    publication.refresh_from_db()
    return publication


PROLIFIC_TRANSITIONS = {"PAUSE": Publication.Status.PAUSED, "START": Publication.Status.PUBLISHED,
                        "STOP": Publication.Status.STOPPED, "PUBLISH": Publication.Status.PUBLISHED}


def prolific_transition(*, publication: Publication, action: str, client: prolific.Prolific | None = None) -> Publication:
    action = action.upper()
    if action not in PROLIFIC_TRANSITIONS:
        raise ValidationError({"action": f"one of {', '.join(PROLIFIC_TRANSITIONS)}"})
    if not publication.external_id:
        raise ValidationError({"action": "the study is not on Prolific yet"})
    _prolific(client).transition_study(publication.external_id, action)
    Publication.objects.filter(pk=publication.pk).update(status=PROLIFIC_TRANSITIONS[action])
    publication.refresh_from_db()
    return publication


PROLIFIC_STATES = {
    "RESERVED": WorkerAssignment.State.ACTIVE, "ACTIVE": WorkerAssignment.State.ACTIVE,
    "AWAITING REVIEW": WorkerAssignment.State.SUBMITTED, "APPROVED": WorkerAssignment.State.APPROVED,
    "REJECTED": WorkerAssignment.State.REJECTED, "RETURNED": WorkerAssignment.State.RETURNED,
    "TIMED-OUT": WorkerAssignment.State.TIMED_OUT, "SCREENED OUT": WorkerAssignment.State.SCREENED_OUT,
    "PARTIALLY APPROVED": WorkerAssignment.State.APPROVED,
}
FREES_PLACE = (WorkerAssignment.State.RETURNED, WorkerAssignment.State.TIMED_OUT)


def _when(value: str | None):
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def prolific_sync(*, publication: Publication, client: prolific.Prolific | None = None) -> SyncSummary:
    """Read every submission, record it, match it to Concord's assignment (participant id and
    session id), and abandon Concord assignments whose submission was returned or timed out, so
    their items go back to the pool."""
    if not publication.external_id:
        raise ValidationError({"publication": "the study is not on Prolific yet"})
    summary = SyncSummary()
    submissions = list(_prolific(client).submissions(publication.external_id))
    summary.seen = len(submissions)
    concord = _concord_assignments(publication)
    by_session = {platform_assignment_id(a): a for a in concord}
    by_participant = {a.rater.external_id: a for a in concord}
    with transaction.atomic():
        for row in submissions:
            match = by_session.get(row["id"]) or by_participant.get(row.get("participant_id", ""))
            if match is not None and match.rater.external_id != row.get("participant_id"):
                summary.problems.append(f"submission {row['id']}: participant differs from Concord's; not matched")
                match = None
            state = PROLIFIC_STATES.get(row.get("status", ""), WorkerAssignment.State.ACTIVE)
            WorkerAssignment.objects.update_or_create(
                publication=publication, external_id=row["id"],
                defaults={"worker_id": row.get("participant_id", ""), "assignment": match, "state": state,
                          "platform_status": row.get("status", ""), "time_taken": row.get("time_taken"),
                          "accepted_at": _when(row.get("started_at")), "submitted_at": _when(row.get("completed_at"))})
            summary.linked += match is not None
            _mirror_review(match, state, "", "Prolific")
            if match is not None and state in FREES_PLACE and match.status == Assignment.Status.STARTED:
                review.assignment_abandon(assignment=match, reason=f"the Prolific submission is {row.get('status')}")
                summary.abandoned += 1
    Publication.objects.filter(pk=publication.pk).update(synced_at=timezone.now())
    return summary


def publication_sync(*, publication: Publication, mturk_client: MTurk | None = None,
                     prolific_client: prolific.Prolific | None = None) -> SyncSummary:
    try:
        if publication.platform == Platform.MTURK:
            summary = mturk_sync(publication=publication, client=mturk_client)
        else:
            summary = prolific_sync(publication=publication, client=prolific_client)
    except PlatformError as error:
        _record_error(publication, error)
        raise
    Publication.objects.filter(pk=publication.pk).update(last_error="")
    return summary
