"""Check rules authored with form controls (no JSON anywhere in the UI; the API keeps taking
the rules as JSON). The hand-written practice item (the study page's Practice card) and the hand-written
check item (an instructed check, the checks page) show a few rule rows; each row is a question (or every
question), a response by the letter raters see, what it expects and the expected value, labels or other
response, all chosen by controls. ``rules_from_rows`` turns the posted rows into exactly the rules the API
takes (``studies.rating.checks``: responses numbered from 1), which the services then check as any other;
a blank row (nothing chosen under "expects") is left out.

An exact value with a tolerance becomes a range (``min``/``max``), as the builder's preview authoring
writes one (``studies.authoring.builder``). ``rules_text`` (rules in the raters' words) lives in
``studies.rating.check_rules``, below onboarding, which shows the practice's expected answer with it;
it is re-exported here."""
from __future__ import annotations

import math
import string
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import ValidationError

from studies.designs import design_for, kind_for
from studies.models import Study
from studies.rating.check_rules import MAX_RESPONSES
from studies.rating.check_rules import rules_text as rules_text  # re-exported: the pages show rules with it

ROWS = 4
PREFIX = "rule"
FIELDS = ("criterion", "response", "expects", "value", "tolerance", "to", "than", "label")
VALUE_EXPECTS = {"value": "is exactly", "min": "is at least", "max": "is at most", "between": "is between"}
EXPECTS = {**VALUE_EXPECTS, "greater": "is rated above", "best": "is ranked best", "worst": "is ranked worst",
           "label": "gets the label", "labels": "gets exactly the labels"}


def rule_choices(study: Study) -> dict[str, Any]:
    """What the rule rows offer for this study: its questions, the responses by letter (the two
    conversations of a check pair, A and B, where the design compares whole conversations), what a rule can
    expect (values for designs whose answers are values, an order, best/worst for rankings, a label or a
    label set for questions answered by labels), and each label question's labels."""
    design = design_for(study)
    criteria = list(study.criteria.order_by("position"))
    kinds = {c.name: kind_for(c) for c in criteria}
    takes_values = design.value_range(study.design_config) is not None or any(
        c.scale_min is not None and c.scale_max is not None for c in criteria)
    numeric = any(k.numeric for k in kinds.values())
    offered = []
    if numeric and "response" in design.check_rule_kinds and takes_values:
        offered += list(VALUE_EXPECTS)
    offered += [key for key in ("greater", "best", "worst") if numeric and key in design.check_rule_kinds]
    for key in ("label", "labels"):
        if any(k.check_rule_key == key for k in kinds.values()):
            offered.append(key)
    n = min(int((study.design_config or {}).get("tuple_size") or MAX_RESPONSES), MAX_RESPONSES) \
        if design.ranks else MAX_RESPONSES
    compared = getattr(design, "check_conversations", 0)  # a check pair of whole conversations (ACUTE-Eval)
    if compared:
        n = compared
    return {
        "noun": "Conversation" if compared else "Response",
        "criteria": [{"name": c.name, "question": c.question} for c in criteria],
        "letters": [(i + 1, string.ascii_uppercase[i]) for i in range(n)],
        "expects": [(key, EXPECTS[key]) for key in offered],
        "label_sets": [{"name": c.name, "question": c.question, "labels": list((c.options or {}).get("labels") or []),
                        "many": kinds[c.name].check_rule_key == "labels"}
                       for c in criteria if kinds[c.name].check_rule_key]}


