"""The one module that talks to Mechanical Turk (boto3). Every call goes through ``MTurk.call``,
which retries throttling with exponential backoff and turns any failure into ``PlatformError``
naming the call. Credentials come from AWS's standard chain (environment, ~/.aws, instance role);
nothing about them is stored in Concord.

Also here: the pieces of a HIT that are plain data (ExternalQuestion XML, qualification
requirements), so they can be checked without a client.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from xml.sax.saxutils import escape

from django.conf import settings

from crowd.errors import PlatformError

SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
WORKER_SITES = ("https://worker.mturk.com", "https://workersandbox.mturk.com")

# System qualification types (AWS's documented ids). Masters differs between sandbox and production.
MASTERS = {True: "2ARFPLSP75KLA8M8DH1HTEQVJT3SY6", False: "2F1QJWKUDD8XADTFD2Q0G6UTO95ALH"}
PERCENT_APPROVED = "000000000000000000L0"
NUMBER_APPROVED = "00000000000000000040"
LOCALE = "00000000000000000071"

RETRYABLE = {"ThrottlingException", "ServiceUnavailable", "Throttling", "TooManyRequestsException"}
MAX_ATTEMPTS = 6
BASE_DELAY = 0.5

EXTERNAL_QUESTION_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"

# Replaced in tests (patched to record the delays instead of waiting).
sleep: Callable[[float], None] = time.sleep


def _hint(code: str, message: str) -> str:
    text = message.lower()
    if "insufficient funds" in text:
        return "add prepaid funds to the MTurk requester account (or use the sandbox)"
    if "does not exist" in text and "hit" in text:
        return "the HIT is gone from MTurk (deleted or long expired); sync to refresh Concord's view"
    if code in ("UnrecognizedClientException", "InvalidClientTokenId", "AccessDenied", "AccessDeniedException") or \
            "security token" in text or "access key" in text or "signature" in text:
        return "check the AWS credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE)"
    return ""


class MTurk:
    """A thin client. ``client`` is a boto3 MTurk client; by default one is built for the sandbox or
    production endpoint (``us-east-1``, MTurk's only region)."""

    def __init__(self, *, sandbox: bool, client: Any | None = None):
        self.sandbox = sandbox
        self.client = client if client is not None else client_factory(sandbox)

    def call(self, operation: str, **params) -> dict:
        """Call a boto3 method by its snake_case name; retry throttling up to MAX_ATTEMPTS times with
        exponential backoff and jitter; any other error becomes PlatformError at once."""
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        name = "".join(part.capitalize() for part in operation.split("_")).replace("Hit", "HIT")
        for attempt in range(MAX_ATTEMPTS):
            try:
                return getattr(self.client, operation)(**params)
            except ClientError as error:
                info = error.response.get("Error", {})
                code, message = info.get("Code", ""), info.get("Message", str(error))
                if code in RETRYABLE and attempt + 1 < MAX_ATTEMPTS:
                    sleep(BASE_DELAY * 2**attempt * (1 + random.random() / 2))
                    continue
                raise PlatformError(name, message, code=code, hint=_hint(code, message)) from None
            except NoCredentialsError:
                raise PlatformError(name, "no AWS credentials were found", code="NoCredentials",
                                    hint=_hint("AccessDenied", "access key")) from None
            except BotoCoreError as error:
                raise PlatformError(name, str(error), code=type(error).__name__) from None
        raise AssertionError("unreachable")

    # --- the calls Concord makes ------------------------------------------------------------------

    def balance(self) -> str:
        return self.call("get_account_balance")["AvailableBalance"]

    def assignments_for_hit(self, hit_id: str) -> Iterator[dict]:
        """Every submitted/approved/rejected assignment of a HIT, following NextToken."""
        token = None
        while True:
            params = {"HITId": hit_id, "MaxResults": 100,
                      "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]}
            if token:
                params["NextToken"] = token
            page = self.call("list_assignments_for_hit", **params)
            yield from page.get("Assignments", [])
            token = page.get("NextToken")
            if not token or not page.get("Assignments"):
                return


def client_factory(sandbox: bool):
    """A boto3 MTurk client for the sandbox or production endpoint. Retries are left to MTurk.call,
    so there is one retry policy and tests see every attempt."""
    import boto3
    from botocore.config import Config

    client = boto3.client(
        "mturk", region_name="us-east-1", endpoint_url=SANDBOX_ENDPOINT if sandbox else PRODUCTION_ENDPOINT,
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=30),
    )
    if not settings.CROWD_PLATFORM_CALLS:  # a stubbed client answers before this point is reached
        client.meta.events.register("before-send.mturk", _platform_calls_switched_off)
    return client


def _platform_calls_switched_off(request, **_):
    target = request.headers.get("X-Amz-Target") or b"MTurk"
    target = target.decode() if isinstance(target, bytes) else target
    raise PlatformError(target.rpartition(".")[2],
                        "calls to the platforms are switched off here (CROWD_PLATFORM_CALLS is False)")


def external_question(url: str, frame_height: int = 0) -> str:
    """MTurk's ExternalQuestion: the worker site shows ``url`` in an iframe (FrameHeight 0 lets the
    page take the window's height)."""
    return (f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_NS}">'
            f"<ExternalURL>{escape(url)}</ExternalURL><FrameHeight>{int(frame_height)}</FrameHeight>"
            "</ExternalQuestion>")


def qualification_requirements(settings: Mapping[str, Any], *, sandbox: bool,
                               experiment_qualification: str | None = None,
                               practice_qualification: str | None = None) -> list[dict]:
    """QualificationRequirements from a publication's settings: Masters, approval rate, number of
    approved HITs, locale; plus "has not taken part in this experiment" and "passed the practice of
    that experiment" (studies.onboarding) when given."""
    requirements: list[dict] = []
    if settings.get("masters"):
        requirements.append({"QualificationTypeId": MASTERS[sandbox], "Comparator": "Exists",
                             "ActionsGuarded": "DiscoverPreviewAndAccept"})
    if settings.get("min_approval_rate") is not None:
        requirements.append({"QualificationTypeId": PERCENT_APPROVED, "Comparator": "GreaterThanOrEqualTo",
                             "IntegerValues": [int(settings["min_approval_rate"])],
                             "ActionsGuarded": "DiscoverPreviewAndAccept"})
    if settings.get("min_approved") is not None:
        requirements.append({"QualificationTypeId": NUMBER_APPROVED, "Comparator": "GreaterThanOrEqualTo",
                             "IntegerValues": [int(settings["min_approved"])],
                             "ActionsGuarded": "DiscoverPreviewAndAccept"})
    if settings.get("locales"):
        requirements.append({"QualificationTypeId": LOCALE, "Comparator": "In",
                             "LocaleValues": [_locale(code) for code in settings["locales"]],
                             "ActionsGuarded": "DiscoverPreviewAndAccept"})
    if experiment_qualification:
        requirements.append({"QualificationTypeId": experiment_qualification, "Comparator": "DoesNotExist",
                             "ActionsGuarded": "DiscoverPreviewAndAccept"})
    if practice_qualification:
        requirements.append({"QualificationTypeId": practice_qualification, "Comparator": "Exists",
                             "ActionsGuarded": "DiscoverPreviewAndAccept"})
    return requirements


def _locale(code: str) -> dict:
    """"US" -> {"Country": "US"}; "US-NY" -> {"Country": "US", "Subdivision": "NY"}."""
    country, _, subdivision = code.strip().upper().partition("-")
    return {"Country": country, **({"Subdivision": subdivision} if subdivision else {})}
