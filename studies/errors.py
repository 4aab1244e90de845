"""The exceptions that several parts of studies raise and catch: a study state that forbids an action, and a rater who may not start."""
from __future__ import annotations


class StudyStateError(Exception):
    """An action that the study's status does not allow (e.g. editing items of a published study)."""


class ConsentRequired(StudyStateError):
    """The rater has not agreed to the study's terms yet (the start page's "I agree"): nothing they
    answer is taken before consent (consent first, always)."""


class AssignmentRefused(Exception):
    """A rater may not start this study: another condition of the experiment, blocked, full, closed,
    a second acceptance of the same study, an invite that is invalid, expired or claimed elsewhere.
    ``reason`` says which, so that pages can word their answer for the platform."""

    OTHER_CONDITION, ALREADY_DONE, BLOCKED, CLOSED, FULL, BUSY = (
        "other_condition", "already_done", "blocked", "closed", "full", "busy")
    INVITE_INVALID, INVITE_EXPIRED, INVITE_CLAIMED = "invite_invalid", "invite_expired", "invite_claimed"

    def __init__(self, message: str, *, reason: str = "refused"):
        super().__init__(message)
        self.reason = reason


class PracticeRequired(AssignmentRefused):
    """The rater must pass ``study``'s practice (``studies.onboarding``) before they get a slot; nothing
    was written. The entry pages answer it with the practice, not a refusal."""

    PRACTICE = "practice"

    def __init__(self, study, identity=None):
        super().__init__("this study starts with practice items", reason=self.PRACTICE)
        self.study = study
        # Set where the link's own parameters are not the practice's identity (an invitation: the
        # invite's rater, ``studies.rating.invites.invite_enter``); None: the link's identity.
        self.identity = identity


def errors_text(error) -> list[str]:
    """A ValidationError as lines a page can show: ``field: message; message`` per field, or its messages."""
    if hasattr(error, "error_dict"):
        return [f"{field}: {'; '.join(msgs)}" for field, msgs in error.message_dict.items()]
    return error.messages
