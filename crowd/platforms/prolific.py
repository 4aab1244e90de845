"""Prolific behind the crowd protocol: a draft study whose URL carries Prolific's three parameters
and the study's own completion codes, publish/pause/start/stop, sync of submissions (returned and
timed-out places free their items), review with Prolific's rejection rules, and bulk bonuses.

Every call goes through ``crowd.clients.prolific.Prolific``; a client can be handed in, else one is
built with ``PROLIFIC_TOKEN``. Prolific has no sandbox: publishing always needs a confirmation.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from crowd import conf, costs
from crowd.clients import prolific
from crowd.errors import PlatformError, PublishRefused
from crowd.models import Bonus, Platform, Publication, WorkerAssignment
from crowd.platforms.base import CrowdPlatform, SyncSummary, mirror_review, record_error, simulated_id
from crowd.scope import concord_assignments, entry_url, platform_assignment_id, worker_key
from studies.models import Assignment, RaterBlock, Study
from studies.rating import platforms as rater_platforms
from studies.rating import review

PROLIFIC_TRANSITIONS = {"PAUSE": Publication.Status.PAUSED, "START": Publication.Status.PUBLISHED,
                        "STOP": Publication.Status.STOPPED, "PUBLISH": Publication.Status.PUBLISHED}
PROLIFIC_STATES = {
    "RESERVED": WorkerAssignment.State.ACTIVE, "ACTIVE": WorkerAssignment.State.ACTIVE,
    "AWAITING REVIEW": WorkerAssignment.State.SUBMITTED, "APPROVED": WorkerAssignment.State.APPROVED,
    "REJECTED": WorkerAssignment.State.REJECTED, "RETURNED": WorkerAssignment.State.RETURNED,
    "TIMED-OUT": WorkerAssignment.State.TIMED_OUT, "SCREENED OUT": WorkerAssignment.State.SCREENED_OUT,
    "PARTIALLY APPROVED": WorkerAssignment.State.APPROVED,
}
FREES_PLACE = (WorkerAssignment.State.RETURNED, WorkerAssignment.State.TIMED_OUT)


def _prolific(client: prolific.Prolific | None) -> prolific.Prolific:
    return client if client is not None else prolific.Prolific(token=conf.prolific_token())


# --- publishing -------------------------------------------------------------------------------------

def other_conditions_participants(study: Study) -> list[str]:
    """Prolific ids of raters who took part in the experiment's other conditions."""
    return sorted(set(Assignment.objects.filter(experiment_id=study.experiment_id, rater__platform=Platform.PROLIFIC)
                      .exclude(study=study).values_list("rater__external_id", flat=True)))


def owner_blocked_participants(study: Study) -> list[str]:
    """Prolific ids the study's owner has blocked (``crowd.workers``): Prolific keeps them out too."""
    return sorted(RaterBlock.objects.filter(owner_id=study.experiment.owner_id, lifted_at__isnull=True,
                                            rater__platform=Platform.PROLIFIC).values_list("rater__external_id", flat=True))


