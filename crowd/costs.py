"""What a publication will cost, before anything is sent. Pure functions on Decimal money.

Mechanical Turk (requester pricing): a 20 % commission on rewards and bonuses, with a minimum of
$0.01 per assignment or bonus; HITs with 10 or more assignments pay 20 % more (40 % in all);
the Masters qualification adds 5 % of the reward. Prolific's service fee varies by account and
currency, so its estimate uses the configured ``fee_rate`` (33 % by default, the published rate for
most researchers) and says so.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
MTURK_FEE = Decimal("0.20")
MTURK_LARGE_BATCH_FEE = Decimal("0.20")
MTURK_LARGE_BATCH = 10
MTURK_MASTERS_FEE = Decimal("0.05")
MTURK_MINIMUM_FEE = CENT
PROLIFIC_DEFAULT_FEE = Decimal("0.333")


def money(value) -> Decimal:
    return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class Estimate:
    places: int
    reward: Decimal
    fee_per_place: Decimal
    rewards: Decimal
    fees: Decimal
    bonuses: Decimal
    bonus_fees: Decimal
    total: Decimal
    notes: tuple[str, ...]

    def as_dict(self) -> dict:
        return {k: (str(v) if isinstance(v, Decimal) else list(v) if isinstance(v, tuple) else v)
                for k, v in asdict(self).items()}


def mturk_fee_rate(assignments_per_hit: int, *, masters: bool = False) -> Decimal:
    rate = MTURK_FEE + (MTURK_LARGE_BATCH_FEE if assignments_per_hit >= MTURK_LARGE_BATCH else 0)
    return rate + (MTURK_MASTERS_FEE if masters else 0)


def mturk_estimate(*, reward, hits: int, assignments_per_hit: int, bonuses=0, masters: bool = False,
                   places: int | None = None) -> Estimate:
    """reward x assignments + fee per assignment max(0.01, rate x reward) + bonuses + 20 % of bonuses
    (at least $0.01 each is not modelled for planned totals). ``places``: the assignments in all, when
    the last HIT holds fewer than ``assignments_per_hit`` (default: every HIT full); the rate is the
    full HITs' rate."""
    reward = money(reward)
    places = hits * assignments_per_hit if places is None else min(places, hits * assignments_per_hit)
    rate = mturk_fee_rate(assignments_per_hit, masters=masters)
    fee = max(MTURK_MINIMUM_FEE, money(reward * rate))
    bonuses = money(bonuses)
    bonus_fees = money(bonuses * MTURK_FEE) if bonuses else Decimal("0.00")
    notes = [f"MTurk fee {rate * 100:.0f} % of the reward per assignment (at least $0.01)"]
    if assignments_per_hit >= MTURK_LARGE_BATCH:
        notes.append(f"HITs with {MTURK_LARGE_BATCH} or more assignments pay 20 % more: "
                     f"use {MTURK_LARGE_BATCH - 1} or fewer assignments per HIT to save it")
    if masters:
        notes.append("the Masters qualification adds 5 %")
    return Estimate(places=places, reward=reward, fee_per_place=fee, rewards=reward * places, fees=fee * places,
                    bonuses=bonuses, bonus_fees=bonus_fees,
                    total=reward * places + fee * places + bonuses + bonus_fees, notes=tuple(notes))


def prolific_estimate(*, reward_cents: int, places: int, bonuses=0, fee_rate=PROLIFIC_DEFAULT_FEE) -> Estimate:
    reward = money(Decimal(reward_cents) / 100)
    rate = Decimal(str(fee_rate))
    fee = money(reward * rate)
    bonuses = money(bonuses)
    bonus_fees = money(bonuses * rate)
    return Estimate(places=places, reward=reward, fee_per_place=fee, rewards=reward * places, fees=fee * places,
                    bonuses=bonuses, bonus_fees=bonus_fees, total=reward * places + fee * places + bonuses + bonus_fees,
                    notes=(f"Prolific service fee taken as {rate * 100:.1f} % (it depends on your account)",))