def rows_posted(post: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rule rows as typed (to show a refused form again): ``ROWS`` dicts of their fields."""
    rows = []
    for i in range(ROWS):
        row: dict[str, Any] = {field: str(post.get(f"{PREFIX}-{i}-{field}", "")).strip() for field in FIELDS}
        getlist = getattr(post, "getlist", None)
        row["labels"] = [v for v in (getlist(f"{PREFIX}-{i}-labels") if getlist else post.get(f"{PREFIX}-{i}-labels")
                                     or []) if v]
        row["index"] = i
        rows.append(row)
    return rows


def rows_empty() -> list[dict[str, Any]]:
    return rows_posted({})


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _letter(text: str) -> int | None:
    return int(text) if text.isdigit() and 1 <= int(text) <= MAX_RESPONSES else None


def rules_from_rows(post: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[int], dict[str, str]]:
    """The rules the posted rows make (the API's form), the row number (1-based) of each rule, and the
    rows' own problems keyed ``rules`` (what is missing or not a number, naming the row and the field)."""
    rules: list[dict[str, Any]] = []
    numbers: list[int] = []
    problems: list[str] = []
    for row in rows_posted(post):
        expects, n = row["expects"], row["index"] + 1
        if not expects:
            continue
        if expects not in EXPECTS:
            problems.append(f"rule {n}: choose what the response is expected to get")
            continue
        response = _letter(row["response"])
        if response is None:
            problems.append(f"rule {n}: choose a response")
            continue
        rule: dict[str, Any] = {"criterion": row["criterion"]} if row["criterion"] else {}
        if expects in VALUE_EXPECTS:
            value = _number(row["value"])
            if value is None:
                problems.append(f"rule {n}: the value must be a number, not “{row['value'][:20]}”")
                continue
            rule["response"] = response
            if expects == "value":
                tolerance = _number(row["tolerance"] or "0")
                if tolerance is None or tolerance < 0:
                    problems.append(f"rule {n}: the tolerance must be a number of 0 or more")
                    continue
                rule.update({"min": value - tolerance, "max": value + tolerance} if tolerance else {"value": value})
            elif expects == "between":
                high = _number(row["to"])
                if high is None:
                    problems.append(f"rule {n}: the upper end must be a number, not “{row['to'][:20]}”")
                    continue
                rule.update(min=value, max=high)
            else:
                rule[expects] = value
        elif expects == "greater":
            than = _letter(row["than"])
            if than is None:
                problems.append(f"rule {n}: choose the response it is rated above")
                continue
            rule.update(greater=response, than=than)
        elif expects in ("best", "worst"):
            rule[expects] = response
        elif expects == "label":
            if not row["label"]:
                problems.append(f"rule {n}: choose the label")
                continue
            rule.update(response=response, label=row["label"])
        else:  # a label set; none ticked: "none of these"
            rule.update(response=response, labels=row["labels"])
        rules.append(rule)
        numbers.append(n)
    if not rules and not problems:
        problems.append("add at least one rule: choose a response and what it is expected to get")
    return rules, numbers, {"rules": "; ".join(problems)} if problems else {}


def rule_problems_by_row(problems: Mapping[str, list[str]], numbers: list[int]) -> dict[str, list[str]]:
    """A service's problems keyed ``rules[k].field`` (k: the k-th rule sent) named by the form's rows
    ("rule 2 (value): ..."); other keys unchanged."""
    out: dict[str, list[str]] = {}
    for key, texts in problems.items():
        if key.startswith("rules[") and "]" in key:
            index = key[len("rules["):key.index("]")]
            part = key[key.index("]") + 1:].lstrip(".")
            row = numbers[int(index)] if index.isdigit() and int(index) < len(numbers) else None
            named = f"rule {row}" if row else "a rule"
            out.setdefault("rules", []).extend(f"{named}{f' ({part})' if part else ''}: {t}" for t in texts)
        else:
            out.setdefault(key, []).extend(texts)
    return out


@contextmanager
def rules_posted(post: Mapping[str, Any]) -> Iterator[list[dict[str, Any]]]:
    """The rules a page's rule rows make (``rules_from_rows``; its problems raised as ValidationError), for
    the service called inside, whose ValidationError is raised again keyed by row (``rule_problems_by_row``):
    the checks page and the Practice card write their items this way."""
    rules, numbers, problems = rules_from_rows(post)
    if problems:
        raise ValidationError(problems)
    try:
        yield rules
    except ValidationError as error:
        raise ValidationError(rule_problems_by_row(error.message_dict, numbers)) from None
