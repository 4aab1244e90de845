"""Attention checks and gold items, the rater's side: where a study's check items go in each
assignment and how an assignment is scored. Writing check items is the researcher's
(``studies.authoring.checks``), their rules are checked by ``studies.rating.check_rules``; the report's reads
are ``studies.reports.check_selectors``.

A check item is an ordinary ``StudyItem`` (a conversation and the responses to judge, shown exactly
like the others, so the rater cannot tell) with ``check_kind`` set and ``check_rules`` saying what
a passing answer is:

- gold: an item whose answer is known (e.g. a human reply vs. an off-topic one);
- instructed: an item whose text tells the rater what to answer ("for this response choose 2").

Rules (a list; the check passes when every rule holds for every criterion it names; no criterion
means every criterion of the study). Responses are given 1-based, in the order they were entered,
and stored as response ids:

- ``{"response": 1, "value": 2}``           Likert / magnitude: exactly this value
- ``{"response": 1, "min": 4, "max": 6}``    Likert / magnitude: a value in this range (either bound optional)
- ``{"greater": 1, "than": 2}``              Likert / magnitude: response 1 scored above response 2
- ``{"best": 1}`` / ``{"worst": 2}``         BWS: ranked first / last
- ``{"criterion": "safety", "response": 1, "label": "unsafe"}``    a categorical criterion: this label
- ``{"criterion": "problems", "response": 1, "labels": ["repetition"]}``  a multi-label criterion: exactly
  this label set (``[]``: "none of these")
- ``{"criterion": "abc", "response": 1, "turns": {"1": ["redundant"], "3": []}, "min_match": 0.5}``  a per-turn
  criterion on a check dialogue: at least ``min_match`` (default 1) of the listed turns answered exactly so

A rule on a value, an order or a rank applies to the study's scale criteria; a label rule to the
criteria of its kind (``JudgementKind.check_rule_key``, ``studies.designs.kinds``); free text has no rule.

Each assignment gets ``checks_shown`` and ``checks_passed`` at submit; a pass rate below the study's
``min_pass_rate`` (default 0.75, so failing one of two or of three checks flags the rater) sets
``checks_failed``: the rater is flagged, suggested for rejection, and left out of the report's
"without flagged raters" tables. Pass-rate screening of crowd workers with instructed-response and
gold items follows Oppenheimer et al. (2009, instructional manipulation checks) and Callison-Burch
(2009, gold-standard items on MTurk). Check ratings are stored like all others but every analysis
reads ratings through ``report_selectors.normalised_ratings``, which leaves check items out.
"""
from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from studies.analysis.spans import spans_match
from studies.designs import design_for
from studies.designs.rater_reads import study_criteria
from studies.models import Assignment, Study

DEFAULT_PER_ASSIGNMENT = 2
DEFAULT_MIN_PASS_RATE = 0.75


def checks_config(study: Study) -> dict[str, Any]:
    """The study's check settings with defaults filled in."""
    config = study.checks_config or {}
    return {"per_assignment": int(config.get("per_assignment", DEFAULT_PER_ASSIGNMENT)),
            "positions": list(config.get("positions") or []),
            "min_pass_rate": float(config.get("min_pass_rate", DEFAULT_MIN_PASS_RATE))}


def checks_place(study: Study, regular: list[int], rng: random.Random) -> list[int]:
    """Insert check items among an assignment's regular item ids: ``per_assignment`` of the study's
    check items (drawn with ``rng``), at the configured 1-based positions (past the end: last) or
    at positions drawn with ``rng``. Without check items the list (and rng) is left untouched."""
    pool = list(study.items.filter(check_kind__gt="").order_by("position").values_list("id", flat=True))
    config = checks_config(study)
    k = min(len(config["positions"]) or config["per_assignment"], len(pool))
    if k <= 0:
        return regular
    chosen = rng.sample(pool, k)
    slots = ([p - 1 for p in config["positions"][:k]] if config["positions"]
             else sorted(rng.sample(range(len(regular) + k), k)))
    placed = list(regular)
    for slot, item_id in zip(slots, chosen, strict=True):  # ascending slots: each lands where asked
        placed.insert(min(slot, len(placed)), item_id)
    return placed


