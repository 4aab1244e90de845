"""Invite links: created by the researcher, claimed by one browser."""
from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from studies.errors import AssignmentRefused, PracticeRequired
from studies.models import (
    Assignment,
    Invite,
    Study,
)
from studies.rating import platforms, review
from studies.rating.entry import _enter, _retrying

INVITE_DAYS_DEFAULT = 14


INVITE_DAYS_MAX = 365
INVITES_AT_ONCE_MAX = 200  # links made at once (the study page's "how many", the API's ``count``)


def _browser_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def invite_create(*, study: Study, label: str = "", expires_in_days: int | float = INVITE_DAYS_DEFAULT,
                  created_by=None) -> Invite:
    """A single-use invitation link to the study, valid for ``expires_in_days`` (default 14)."""
    label = (label or "").strip()
    errors: dict[str, str] = {}
    if len(label) > 120:
        errors["label"] = "must be at most 120 characters"
    elif problem := platforms.text_problem(label):
        errors["label"] = problem
    if isinstance(expires_in_days, bool) or not isinstance(expires_in_days, (int, float)) \
            or not 0 < expires_in_days <= INVITE_DAYS_MAX:
        errors["expires_in_days"] = f"must be a number of days above 0 and at most {INVITE_DAYS_MAX}"
    if study.platform != Study.Platform.INVITE:
        errors["study"] = f"study {study.slug} takes raters from {study.get_platform_display()}, not by invitation"
    elif not study.items.filter(check_kind="").exists():
        errors["study"] = f"study {study.slug} has no items yet: build its items first (a link to it would lead nowhere)"
    if errors:
        raise ValidationError(errors)
    return Invite.objects.create(study=study, label=label, created_by=created_by,
                                 expires_at=timezone.now() + timedelta(days=expires_in_days))


@transaction.atomic
def invites_create(*, study: Study, count: int = 1, label: str = "",
                   expires_in_days: int | float = INVITE_DAYS_DEFAULT, created_by=None) -> list[Invite]:
    """``count`` single-use links at once (1 to ``INVITES_AT_ONCE_MAX``), all or none, the same label and
    expiry each."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= INVITES_AT_ONCE_MAX:
        raise ValidationError({"count": f"must be a whole number from 1 to {INVITES_AT_ONCE_MAX}"})
    return [invite_create(study=study, label=label, expires_in_days=expires_in_days, created_by=created_by)
            for _ in range(count)]


def invite_identity(invite: Invite) -> platforms.Identity:
    """The rater identity an invite stands for, as the practice and the slot use it: no acceptance id
    (the invite's browser binding does that job), so the assignment after a pass is the one the
    invitation link resumes."""
    return platforms.Identity(Study.Platform.INVITE, invite.rater_id_text, "", {"invite": invite.pk})


def invite_enter(*, study: Study, token: str, browser_secret: str, seed: int | None = None) -> Assignment:
    """An invitee opening their link: the first browser claims the invite (its secret is stored
    hashed) and gets an assignment; that browser may resume later, any other is refused. An
    unclaimed invite past its expiry is refused. Nothing is written when anything is refused.

    A study with practice items (``studies.onboarding``) gates invitees as it gates platform
    workers: until the invite's rater has passed, PracticeRequired is raised carrying that identity
    (``invite_identity``), and the invite is claimed by this browser all the same, so the practice
    cannot be taken over by another browser and a failed invitee, who holds no slot, finds the same
    failed attempt on every reload."""
    if not browser_secret:
        raise ValueError("a browser secret is required")
    digest = _browser_hash(browser_secret)

    def enter() -> Assignment | PracticeRequired:
        invite = Invite.objects.select_for_update().filter(token=token).first()
        if invite is None:
            raise AssignmentRefused(gettext("this invitation link is not valid (it may have been cut or changed)"),
                                    reason=AssignmentRefused.INVITE_INVALID)
        if invite.study_id != study.pk:
            raise AssignmentRefused(gettext("this invitation is for another study"), reason=AssignmentRefused.INVITE_INVALID)
        if invite.revoked_at is not None:
            raise AssignmentRefused(gettext("this invitation has been withdrawn"), reason=AssignmentRefused.INVITE_EXPIRED)
        if invite.claimed_at is not None:
            if not hmac.compare_digest(invite.browser_hash, digest):
                raise AssignmentRefused(gettext("this invitation has already been opened in another browser"),
                                        reason=AssignmentRefused.INVITE_CLAIMED)
        elif invite.expires_at <= timezone.now():
            raise AssignmentRefused(gettext("this invitation has expired"), reason=AssignmentRefused.INVITE_EXPIRED)
        identity = invite_identity(invite)
        result: Assignment | PracticeRequired
        try:
            result = _enter(study, platform=identity.platform, external_id=identity.external_id, acceptance_id="",
                            platform_data=identity.platform_data, seed=seed)
        except PracticeRequired as required:
            # Returned, not raised, so that the claim below commits (a raise would roll it back).
            required.identity = identity
            result = required
        if invite.claimed_at is None:
            Invite.objects.filter(pk=invite.pk).update(claimed_at=timezone.now(), browser_hash=digest)
        return result
    outcome = _retrying(enter)
    if isinstance(outcome, PracticeRequired):
        raise outcome
    return outcome


def invite_status(invite: Invite, *, now=None) -> str:
    """open (not opened yet), claimed (a browser holds it), expired, or revoked."""
    now = now or timezone.now()
    if invite.revoked_at is not None:
        return "revoked"
    if invite.claimed_at is not None:
        return "claimed"
    return "expired" if invite.expires_at <= now else "open"


INVITE_STATUSES = ("open", "claimed", "expired", "revoked")


def invites_with_status(invites, status: str, *, now=None):
    """``invites`` narrowed to those ``invite_status`` calls ``status``, in the database."""
    now = now or timezone.now()
    live = invites.filter(revoked_at__isnull=True)
    return {"revoked": invites.filter(revoked_at__isnull=False),
            "claimed": live.filter(claimed_at__isnull=False),
            "expired": live.filter(claimed_at__isnull=True, expires_at__lte=now),
            "open": live.filter(claimed_at__isnull=True, expires_at__gt=now)}[status]


def invite_assignment(invite: Invite) -> Assignment | None:
    """The assignment the invite's rater holds in its study (the latest), if any."""
    return (Assignment.objects.filter(study_id=invite.study_id, rater__platform=Study.Platform.INVITE,
                                      rater__external_id=invite.rater_id_text).order_by("-started_at").first())


@transaction.atomic
def invite_revoke(*, invite: Invite) -> Invite:
    """The link stops working now, in its browser too; a place its rater holds (a started assignment) is
    freed, its items back in the pool. Submitted work is kept. Revoking twice changes nothing more."""
    invite = Invite.objects.select_for_update().get(pk=invite.pk)
    if invite.revoked_at is None:
        invite.revoked_at = timezone.now()
        invite.save(update_fields=["revoked_at"])
    assignment = invite_assignment(invite)
    if assignment is not None and assignment.status == Assignment.Status.STARTED:
        review.assignment_abandon(assignment=assignment, reason="invitation revoked by the researcher")
    return invite
