"""How many screens a rater of a study gets, counted as the rater will see them: the study's items (up to
``items_per_assignment``, fewer where the study has fewer) and, on top, the check items placed among them
(``studies.rating.checks.checks_place``: ``per_assignment`` of them, or one per configured position, at most
as many as the study has). The start page, the practice's start page and the study page say this number,
so that a rater told "8 conversations" does not then meet 10 screens."""
from __future__ import annotations

from typing import TypedDict

from studies.models import Study
from studies.rating.checks import checks_config


class Screens(TypedDict):
    items: int
    checks: int
    screens: int


def screens_per_assignment(study: Study) -> Screens:
    """{items, checks, screens}: what one assignment of the study holds (screens = items + checks)."""
    regular = study.items.filter(check_kind="").count()
    pool = study.items.filter(check_kind__gt="").count()
    config = checks_config(study)
    items = min(study.items_per_assignment, regular) if study.items_per_assignment else regular
    checks = min(len(config["positions"]) or config["per_assignment"], pool) if items else 0
    return {"items": items, "checks": max(checks, 0), "screens": items + max(checks, 0)}
