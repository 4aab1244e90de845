"""Who a rater is, read from the link that brought them (the platforms' own parameter names).

- Mechanical Turk: ``workerId``, ``assignmentId``, ``hitId``, ``turkSubmitTo``; while a worker only
  previews a HIT, ``assignmentId`` is ``ASSIGNMENT_ID_NOT_AVAILABLE`` and nothing may be stored.
- Prolific: ``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID``.
- Invite links: ``invite``, the random token of an ``Invite`` row (single use, with an expiry).

A study accepts only its own platform's kind of identity. A worker id is a claim: the assignment is
bound to the platform's per-acceptance id (MTurk ``assignmentId``, Prolific ``SESSION_ID``), which
re-entry must present again. Every parameter is checked (present, not blank, at most 120
characters, no control characters or lone surrogates) before anything is written. Platform ids are
then normalised (``platform_id``: Unicode NFKC, stripped, MTurk upper case, Prolific lower case, so a
full-width digit or a respelt case is the same worker) and their format checked on the normalised
value: Prolific ids are 24 hexadecimal digits (MongoDB object ids), MTurk ids ASCII letters and digits,
at most 64 (the audit's 'ß' passed ``upper()`` as 'SS' and was stored raw).
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit, urlunsplit

from django.utils.translation import gettext

from studies.text_checks import text_problem

MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete"
MAX_PARAMETER_LENGTH = 120
# The only places the done page may post a HIT back to (production and sandbox).
MTURK_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
PARAMETERS = {
    "mturk": ("workerId", "assignmentId", "hitId", "turkSubmitTo"),
    "prolific": ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    "invite": ("invite",),
}
PLATFORM_NAMES = {"mturk": "Mechanical Turk", "prolific": "Prolific", "invite": "invitation links"}


def platform_name(platform: str) -> str:
    """A platform's name in the rater page's language (the platforms' own names are not translated)."""
    return gettext("invitation links") if platform == "invite" else PLATFORM_NAMES.get(platform, platform)


_MTURK_ID = re.compile(r"[A-Z0-9]{1,64}", re.ASCII)
_PROLIFIC_ID = re.compile(r"[0-9a-f]{24}", re.ASCII)


class IdentityError(ValueError):
    """The link does not identify a rater for this study; ``parameter`` names the culprit, if one."""

    def __init__(self, message: str, parameter: str | None = None):
        super().__init__(message)
        self.parameter = parameter


@dataclass(frozen=True)
class Identity:
    platform: str
    external_id: str
    acceptance_id: str = ""
    platform_data: dict = field(default_factory=dict)
    preview: bool = False


def parameter_problem(value: str) -> str | None:
    """Why a platform parameter's value is unacceptable, or None."""
    if not value.strip():
        return gettext("is blank")
    if len(value) > MAX_PARAMETER_LENGTH:
        return gettext("is longer than %(n)s characters") % {"n": MAX_PARAMETER_LENGTH}
    return text_problem(value) or (None if value.isprintable() else gettext("contains control characters"))


def _parameter(params: Mapping[str, str], name: str, *, required: bool = True) -> str:
    raw = params.get(name)
    if raw is None:
        if required:
            raise IdentityError(gettext("the link lacks %(name)s") % {"name": name}, name)
        return ""
    problem = parameter_problem(raw)
    if problem:
        raise IdentityError(f"{name} {problem}", name)
    return raw.strip()


def platform_id(platform: str, value: str) -> str:
    """A platform id as stored and compared: Unicode NFKC (a full-width digit is the digit), stripped,
    then upper case for MTurk and lower case for Prolific (the case each platform issues its ids in;
    case carries no meaning in either). Other platforms' ids are only NFKC'd and stripped."""
    value = unicodedata.normalize("NFKC", value or "").strip()
    if platform == "mturk":
        return value.upper()
    if platform == "prolific":
        return value.lower()
    return value


def _mturk_id(params: Mapping[str, str], name: str) -> str:
    raw = _parameter(params, name)
    value = platform_id("mturk", raw)
    # Checked before the case mapping too: 'ß'.upper() is 'SS', which must not pass for an id.
    if not unicodedata.normalize("NFKC", raw).isascii() or not _MTURK_ID.fullmatch(value):
        raise IdentityError(name + " " + gettext("must be 1 to 64 ASCII letters and digits"), name)
    return value


def _prolific_id(params: Mapping[str, str], name: str, *, required: bool = True) -> str:
    value = platform_id("prolific", _parameter(params, name, required=required))
    if (value or required) and not _PROLIFIC_ID.fullmatch(value):
        raise IdentityError(name + " " + gettext("must be 24 hexadecimal digits (a Prolific id)"), name)
    return value


def mturk_submit_host(value: str) -> str | None:
    """``turkSubmitTo`` as one of MTURK_SUBMIT_HOSTS, or None when it is anything else."""
    value = value.strip().rstrip("/")
    return value if value in MTURK_SUBMIT_HOSTS else None


def identity_from(params: Mapping[str, str], platform: str) -> Identity:
    """The rater identity in a link's query parameters for a study on ``platform``, or
    IdentityError saying which parameter is missing or wrong."""
    own = PARAMETERS.get(platform, ())
    if not any(name in params for name in own):
        foreign = [name for kind, names in PARAMETERS.items() if kind != platform for name in names if name in params]
        if foreign:
            raise IdentityError(gettext("this study takes part through %(platform)s, and this link is not one of its "
                                        "links (%(name)s is not accepted here)")
                                % {"platform": platform_name(platform), "name": foreign[0]}, foreign[0])
        raise IdentityError(gettext("this link does not say who you are; please use the link you were given"))
    if platform == "mturk":
        if params.get("assignmentId") == MTURK_PREVIEW:
            return Identity("mturk", "", preview=True)
        worker = _mturk_id(params, "workerId")
        acceptance = _mturk_id(params, "assignmentId")
        hit = _mturk_id(params, "hitId")
        submit_to = mturk_submit_host(_parameter(params, "turkSubmitTo"))
        if submit_to is None:
            raise IdentityError("turkSubmitTo " + gettext("must be one of %(hosts)s") % {"hosts": ", ".join(MTURK_SUBMIT_HOSTS)},
                                "turkSubmitTo")
        data = {"assignmentId": acceptance, "hitId": hit, "turkSubmitTo": submit_to}
        return Identity("mturk", worker, acceptance, data)
    if platform == "prolific":
        participant = _prolific_id(params, "PROLIFIC_PID")
        session = _prolific_id(params, "SESSION_ID")
        data = {"STUDY_ID": _prolific_id(params, "STUDY_ID", required=False), "SESSION_ID": session}
        return Identity("prolific", participant, session, data)
    return Identity("invite", "", _parameter(params, "invite"))


def mturk_submit_url(platform_data: Mapping[str, str]) -> str | None:
    """Where the done page posts the HIT back: only ever an allow-listed MTurk host."""
    host = mturk_submit_host(str(platform_data.get("turkSubmitTo") or ""))
    return f"{host}/mturk/externalSubmit" if host else None


def _cc_in(url: str) -> str:
    return (parse_qs(urlsplit(url).query).get("cc") or [""])[0].strip()


def prolific_completion_code(platform_config: Mapping) -> str:
    """The study's fixed Prolific completion code: ``completion_code``, else the ``cc`` of a
    configured ``completion_url`` (a researcher who pasted Prolific's whole link), else ""."""
    code = str(platform_config.get("completion_code") or "").strip()
    return code or _cc_in(str(platform_config.get("completion_url") or ""))


def screened_out_code(platform_config: Mapping | None) -> str:
    """The code for a rater screened out (failed attention checks), if the researcher set one, else ""."""
    return str((platform_config or {}).get("screened_out_code") or "").strip()[:40]


def prolific_completion_url(platform_config: Mapping, code: str) -> str:
    """Where the done page sends a Prolific participant: the configured ``completion_url`` (default
    Prolific's ``/submissions/complete``) with exactly one ``cc``, the code this rater was given. A
    configured address that already carries a ``cc`` keeps it when it is that code, and never gets a
    second one (a screened-out rater's code replaces it)."""
    base = str(platform_config.get("completion_url") or "").strip() or PROLIFIC_COMPLETE
    if not code or _cc_in(base) == code:
        return base
    parts = urlsplit(base)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "cc"] + [("cc", code)]
    return urlunsplit(parts._replace(query=urlencode(query)))
