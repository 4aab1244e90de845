"""Attention checks and gold items, the researcher's side: check items written on the study page, in
the API or imported from a CSV, their rules checked against the study's design and criteria, and the
check settings. What the rules mean and how an assignment is scored: ``studies.rating.checks``."""
from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Max

from studies.authoring import check_conversations
from studies.designs import design_for, kind_for, unit_for
from studies.errors import StudyStateError
from studies.models import (
    CheckKind,
    Conversation,
    Corpus,
    Response,
    Study,
    StudyItem,
    StudyItemResponse,
    System,
)
from studies.rating.checks import checks_config

MAX_PER_ASSIGNMENT = 20
CHECK_SYSTEM = "attention-check"
MAX_RESPONSES = 10
MAX_TEXT = 5000
# item positions of check items start here so that rebuilding the regular items never collides
CHECK_POSITION_BASE = 1_000_000
VALUE_KEYS = {"value", "min", "max"}
LABEL_KEYS = ("label", "labels")  # the expected answer of a categorical or multi-label criterion


class _Problems(dict):
    def add(self, key: str, message: str) -> None:
        self.setdefault(key, message)


def _require_draft(study: Study, action: str) -> None:
    if study.status != Study.Status.DRAFT:
        raise StudyStateError(f"cannot {action}: the study is {study.status} (checks are set while it is a draft)")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def rules_clean(study: Study, rules: Any, n_responses: int, *, prefix: str = "rules") -> tuple[list[dict], dict]:
    """Check rules against the study's design and criteria; responses stay 1-based here. Returns
    (cleaned rules, problems keyed ``rules[i].field``)."""
    problems = _Problems()
    if not isinstance(rules, list) or not rules:
        problems.add(prefix, "give at least one rule (a JSON list), e.g. [{\"response\": 1, \"value\": 2}]")
        return [], problems
    criteria = {c.name: c for c in study.criteria.all()}
    cleaned = []
    for i, rule in enumerate(rules):
        out = _rule_clean(study, rule, f"{prefix}[{i}]", criteria, n_responses, problems)
        if out is not None:
            cleaned.append(out)
    return cleaned, problems


def _rule_clean(study: Study, rule: Any, key: str, criteria: Mapping[str, Any], n_responses: int,
                problems: _Problems) -> dict[str, Any] | None:
    """One rule: its shape, the responses it names and its criteria, then what it expects (a label or a label
    set, an order, a value or a range, a rank). None, with the problem added, when it is refused."""
    if not isinstance(rule, Mapping):
        problems.add(key, "each rule is a JSON object")
        return None
    out: dict[str, Any] = {}
    name = rule.get("criterion")
    if name not in (None, ""):
        if name not in criteria:
            problems.add(f"{key}.criterion", f"unknown criterion {name!r} (the study has {', '.join(criteria)})")
            return None
        out["criterion"] = name
    kind = _rule_kind(study, rule, key, n_responses, problems)
    if kind is None:
        return None
    targets = [criteria[name]] if name else list(criteria.values())
    label_key = next((k for k in LABEL_KEYS if k in rule), None)
    expects = label_key or "value"  # what the rule's criteria must answer: a label, a label set, a number
    wrong = [c.name for c in targets if (kind_for(c).check_rule_key or ("value" if kind_for(c).numeric
                                                                         else None)) != expects]
    if wrong:
        problems.add(f"{key}.criterion", f"criterion {wrong[0]} is {kind_for(criteria[wrong[0]]).label.lower()}: "
                     + (f"a {label_key} rule names a criterion that takes {'one label' if label_key == 'label' else 'a label set'}"
                        if label_key else "name a criterion with a scale for this rule"))
        return None
    if label_key:
        return _label_rule_clean(rule, kind, label_key, targets, key, out, problems)
    if kind == "greater":
        if rule["greater"] == rule["than"]:
            problems.add(f"{key}.than", "compare two different responses")
            return None
        return {**out, "greater": rule["greater"], "than": rule["than"]}
    if kind == "response":
        return _value_rule_clean(study, rule, targets, key, out, problems)
    return {**out, kind: rule[kind]}