def prolific_study_body(publication: Publication) -> dict[str, Any]:
    """The body of ``POST /studies/``: a draft study whose URL carries Prolific's three parameters."""
    s, study = PLATFORM.effective_settings(publication), publication.study
    codes = [{"code": s["completion_code"], "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}]
    if s.get("screened_out_code"):
        codes.append({"code": s["screened_out_code"], "code_type": "FAILED_ATTENTION_CHECK",
                      "actions": [{"action": "MANUALLY_REVIEW"}]})
    filters = list(s["filters"])
    # With the experiment link the other conditions are in this same Prolific study: nobody to block.
    others = other_conditions_participants(study) if s["block_other_conditions"] and not s["experiment_link"] else []
    blocked = sorted(set(others) | set(owner_blocked_participants(study)))
    if blocked:
        filters.append({"filter_id": "custom_blocklist", "selected_values": blocked})
    body = {
        "name": s["title"], "internal_name": f"concord:{study.experiment.slug if s['experiment_link'] else study.slug}",
        "description": s["description"],
        "external_study_url": entry_url(study, experiment=bool(s["experiment_link"]), query=prolific.URL_PARAMETERS),
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
    PLATFORM.refuse_unless_publishable(publication, confirm_production)
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
        record_error(publication, error)
        raise
    publication.refresh_from_db()
    return publication


def prolific_transition(*, publication: Publication, action: str, client: prolific.Prolific | None = None) -> Publication:
    """Publish, pause, start (resume) or stop the study on Prolific."""
    if publication.platform != Platform.PROLIFIC:
        raise ValidationError({"action": f"{publication.get_platform_display()} publications have no transitions"})
    action = action.upper()
    if action not in PROLIFIC_TRANSITIONS:
        raise ValidationError({"action": f"one of {', '.join(PROLIFIC_TRANSITIONS)}"})
    if not publication.external_id:
        raise ValidationError({"action": "the study is not on Prolific yet"})
    _prolific(client).transition_study(publication.external_id, action)
    Publication.objects.filter(pk=publication.pk).update(status=PROLIFIC_TRANSITIONS[action])
    publication.refresh_from_db()
    return publication


# --- sync -------------------------------------------------------------------------------------------

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
    concord = concord_assignments(publication)
    # ids compare by worker_key: a participant once entered with their id in another case is still them
    by_session = {worker_key(platform_assignment_id(a)): a for a in concord}
    by_participant = {worker_key(a.rater.external_id): a for a in concord}
    with transaction.atomic():
        for row in submissions:
            participant = worker_key(row.get("participant_id", ""))
            match = by_session.get(worker_key(row["id"])) or by_participant.get(participant)
            if match is not None and worker_key(match.rater.external_id) != participant:
                summary.problems.append(f"submission {row['id']}: participant differs from Concord's; not matched")
                match = None
            state = PROLIFIC_STATES.get(row.get("status", ""), WorkerAssignment.State.ACTIVE)
            WorkerAssignment.objects.update_or_create(
                publication=publication, external_id=row["id"],
                defaults={"worker_id": row.get("participant_id", ""), "assignment": match, "state": state,
                          "platform_status": row.get("status", ""), "time_taken": row.get("time_taken"),
                          "accepted_at": _when(row.get("started_at")), "submitted_at": _when(row.get("completed_at"))})
            summary.linked += match is not None
            mirror_review(match, state, "", "Prolific")
            if match is not None and state in FREES_PLACE and match.status == Assignment.Status.STARTED:
                review.assignment_abandon(assignment=match, reason=f"the Prolific submission is {row.get('status')}")
                summary.abandoned += 1
    Publication.objects.filter(pk=publication.pk).update(synced_at=timezone.now())
    return summary


# --- bonuses ----------------------------------------------------------------------------------------

def prolific_bonuses_send(rows: list[Bonus], client: prolific.Prolific | None = None) -> None:
    """One bulk bonus per Prolific study, its id stored before paying; a bulk that was created but
    whose payment failed is not paid again automatically (Prolific's pay call is not idempotent)."""
    client = _prolific(client)
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


# --- the protocol -----------------------------------------------------------------------------------

class ProlificPlatform(CrowdPlatform):
    key = Platform.PROLIFIC
    label = "Prolific"
    external_label = "Prolific study"
    can_draft = True
    transitions = PROLIFIC_TRANSITIONS
    rejection_categories = prolific.REJECTION_CATEGORIES
    reward_setting = "reward_cents"
    reward_unit = Decimal(100)
    setting_kinds = {
        "reward_cents": "count", "places": "count", "estimated_minutes": "count", "max_minutes": "count",
        "planned_bonus_total": "money", "fee_rate": "rate", "block_other_conditions": "switch",
        "experiment_link": "switch", "devices": "list", "filters": "json", "title": "text", "description": "text",
        "completion_code": "text", "screened_out_code": "text",
    }
    setting_fields = (
        ("reward_cents", "Reward (cents)"), ("places", "Places"), ("estimated_minutes", "Estimated minutes"),
        ("max_minutes", "Maximum minutes"), ("devices", "Devices (desktop, tablet, mobile)"), ("title", "Title"),
        ("description", "Description"), ("completion_code", "Completion code"),
        ("screened_out_code", "Screened-out code (optional)"), ("planned_bonus_total", "Planned bonuses"),
        ("block_other_conditions", "Block the experiment's other conditions' participants"))

    def default_settings(self, publication: Publication, *, places: int, reward: Decimal,
                         minutes: float | None) -> dict[str, Any]:
        config = publication.study.platform_config or {}
        return {
            "reward_cents": int(reward * 100), "places": places,
            "estimated_minutes": math.ceil(minutes) if minutes else 20, "max_minutes": None,
            "devices": ["desktop"], "filters": [],
            # The study's own fixed codes: the done page gives raters exactly these (studies.rating.platforms).
            "completion_code": rater_platforms.prolific_completion_code(config),
            "screened_out_code": str(config.get("screened_out_code") or ""),
            "fee_rate": str(costs.PROLIFIC_DEFAULT_FEE), "block_other_conditions": True,
        }

    def check_setting(self, key: str, value: Any) -> Any:
        if key == "devices" and set(value) - set(prolific.DEVICES):
            raise ValueError(f"devices are {', '.join(prolific.DEVICES)}")
        if key == "filters" and (not isinstance(value, list)
                                 or not all(isinstance(f, dict) and "filter_id" in f for f in value)):
            raise ValueError("must be a list of Prolific filters ({filter_id, selected_values | selected_range})")
        return value

    def estimate(self, settings: Mapping[str, Any]) -> costs.Estimate:
        s = settings
        return costs.prolific_estimate(reward_cents=int(s["reward_cents"]), places=int(s["places"]),
                                       bonuses=s["planned_bonus_total"], fee_rate=s["fee_rate"])

    def platform_problems(self, publication: Publication, s: Mapping[str, Any], *,
                          confirm_production: bool) -> list[str]:
        problems = []
        if int(s["reward_cents"]) <= 0:
            problems.append("no reward is set")
        if not s["completion_code"]:
            problems.append("no completion code is set (the study's fixed code)")
        if int(s["places"]) <= 0:
            problems.append("no places")
        if not confirm_production:
            problems.append("Prolific has no sandbox (real money): confirm it explicitly")
        return problems

    def experiment_link_problems(self, conditions: Sequence[Study], s: Mapping[str, Any]) -> list[str]:
        """One Prolific study has one set of completion codes: every condition needs the same."""
        differing = sorted(c.slug for c in conditions
                           if rater_platforms.prolific_completion_code(c.platform_config or {}) != s["completion_code"])
        if not differing:
            return []
        return ["with one Prolific study for the experiment every condition needs the completion code "
                f"{s['completion_code'] or '(none)'} in its settings; these differ: {', '.join(differing)}"]

    def publish(self, *, publication: Publication, confirm_production: bool = False, draft_only: bool = False,
                client: prolific.Prolific | None = None) -> Publication:
        return prolific_publish(publication=publication, confirm_production=confirm_production,
                                publish=not draft_only, client=client)

    def published_summary(self, publication: Publication) -> str:
        return f"Prolific study {publication.external_id}: {publication.status}"

    def sync(self, *, publication: Publication, client: prolific.Prolific | None = None) -> SyncSummary:
        return prolific_sync(publication=publication, client=client)

    def client(self, publication: Publication, client: prolific.Prolific | None = None) -> prolific.Prolific:
        return _prolific(client)

    def rejection_problem(self, feedback: str, category: str) -> str:
        return prolific.rejection_problem(category, feedback) or ""

    def review(self, client: prolific.Prolific, record: WorkerAssignment, *, decision: str, feedback: str,
               category: str) -> None:
        if decision == "approve":
            client.approve(record.external_id)
        else:
            client.reject(record.external_id, category=category, message=feedback)

    def bonus_problems(self, publication: Publication, assignment: Assignment) -> dict[str, str]:
        return {} if publication.external_id else {"publication": "the study is not on Prolific yet"}

    def bonuses_send(self, rows: list[Bonus], client: prolific.Prolific | None = None) -> None:
        prolific_bonuses_send(rows, client)

    def simulated_entry(self, run: str, index: int) -> tuple[str, dict[str, str]]:
        """Participant, study and session ids are 24 lower-case hexadecimal digits on Prolific."""
        participant = simulated_id(run, index, "participant", length=24)
        return participant, {"PROLIFIC_PID": participant, "STUDY_ID": simulated_id(run, "study", length=24),
                             "SESSION_ID": simulated_id(run, index, "session", length=24)}


PLATFORM = ProlificPlatform()
