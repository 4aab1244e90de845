"""The one module that talks to Prolific's REST API (https://api.prolific.com/api/v1/,
``Authorization: Token <PROLIFIC_TOKEN>``). HTTP goes through a small transport object so tests can
replace it with recorded responses; every failure becomes ``PlatformError`` naming the call.

Field names follow Prolific's API reference (docs.prolific.com/api-reference): studies
(``external_study_url``, ``completion_codes``, ``total_available_places``, ``estimated_completion_time``,
``reward`` in cents, ``device_compatibility``, ``filters``), study ``transition`` actions
(PUBLISH, PAUSE, START, STOP), submissions (``participant_id``, ``status``, ``time_taken``), submission
``transition`` (APPROVE, or REJECT with ``rejection_category`` and a ``message`` of at least 100
characters), and bonuses (``submissions/bonus-payments/`` with
``csv_bonuses``, then ``bulk-bonus-payments/<id>/pay/``, which is not idempotent).
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

from django.conf import settings

from crowd.errors import PlatformError

BASE_URL = "https://api.prolific.com/api/v1/"
URL_PARAMETERS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
REJECTION_CATEGORIES = ("TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK",
                        "LOW_EFFORT", "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER")
MIN_REJECTION_MESSAGE = 100
STUDY_ACTIONS = ("PUBLISH", "PAUSE", "START", "STOP")
DEVICES = ("desktop", "tablet", "mobile")
RETRY_STATUSES = {429, 502, 503, 504}


class UrllibTransport:
    """HTTP with the standard library: ``request(method, url, headers, body)`` -> (status, parsed JSON)."""

    timeout = 30

    def request(self, method: str, url: str, headers: Mapping[str, str], body: Any | None) -> tuple[int, Any]:
        if not settings.CROWD_PLATFORM_CALLS:
            return 0, {"error": "calls to the platforms are switched off here (CROWD_PLATFORM_CALLS is False)"}
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method, headers=dict(headers))
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (fixed https base)
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            return 0, {"error": str(getattr(error, "reason", error))}
        try:
            return status, json.loads(raw) if raw else {}
        except ValueError:
            return status, {"error": raw[:300].decode(errors="replace")}


def _detail(payload: Any) -> str:
    if isinstance(payload, Mapping):
        error = payload.get("error", payload)
        if isinstance(error, Mapping):
            detail = error.get("detail") or error.get("title") or error
            return detail if isinstance(detail, str) else json.dumps(detail)[:500]
        return str(error)[:500]
    return str(payload)[:500]


class Prolific:
    def __init__(self, *, token: str, transport: Any | None = None, base_url: str = BASE_URL, retries: int = 3):
        self.token, self.base_url, self.retries = token, base_url, retries
        self.transport = transport if transport is not None else transport_factory()

    def call(self, method: str, path: str, body: Any | None = None) -> Any:
        name = f"{method} /{path}"
        if not self.token:
            raise PlatformError(name, "no Prolific API token", code="NoToken",
                                hint="set PROLIFIC_TOKEN in the environment (Prolific: Settings > API tokens)")
        headers = {"Authorization": f"Token {self.token}", "Content-Type": "application/json",
                   "Accept": "application/json"}
        for attempt in range(self.retries):
            status, payload = self.transport.request(method, self.base_url + path, headers, body)
            if status in RETRY_STATUSES and attempt + 1 < self.retries:
                sleep(0.5 * 2**attempt)
                continue
            break
        if 200 <= status < 300:
            return payload
        hint = "check PROLIFIC_TOKEN" if status in (401, 403) else ""
        if status == 0:
            raise PlatformError(name, _detail(payload), code="network", hint="Prolific could not be reached")
        raise PlatformError(name, _detail(payload), code=str(status), hint=hint)

    # --- studies ----------------------------------------------------------------------------------

    def create_study(self, body: Mapping[str, Any]) -> dict:
        return self.call("POST", "studies/", dict(body))

    def transition_study(self, study_id: str, action: str) -> dict:
        if action not in STUDY_ACTIONS:
            raise ValueError(f"unknown study action {action!r}; one of {', '.join(STUDY_ACTIONS)}")
        return self.call("POST", f"studies/{study_id}/transition/", {"action": action})

    def submissions(self, study_id: str) -> Iterator[dict]:
        """Every submission of a study, following the ``_links.next`` pages."""
        path: str | None = f"studies/{study_id}/submissions/"
        while path:
            page = self.call("GET", path)
            yield from page.get("results", [])
            following = ((page.get("_links") or {}).get("next") or {}).get("href")
            path = following.removeprefix(self.base_url) if following else None

    # --- submissions ------------------------------------------------------------------------------

    def approve(self, submission_id: str) -> dict:
        return self.call("POST", f"submissions/{submission_id}/transition/", {"action": "APPROVE"})

    def reject(self, submission_id: str, *, category: str, message: str) -> dict:
        return self.call("POST", f"submissions/{submission_id}/transition/",
                         {"action": "REJECT", "rejection_category": category, "message": message})

    def bonus_create(self, study_id: str, rows: list[tuple[str, str]]) -> dict:
        """Set up a bulk bonus (participant id, amount in the study's currency as "1.50"); pays nothing."""
        csv = "\n".join(f"{participant},{amount}" for participant, amount in rows)
        return self.call("POST", "submissions/bonus-payments/", {"study_id": study_id, "csv_bonuses": csv})

    def bonus_pay(self, bulk_id: str) -> dict:
        return self.call("POST", f"bulk-bonus-payments/{bulk_id}/pay/")


def transport_factory():
    return UrllibTransport()


def sleep(seconds: float) -> None:
    time.sleep(seconds)


def rejection_problem(category: str, message: str) -> str | None:
    """Why Prolific would refuse this rejection, or None."""
    if category not in REJECTION_CATEGORIES:
        return f"rejection_category must be one of {', '.join(REJECTION_CATEGORIES)}"
    if len((message or "").strip()) < MIN_REJECTION_MESSAGE:
        return f"Prolific needs a rejection message of at least {MIN_REJECTION_MESSAGE} characters"
    return None