def _rule_kind(study: Study, rule: Mapping[str, Any], key: str, n_responses: int, problems: _Problems) -> str | None:
    """Which rule it is (response, greater, best or worst), its response numbers in range, and a kind the
    study's design checks (``check_rule_kinds``; a label rule suits every rating design)."""
    kinds = [k for k in ("response", "greater", "best", "worst") if k in rule]
    unknown = set(rule) - {"criterion", "response", "value", "min", "max", "greater", "than", "best", "worst",
                           *LABEL_KEYS}
    if unknown:
        problems.add(key, f"unknown key(s) {', '.join(sorted(unknown))}")
        return None
    if len(kinds) != 1:
        problems.add(key, "a rule has exactly one of response (with value or min/max), greater (with than), "
                          "best, worst")
        return None
    kind = kinds[0]
    refs = [kind] + (["than"] if kind == "greater" else [])
    bad = [r for r in refs if not isinstance(rule.get(r), int) or isinstance(rule.get(r), bool)
           or not 1 <= rule[r] <= n_responses]
    if bad:
        noun = "conversation" if design_for(study).check_conversations else "response"
        problems.add(f"{key}.{bad[0]}", f"must be a {noun} number from 1 to {n_responses}")
        return None
    allowed = design_for(study).check_rule_kinds  # e.g. response/greater for values, best/worst for ranks
    if kind not in allowed and not any(k in rule for k in LABEL_KEYS):
        problems.add(f"{key}.{kind}", "best/worst rules are for best-worst scaling studies"
                     if kind in ("best", "worst") else f"this study checks ranks: use {' or '.join(allowed)}")
        return None
    return kind


def _label_rule_clean(rule: Mapping[str, Any], kind: str, label_key: str, targets: list, key: str,
                      out: dict[str, Any], problems: _Problems) -> dict[str, Any] | None:
    """A label (or label set) rule: one response and the answer each named criterion's kind accepts."""
    if kind != "response" or set(rule) & VALUE_KEYS:
        problems.add(key, f"a {label_key} rule has response and {label_key} (and criterion)")
        return None
    expected = None
    for criterion in targets:
        expected, problem = kind_for(criterion).expected_clean(criterion, rule[label_key])
        if problem:
            problems.add(f"{key}.{label_key}", problem)
            return None
    return {**out, "response": rule["response"], label_key: expected}


def _value_rule_clean(study: Study, rule: Mapping[str, Any], targets: list, key: str, out: dict[str, Any],
                      problems: _Problems) -> dict[str, Any] | None:
    """A value rule: exactly a value the design allows on each criterion's scale, or a min/max range."""
    given = {k: rule[k] for k in VALUE_KEYS if k in rule}
    if not given or ("value" in given and len(given) > 1):
        problems.add(key, "give value, or min and/or max")
        return None
    numbers = {k: _number(v) for k, v in given.items()}
    wrong = [k for k, v in numbers.items() if v is None]
    if wrong:
        problems.add(f"{key}.{wrong[0]}", "must be a finite number")
        return None
    if "value" in numbers:
        for criterion in targets:
            problem = design_for(study).value_problem(study.design_config, numbers["value"],
                                                      scale_min=criterion.scale_min, scale_max=criterion.scale_max)
            if problem:
                problems.add(f"{key}.value", problem)
    elif "min" in numbers and "max" in numbers and numbers["min"] > numbers["max"]:
        problems.add(f"{key}.max", "must be at least min")
    return {**out, "response": rule["response"], **numbers}


def _resolve(rules: list[dict], response_ids: Sequence[int]) -> list[dict]:
    """1-based response numbers -> response ids."""
    return [{k: (response_ids[v - 1] if k in ("response", "greater", "than", "best", "worst") else v)
             for k, v in rule.items()} for rule in rules]


def rules_display(item: StudyItem) -> list[dict]:
    """The stored rules with response ids turned back into 1-based numbers (for pages and the API)."""
    order = {rid: n for n, rid in enumerate(item.item_responses.order_by("position").values_list("response_id", flat=True), 1)}
    return [{k: (order.get(v, v) if k in ("response", "greater", "than", "best", "worst") else v)
             for k, v in rule.items()} for rule in item.check_rules]


def _checks_corpus(study: Study) -> Corpus:
    """A per-study corpus holding the check items' conversations (owned like the study, so the texts
    are visible only to its researchers)."""
    corpus, _ = Corpus.objects.get_or_create(
        slug=f"checks-{study.slug}"[:80],
        defaults={"title": f"Attention checks of {study.title}"[:200], "source_format": "checks",
                  "owner": study.experiment.owner})
    return corpus