def turns_match(given: Any, expected: Mapping[str, Any]) -> float:
    """The share of a per-turn rule's expected turns whose given answer is exactly the expected one (a label,
    or a label set in any order); 0 without an answer."""
    if given is None or not expected:
        return 0.0
    answers = {str(index): answer for index, answer in given}
    same = sum(1 for index, want in expected.items()
               if (got := answers.get(str(index))) is not None
               and (got == want if isinstance(want, str) else tuple(sorted(got)) == tuple(sorted(want))))
    return same / len(expected)


def check_passed(rules: Sequence[Mapping[str, Any]], answers: Mapping[tuple[str, int], float],
                 criteria: Sequence[str], n_responses: int) -> bool:
    """Whether the answers to one check item (``(criterion, response id) -> value or rank``)
    satisfy every rule; a missing answer fails."""
    for rule in rules:
        for criterion in ([rule["criterion"]] if rule.get("criterion") else criteria):
            def given(response_id, criterion=criterion):
                return answers.get((criterion, response_id))
            if "greater" in rule:
                a, b = given(rule["greater"]), given(rule["than"])
                ok = a is not None and b is not None and a > b
            elif "best" in rule:
                ok = given(rule["best"]) == 1
            elif "worst" in rule:
                ok = given(rule["worst"]) == n_responses
            elif "label" in rule:
                ok = given(rule["response"]) == rule["label"]
            elif "turns" in rule:  # per-turn labels: enough of the expected turns match (PerTurnKind.check_value)
                ok = turns_match(given(rule["response"]), rule["turns"]) >= rule.get("min_match", 1.0) - 1e-12
            elif "labels" in rule:  # a label set: the given tuple is sorted (MultiLabelKind.check_value)
                v = given(rule["response"])
                ok = v is not None and tuple(v) == tuple(sorted(rule["labels"]))
            elif "spans" in rule:  # expected spans within the rule's tolerance (analysis.spans.spans_match)
                v, e = given(rule["response"]), rule["spans"]
                ok = v is not None and spans_match(v, [(s["start"], s["end"], s["label"]) for s in e["spans"]],
                                                   slack=e["slack"], min_overlap=e["min_overlap"])
            else:
                v = given(rule["response"])
                ok = v is not None and (math.isclose(v, rule["value"]) if "value" in rule else
                                        rule.get("min", -math.inf) <= v <= rule.get("max", math.inf))
            if not ok:
                return False
    return True


def assignment_checks_score(*, assignment: Assignment) -> Assignment:
    """Score an assignment's check items (the caller, ``assignment_submit``, holds its transaction
    and row lock): checks_shown, checks_passed, and checks_failed when the pass rate is below the
    study's min_pass_rate. An assignment without check items keeps null counts and is not flagged."""
    study = assignment.study
    slots = list(assignment.assignment_items.filter(item__check_kind__gt="")
                 .values_list("item_id", "item__check_rules", "response_order"))
    if not slots:
        return assignment
    criteria = [criterion.name for criterion in study_criteria(study)]
    # Item -> (criterion, response) -> value (a rank for ranking designs; A/B choices as 1, 0 or ½ each).
    answers = design_for(study).check_answers(assignment=assignment, item_ids=[s[0] for s in slots])
    passed = sum(check_passed(rules, answers.get(item_id, {}), criteria, len(order))
                 for item_id, rules, order in slots)
    assignment.checks_shown, assignment.checks_passed = len(slots), passed
    assignment.checks_failed = passed / len(slots) < checks_config(study)["min_pass_rate"]
    assignment.save(update_fields=["checks_shown", "checks_passed", "checks_failed"])
    return assignment
