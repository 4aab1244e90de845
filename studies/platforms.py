"""Who a rater is, read from the link that brought them (the platforms' own parameter names).

- Mechanical Turk: ``workerId``, ``assignmentId``, ``hitId``, ``turkSubmitTo``; while a worker only
  previews a HIT, ``assignmentId`` is ``ASSIGNMENT_ID_NOT_AVAILABLE`` and nothing may be stored.
- Prolific: ``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID``.
- Invite links: ``invite``, a token signed with the site's secret naming the study and the invitee
  (``invite_token``); a forged or edited token is refused.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlparse

from django.core import signing

MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
INVITE_SALT = "concord.invite"
PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete"


class IdentityError(ValueError):
    """The link does not identify a rater for this study."""


@dataclass(frozen=True)
class Identity:
    platform: str
    external_id: str
    platform_data: dict = field(default_factory=dict)
    preview: bool = False


def invite_token(study_slug: str, invitee: str) -> str:
    return signing.dumps({"study": study_slug, "invitee": invitee}, salt=INVITE_SALT, compress=True)


def identity_from(params: Mapping[str, str], study_slug: str) -> Identity:
    """The rater identity in a link's query parameters, or IdentityError saying what is missing."""
    if params.get("workerId") or params.get("assignmentId") == MTURK_PREVIEW:
        if params.get("assignmentId") == MTURK_PREVIEW:
            return Identity("mturk", "", {"hitId": params.get("hitId", "")}, preview=True)
        missing = [k for k in ("workerId", "assignmentId", "hitId") if not params.get(k)]
        if missing:
            raise IdentityError(f"the Mechanical Turk link lacks {', '.join(missing)}")
        submit_to = params.get("turkSubmitTo", "")
        if submit_to and urlparse(submit_to).scheme not in ("https", "http"):
            raise IdentityError("turkSubmitTo is not a web address")
        data = {k: params.get(k, "") for k in ("assignmentId", "hitId", "turkSubmitTo")}
        return Identity("mturk", params["workerId"].strip(), data)
    if params.get("PROLIFIC_PID"):
        data = {k: params.get(k, "") for k in ("STUDY_ID", "SESSION_ID")}
        return Identity("prolific", params["PROLIFIC_PID"].strip(), data)
    if params.get("invite"):
        try:
            payload = signing.loads(params["invite"], salt=INVITE_SALT)
        except signing.BadSignature:
            raise IdentityError("this invitation link is not valid (it may have been cut or changed)") from None
        if payload.get("study") != study_slug:
            raise IdentityError("this invitation is for another study")
        return Identity("invite", str(payload["invitee"]), {})
    raise IdentityError("this link does not say who you are; please use the link you were given")


def mturk_submit_url(platform_data: Mapping[str, str]) -> str | None:
    base = platform_data.get("turkSubmitTo")
    return f"{base.rstrip('/')}/mturk/externalSubmit" if base else None


def prolific_completion_url(platform_config: Mapping, code: str) -> str:
    base = platform_config.get("completion_url") or PROLIFIC_COMPLETE
    return f"{base}{'&' if '?' in base else '?'}{urlencode({'cc': code})}"