def _text(value: Any, field: str, problems: _Problems) -> str:
    if not isinstance(value, str) or not value.strip():
        problems.add(field, "must be non-empty text")
        return ""
    if len(value) > MAX_TEXT:
        problems.add(field, f"at most {MAX_TEXT} characters")
    return value.strip()


def _turns(value: Any, problems: _Problems, field: str = "context") -> list[dict[str, str]]:
    """Turns as [{"speaker", "text"}] or as text, one turn per line ("A: hello" names the speaker);
    problems keyed ``field`` (the context, or a compared conversation)."""
    if isinstance(value, str):
        lines = [line.strip() for line in value.splitlines() if line.strip()]
        value = []
        for n, line in enumerate(lines):
            speaker, sep, text = line.partition(":")
            if sep and speaker and len(speaker) <= 20 and text.strip():
                value.append({"speaker": speaker.strip(), "text": text.strip()})
            else:
                value.append({"speaker": "A" if n % 2 == 0 else "B", "text": line})
    if not isinstance(value, list) or not value:
        problems.add(field, "give the conversation, one turn per line")
        return []
    turns = []
    for i, turn in enumerate(value):
        if not isinstance(turn, Mapping):
            problems.add(f"{field}[{i}]", "each turn is {\"speaker\": ..., \"text\": ...}")
            continue
        turns.append({"speaker": str(turn.get("speaker") or ("A" if i % 2 == 0 else "B"))[:40],
                      "text": _text(turn.get("text"), f"{field}[{i}].text", problems)})
    return turns


def _check_item_problems(study: Study, *, kind: Any, context: Any, responses: Any, rules: Any,
                         reference: Any, reference_value: Any, shown_counts: set[int] | None
                         ) -> tuple[dict[str, Any], _Problems]:
    """``shown_counts``: how many responses the study's items show (``regular_shown_counts``), which a check
    item must match; None for practice items, which come before the items."""
    problems = _Problems()
    if kind not in CheckKind.values:
        problems.add("kind", f"one of {', '.join(CheckKind.values)}")
    turns = _turns(context, problems)
    if isinstance(responses, str):
        responses = [line for line in responses.splitlines() if line.strip()]
    if not isinstance(responses, list) or not responses:
        problems.add("responses", "give the responses to judge, one per line")
        responses = []
    elif len(responses) > MAX_RESPONSES:
        problems.add("responses", f"at most {MAX_RESPONSES} responses")
    texts = [_text(r, f"responses[{i}]", problems) for i, r in enumerate(responses)]
    design = design_for(study)
    if texts and (problem := design.check_item_problem(study.design_config, len(texts))
                  or (shown_counts is not None and _shown_count_problem(len(texts), shown_counts))):
        problems.add("responses", problem)  # e.g. two responses for pairwise, tuple_size for BWS
    cleaned_rules, rule_problems = rules_clean(study, rules, len(texts)) if texts else ([], {})
    problems.update({k: v for k, v in rule_problems.items() if k not in problems})
    ref_text, ref_value = "", None
    if design.anchored:  # the reference response and its value (fixed for RME, given for BME)
        ref_text = _text(reference, "reference", problems)
        ref_value, problem = design.check_reference_value(study.design_config, reference_value)
        if problem:
            problems.add("reference_value", problem)
    return {"turns": turns, "texts": texts, "rules": cleaned_rules, "reference": ref_text,
            "reference_value": ref_value}, problems


def regular_shown_counts(study: Study) -> set[int]:
    """How many responses (or, in a design comparing whole conversations, conversations: the unit's
    ``shown_relation``) the study's regular items show (one number, unless drawn items vary it)."""
    return set(study.items.filter(check_kind="").annotate(n=Count(unit_for(study).shown_relation))
               .values_list("n", flat=True).distinct())


def _counts_text(counts: set[int]) -> str:
    return " or ".join(map(str, sorted(counts)))


def _shown_count_problem(n: int, counts: set[int]) -> str | None:
    """A check item that shows another number of responses than every regular item (one response among
    sets of four) is recognisable on sight; None when it fits (or no items are built yet)."""
    if not counts or n in counts:
        return None
    return (f"the study's items show {_counts_text(counts)} responses; a check item must show as "
            f"many, or raters can tell it apart (got {n})")


