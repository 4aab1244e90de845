"""Pay and time planning: the reward per assignment, how long an assignment takes, the effective
hourly rate, and what the study costs for its target number of raters.

- minutes per assignment: the median ``Assignment.total_seconds`` of submitted (or approved)
  assignments once a pilot exists (``PILOT_MIN`` of them), else the researcher's estimate;
- hourly rate = reward / (minutes / 60);
- places = ceil(items x raters per item / min(items per assignment, items)) (``allocation.places_needed``);
- rewards total = reward x places (platform fees come on top: the Crowd page estimates them).

Amounts are Decimal in the platform's currency (USD on Mechanical Turk); minutes are floats.
"""
from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from statistics import median
from typing import Any

from studies.authoring import selectors
from studies.models import Assignment, Study
from studies.rating import allocation

PILOT_MIN = 1  # one submitted assignment is a pilot: its time says more than a guess
CENT = Decimal("0.01")


def pilot_minutes(study: Study) -> tuple[float | None, int]:
    """(median minutes of the submitted assignments, how many), or (None, 0) before any."""
    seconds = list(Assignment.objects.filter(study=study, status__in=selectors.DONE_STATUSES,
                                             total_seconds__isnull=False).values_list("total_seconds", flat=True))
    if len(seconds) < PILOT_MIN:
        return None, len(seconds)
    return median(seconds) / 60.0, len(seconds)


def hourly_rate(reward: Decimal | None, minutes: float | None) -> Decimal | None:
    """reward / (minutes / 60), to the cent; None when either is unknown or the time is zero."""
    if reward is None or not minutes or minutes <= 0:
        return None
    return (Decimal(reward) * Decimal(60) / Decimal(str(minutes))).quantize(CENT, rounding=ROUND_HALF_UP)


# The currency of a reward when the study sets none: MTurk pays in US dollars (always); Prolific
# rewards are set in pounds unless the researcher's account says otherwise (``currency`` rater
# setting); an invitation-link study pays however the researcher pays, US dollars unless set.
DEFAULT_CURRENCY = {Study.Platform.MTURK: "USD", Study.Platform.PROLIFIC: "GBP"}
SYMBOLS = {"USD": "$", "GBP": "£", "EUR": "€"}


def currency(study: Study) -> str:
    """The ISO 4217 code the study's rewards are in (see DEFAULT_CURRENCY)."""
    if study.platform == Study.Platform.MTURK:
        return "USD"
    return str((study.platform_config or {}).get("currency") or DEFAULT_CURRENCY.get(study.platform, "USD"))


def money(amount: Any, code: str) -> str:
    """``$1.50``, ``£1.50``, ``€1.50``, else ``1.50 CHF``."""
    symbol = SYMBOLS.get(code)
    return f"{symbol}{amount}" if symbol else f"{amount} {code}".strip()


def pay_plan(study: Study) -> dict[str, Any]:
    """What the researcher (and, in part, the rater) sees about pay and time. ``minutes`` is the
    pilot's median when there is a pilot, else the estimate; ``source`` says which."""
    median_minutes, n_pilot = pilot_minutes(study)
    minutes = median_minutes if median_minutes is not None else (
        float(study.estimated_minutes) if study.estimated_minutes else None)
    items = study.items.filter(check_kind="").count()
    places = allocation.places_needed(items, study.raters_per_item, study.items_per_assignment) if items else 0
    reward = study.reward
    return {
        "reward": reward,
        "estimated_minutes": study.estimated_minutes,
        "pilot_minutes": median_minutes,
        "pilot_assignments": n_pilot,
        "minutes": minutes,
        "source": "pilot" if median_minutes is not None else ("estimate" if minutes else None),
        "hourly_rate": hourly_rate(reward, minutes),
        "places": places,
        "total_rewards": (reward * places).quantize(CENT) if reward is not None else None,
        "currency": currency(study),
    }


def rater_pay(study: Study) -> dict[str, Any] | None:
    """What the rater's start page says: reward, expected minutes and the hourly rate; None when
    the study sets no reward (invite-only studies often pay nothing through Concord)."""
    if study.reward is None:
        return None
    plan = pay_plan(study)
    minutes = plan["minutes"]
    return {"reward": plan["reward"], "minutes": round(minutes) if minutes else None,
            "hourly_rate": plan["hourly_rate"], "currency": plan["currency"]}