def checks_publish_problems(study: Study) -> list[str]:
    """Check items written before the items were built (or rebuilt) with another number of responses."""
    counts = regular_shown_counts(study)
    if not counts:
        return []
    odd = (study.items.filter(check_kind__gt="").annotate(n=Count(unit_for(study).shown_relation))
           .exclude(n__in=counts).count())
    return [f"{odd} check item(s) show another number of responses than the items "
            f"({_counts_text(counts)}), so raters could tell them apart: give them as many"] if odd else []


def item_parts_clean(study: Study, *, context: Any, responses: Any, rules: Any, reference: Any = None,
                     reference_value: Any = None) -> tuple[dict[str, Any], dict[str, str]]:
    """A conversation, responses and rules checked exactly as a check item's (``check_item_create``),
    for other items scored by the same rules (practice items, ``studies.onboarding``): (cleaned
    parts, problems by field); rules keep 1-based response numbers. Practice comes before the items, so it
    may show another number of responses than they do."""
    return _check_item_problems(study, kind=CheckKind.GOLD, context=context, responses=responses, rules=rules,
                                reference=reference, reference_value=reference_value, shown_counts=None)


def resolve_rules(rules: list[dict], response_ids: Sequence[int]) -> list[dict]:
    """Rules with 1-based response numbers turned into these response ids."""
    return _resolve(rules, response_ids)


def written_conversation_create(study: Study, prefix: str, number: int, data: dict[str, Any]
                                ) -> tuple[Conversation, list[Response], Response | None]:
    """A conversation written on the study page (``item_parts_clean``'s ``data``) in the study's checks
    corpus, as ``<prefix>-<n>`` (the first free n from ``number``, metadata ``{prefix: True}``): its
    responses to judge and, for magnitude designs, its reference response. Check and practice items
    both store theirs this way."""
    corpus = _checks_corpus(study)
    system, _ = System.objects.get_or_create(name=CHECK_SYSTEM, defaults={
        "description": "Responses written for attention checks and gold items"})
    taken = set(corpus.conversations.values_list("external_id", flat=True))
    while f"{prefix}-{number}" in taken:
        number += 1
    conversation = Conversation.objects.create(corpus=corpus, external_id=f"{prefix}-{number}", turns=data["turns"],
                                               metadata={prefix: True})
    responses = [Response.objects.create(conversation=conversation, system=system, position=p, text=t)
                 for p, t in enumerate(data["texts"])]
    reference = None
    if data["reference"]:
        reference = Response.objects.create(conversation=conversation, system=system, position=len(responses),
                                            text=data["reference"], is_reference=True)
    return conversation, responses, reference


def _check_item_write(study: Study, kind: str, data: dict[str, Any], number: int) -> StudyItem:
    conversation, responses, reference = written_conversation_create(study, "check", number, data)
    last = study.items.filter(check_kind__gt="").aggregate(m=Max("position"))["m"]
    item = StudyItem.objects.create(
        study=study, conversation=conversation, position=CHECK_POSITION_BASE if last is None else last + 1,
        reference_response=reference, reference_value=data["reference_value"], check_kind=kind,
        check_rules=_resolve(data["rules"], [r.pk for r in responses]))
    StudyItemResponse.objects.bulk_create([StudyItemResponse(item=item, response=r, position=p)
                                           for p, r in enumerate(responses)])
    return item


def _refuse_unit(study: Study) -> None:
    if refusal := unit_for(study).checks_refusal(design_for(study)):  # rules name responses or conversations
        raise ValidationError({"kind": refusal})


def _conversations_check_problems(study: Study, *, kind: Any, conversations: Any, rules: Any,
                                  shown_counts: set[int] | None) -> tuple[dict[str, Any], _Problems]:
    """A check item comparing whole conversations (the design's ``check_conversations``): its kind, the
    conversations (``check_conversations.conversations_parse``) and rules numbering them from 1."""
    problems = _Problems()
    if kind not in CheckKind.values:
        problems.add("kind", f"one of {', '.join(CheckKind.values)}")
    parsed = check_conversations.conversations_parse(
        study, conversations, problems=problems,
        turns_of=lambda value, field, found: _turns(value, found, field))
    if parsed and shown_counts is not None and (problem := _shown_count_problem(len(parsed), shown_counts)):
        problems.add("conversations", problem)
    cleaned_rules, rule_problems = rules_clean(study, rules, len(parsed)) if parsed else ([], {})
    problems.update({k: v for k, v in rule_problems.items() if k not in problems})
    return {"conversations": parsed, "rules": cleaned_rules}, problems


def _conversations_check_write(study: Study, kind: str, data: dict[str, Any], number: int) -> StudyItem:
    last = study.items.filter(check_kind__gt="").aggregate(m=Max("position"))["m"]
    return check_conversations.conversation_check_write(
        study, kind=kind, conversations=data["conversations"], rules=data["rules"], corpus=_checks_corpus(study),
        system=CHECK_SYSTEM, number=number, position=CHECK_POSITION_BASE if last is None else last + 1)


@transaction.atomic
def check_item_create(*, study: Study, kind: str, context: Any = None, responses: Any = None, rules: Any,
                      reference: Any = None, reference_value: Any = None, conversations: Any = None) -> StudyItem:
    """Add a check item to a draft study. ``context``: the conversation (turns, or text with one
    turn per line); ``responses``: the texts to judge (a list, or one per line); ``rules``: see the
    module docstring. Magnitude studies also need the reference response (and, for BME, its value).
    A design comparing whole conversations (``check_conversations``, ACUTE-Eval) takes ``conversations``
    instead of a context and responses (``studies.authoring.check_conversations``).
    Any problem raises ValidationError naming the field and nothing is written."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    _require_draft(study, "add check items")
    _refuse_unit(study)
    number = study.items.filter(check_kind__gt="").count() + 1
    if design_for(study).check_conversations:
        data, problems = _conversations_check_problems(study, kind=kind, conversations=conversations, rules=rules,
                                                       shown_counts=regular_shown_counts(study))
        if problems:
            raise ValidationError(dict(problems))
        return _conversations_check_write(study, kind, data, number)
    data, problems = _check_item_problems(study, kind=kind, context=context, responses=responses, rules=rules,
                                          reference=reference, reference_value=reference_value,
                                          shown_counts=regular_shown_counts(study))
    if problems:
        raise ValidationError(dict(problems))
    return _check_item_write(study, kind, data, number)


@transaction.atomic
def check_item_delete(*, item: StudyItem) -> None:
    """Remove a check item (and its own conversation) from a draft study."""
    study = Study.objects.select_for_update().get(pk=item.study_id)
    _require_draft(study, "remove check items")
    if not item.check_kind:
        raise ValidationError({"item": "not a check item"})
    written = [item.conversation_id, *item.item_conversations.values_list("conversation_id", flat=True)]
    item.delete()
    check_conversations.written_conversations_delete(written)


@transaction.atomic
def study_checks_configure(*, study: Study, per_assignment: Any = None, positions: Any = None,
                           min_pass_rate: Any = None) -> Study:
    """Set how many checks each assignment shows, where (1-based positions; empty: random
    positions, a seeded draw per assignment) and the pass rate below which a rater is flagged."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    _require_draft(study, "change the check settings")
    config = checks_config(study)
    problems = _Problems()
    if per_assignment not in (None, ""):
        try:
            config["per_assignment"] = int(per_assignment)
            if not 0 <= config["per_assignment"] <= MAX_PER_ASSIGNMENT:
                raise ValueError
        except (TypeError, ValueError):
            problems.add("per_assignment", f"a whole number from 0 to {MAX_PER_ASSIGNMENT}")
    if positions is not None:
        if isinstance(positions, str):
            positions = [p for p in positions.replace(",", " ").split()]
        try:
            values = sorted({int(p) for p in positions})
            if any(p < 1 for p in values) or len(values) > MAX_PER_ASSIGNMENT:
                raise ValueError
            config["positions"] = values
        except (TypeError, ValueError):
            problems.add("positions", f"screen numbers from 1 (at most {MAX_PER_ASSIGNMENT}), e.g. 5, 20; "
                                      "empty for random positions")
    if min_pass_rate not in (None, ""):
        try:
            rate = float(min_pass_rate)
            if not 0 <= rate <= 1:
                raise ValueError
            config["min_pass_rate"] = rate
        except (TypeError, ValueError):
            problems.add("min_pass_rate", "a number from 0 to 1 (e.g. 0.75)")
    if problems:
        raise ValidationError(dict(problems))
    if config["positions"]:
        config["per_assignment"] = len(config["positions"])
    study.checks_config = config
    study.save(update_fields=["checks_config"])
    return study


# --- import -----------------------------------------------------------------------------------------

IMPORT_COLUMNS = ("kind", "context", "responses", "rules")
IMPORT_MAX_ROWS = 500


@transaction.atomic
def check_items_import(*, study: Study, stream: BinaryIO) -> int:
    """Add check items from a CSV (UTF-8) with columns kind, context (one turn per line),
    responses (one per line), rules (JSON), and for magnitude studies reference (and reference_value
    for BME). Every row is checked first; any problem raises ValidationError naming the row (as a
    spreadsheet numbers it: the header is row 1) and field, and nothing is written. Returns the number of items added."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    _require_draft(study, "add check items")
    _refuse_unit(study)
    compared = design_for(study).check_conversations  # conversation_1..n columns instead of context, responses
    columns = ("kind", *(f"conversation_{k}" for k in range(1, compared + 1)), "rules") if compared else IMPORT_COLUMNS
    try:
        text = stream.read(5_000_001).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValidationError({"file": "not UTF-8 text"}) from None
    if len(text) > 5_000_000:
        raise ValidationError({"file": "larger than 5 MB"})
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in columns if c not in (reader.fieldnames or [])]
    if missing:
        raise ValidationError({"file": f"missing column(s): {', '.join(missing)} (need {', '.join(columns)})"})
    parsed, problems = [], {}
    shown_counts = regular_shown_counts(study)  # once for the file, not per row
    try:
        for line, row in enumerate(reader, start=2):  # rows as a spreadsheet numbers them (header: 1)
            if len(parsed) >= IMPORT_MAX_ROWS:
                raise ValidationError({"file": f"at most {IMPORT_MAX_ROWS} check items per file"})
            try:
                rules = json.loads(row.get("rules") or "")
            except json.JSONDecodeError as error:
                problems[f"row {line}: rules"] = f"not JSON ({error.msg})"
                continue
            if compared:  # each conversation one turn per line; an optional speaker_<k> names the judged one
                data, row_problems = _conversations_check_problems(
                    study, kind=(row.get("kind") or "").strip(), rules=rules, shown_counts=shown_counts,
                    conversations=[{"turns": row.get(f"conversation_{k}") or "", "speaker": row.get(f"speaker_{k}")}
                                   for k in range(1, compared + 1)])
            else:
                data, row_problems = _check_item_problems(
                    study, kind=(row.get("kind") or "").strip(), context=row.get("context") or "",
                    responses=row.get("responses") or "", rules=rules, reference=row.get("reference"),
                    reference_value=_float_or_text(row.get("reference_value")), shown_counts=shown_counts)
            problems.update({f"row {line}: {k}": v for k, v in row_problems.items()})
            parsed.append((row["kind"].strip(), data))
    except csv.Error as error:
        raise ValidationError({"file": f"line {reader.line_num}: {error}"}) from None
    if problems:
        raise ValidationError(dict(list(problems.items())[:20]))
    if not parsed:
        raise ValidationError({"file": "no check items in the file"})
    start = study.items.filter(check_kind__gt="").count() + 1
    write = _conversations_check_write if compared else _check_item_write
    for n, (kind, data) in enumerate(parsed):
        write(study, kind, data, start + n)
    return len(parsed)


def _float_or_text(value: str | None) -> Any:
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return value


# --- reads (the study page, the API) ----------------------------------------------------------------

def study_check_items(study: Study) -> list[dict[str, Any]]:
    """The study's check items with their responses (numbered as in the rules) and readable rules."""
    items = list(study.items.filter(check_kind__gt="").select_related("conversation", "reference_response")
                 .prefetch_related("item_responses__response").order_by("position"))
    compared = check_conversations.check_item_conversations([i.pk for i in items])
    rows = []
    for item in items:
        responses = [link.response for link in item.item_responses.all()]
        number = {r.pk: n for n, r in enumerate(responses, 1)}
        number.update({c["id"]: n for n, c in enumerate(compared.get(item.pk, []), 1)})
        rules = [{k: (number.get(v, v) if k in ("response", "greater", "than", "best", "worst") else v)
                  for k, v in rule.items()} for rule in item.check_rules]
        rows.append({"id": item.pk, "kind": item.check_kind, "item": item, "turns": item.conversation.turns,
                     "responses": [r.text for r in responses],
                     "reference": item.reference_response.text if item.reference_response else None,
                     "reference_value": item.reference_value, "rules": rules,
                     "conversations": [{"turns": c["turns"], "speaker": c["speaker"]} for c in compared.get(item.pk, [])]})
    return rows
