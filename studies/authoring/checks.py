"""Attention checks and gold items, the researcher's side: check items written on the study page, in
the API or imported from a CSV, and the check settings. Their parts and rules are checked by
``studies.rating.check_rules`` (practice items share them); how an assignment is scored: ``studies.rating.checks``."""
from __future__ import annotations

import csv
import io
import json
from typing import Any, BinaryIO

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Max

from studies.authoring import check_conversations, dialogue_set_checks
from studies.designs import design_for, unit_for
from studies.errors import StudyStateError
from studies.models import (
    CheckKind,
    Study,
    StudyItem,
    StudyItemResponse,
)
from studies.rating import chat_checks, dialogue_checks
from studies.rating.check_rules import (
    CHECK_SYSTEM,
    Problems,
    checks_corpus,
    counts_text,
    item_problems,
    judges_the_context,
    regular_shown_counts,
    resolve_rules,
    rules_clean,
    shown_count_problem,
    turns_clean,
    written_conversation_create,
)
from studies.rating.checks import checks_config

MAX_PER_ASSIGNMENT = 20
# item positions of check items start here so that rebuilding the regular items never collides
CHECK_POSITION_BASE = 1_000_000


def _require_draft(study: Study, action: str) -> None:
    if study.status != Study.Status.DRAFT:
        raise StudyStateError(f"cannot {action}: the study is {study.status} (checks are set while it is a draft)")


def checks_publish_problems(study: Study) -> list[str]:
    """Check items written before the items were built (or rebuilt) with another number of responses."""
    counts = regular_shown_counts(study)
    if not counts:
        return []
    odd = (study.items.filter(check_kind__gt="").annotate(n=Count(unit_for(study).shown_relation))
           .exclude(n__in=counts).count())
    return [f"{odd} check item(s) show another number of responses than the items "
            f"({counts_text(counts)}), so raters could tell them apart: give them as many"] if odd else []


def _check_item_write(study: Study, kind: str, data: dict[str, Any], number: int,
                      setting: dialogue_set_checks.Setting | None = None) -> StudyItem:
    conversation, responses, reference = written_conversation_create(study, "check", number, data)
    last = study.items.filter(check_kind__gt="").aggregate(m=Max("position"))["m"]
    item = StudyItem.objects.create(
        study=study, conversation=conversation, position=CHECK_POSITION_BASE if last is None else last + 1,
        reference_response=reference, reference_value=data["reference_value"], check_kind=kind,
        check_rules=resolve_rules(data["rules"], [conversation.pk] if judges_the_context(study)
                                  else [r.pk for r in responses]))
    StudyItemResponse.objects.bulk_create([StudyItemResponse(item=item, response=r, position=p)
                                           for p, r in enumerate(responses)])
    if setting is not None:  # a written dialogue ranked among the study's own, or shown beside its anchor
        dialogue_set_checks.setting_write(item, setting)
    return item


def _refuse_unit(study: Study) -> None:
    if chat_checks.scripted_turn_checks(study):  # a scripted bot reply in the rater's chat
        return
    if dialogue_checks.written_dialogue_checks(study):  # a known bad dialogue, labelled turn by turn
        return
    if refusal := unit_for(study).checks_refusal(design_for(study)):  # rules name responses or conversations
        raise ValidationError({"kind": refusal})


def _conversations_check_problems(study: Study, *, kind: Any, conversations: Any, rules: Any,
                                  shown_counts: set[int] | None) -> tuple[dict[str, Any], Problems]:
    """A check item comparing whole conversations (the design's ``check_conversations``): its kind, the
    conversations (``check_conversations.conversations_parse``) and rules numbering them from 1."""
    problems = Problems()
    if kind not in CheckKind.values:
        problems.add("kind", f"one of {', '.join(CheckKind.values)}")
    parsed = check_conversations.conversations_parse(
        study, conversations, problems=problems,
        turns_of=lambda value, field, found: turns_clean(value, found, field))
    if parsed and shown_counts is not None and (problem := shown_count_problem(len(parsed), shown_counts)):
        problems.add("conversations", problem)
    cleaned_rules, rule_problems = rules_clean(study, rules, len(parsed)) if parsed else ([], {})
    problems.update({k: v for k, v in rule_problems.items() if k not in problems})
    return {"conversations": parsed, "rules": cleaned_rules}, problems


def _conversations_check_write(study: Study, kind: str, data: dict[str, Any], number: int) -> StudyItem:
    last = study.items.filter(check_kind__gt="").aggregate(m=Max("position"))["m"]
    return check_conversations.conversation_check_write(
        study, kind=kind, conversations=data["conversations"], rules=data["rules"], corpus=checks_corpus(study),
        system=CHECK_SYSTEM, number=number, position=CHECK_POSITION_BASE if last is None else last + 1)


@transaction.atomic
def check_item_create(*, study: Study, kind: str, context: Any = None, responses: Any = None, rules: Any,
                      reference: Any = None, reference_value: Any = None, conversations: Any = None,
                      scripted_reply: Any = None, position: Any = None) -> StudyItem:
    """Add a check item to a draft study. ``context``: the conversation (turns, or text with one
    turn per line); ``responses``: the texts to judge (a list, or one per line); ``rules``: see the
    module docstring. Magnitude studies also need the reference response (and, for BME, its value).
    A design comparing whole conversations (``check_conversations``, ACUTE-Eval) takes ``conversations``
    instead of a context and responses (``studies.authoring.check_conversations``); a chat study takes
    ``scripted_reply`` and its ``position`` (the bot's reply it replaces, blank: random) (``studies.rating.chat_checks``).
    Any problem raises ValidationError naming the field and nothing is written."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    _require_draft(study, "add check items")
    _refuse_unit(study)
    number = study.items.filter(check_kind__gt="").count() + 1
    if chat_checks.scripted_turn_checks(study):
        scripted, problems = chat_checks.chat_check_problems(study, kind=kind, scripted_reply=scripted_reply,
                                                             position=position, rules=rules)
        if problems:
            raise ValidationError(dict(problems))
        return chat_checks.chat_check_write(study, kind, scripted, number)
    if dialogue_checks.written_dialogue_checks(study):
        written, problems = dialogue_checks.dialogue_check_problems(study, kind=kind, context=context, rules=rules)
        if problems:
            raise ValidationError(dict(problems))
        return dialogue_checks.dialogue_check_write(study, kind, written, number)
    if design_for(study).check_conversations:
        data, problems = _conversations_check_problems(study, kind=kind, conversations=conversations, rules=rules,
                                                       shown_counts=regular_shown_counts(study))
        if problems:
            raise ValidationError(dict(problems))
        return _conversations_check_write(study, kind, data, number)
    data, problems = item_problems(study, kind=kind, context=context, responses=responses, rules=rules,
                                   reference=reference, reference_value=reference_value,
                                   shown_counts=regular_shown_counts(study))
    setting = None
    if judges_the_context(study):  # a dialogue judged whole: ranked among the study's own, or beside its anchor
        setting, problem = dialogue_set_checks.setting_for(study, number)
        if problem:
            problems.add("context", problem)
    if problems:
        raise ValidationError(dict(problems))
    return _check_item_write(study, kind, data, number, setting)


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


def _shown_ids(item: StudyItem) -> list[int]:
    """What a check item's rules number from 1: its responses, its compared conversations, or the dialogue
    written for it (judged whole, even where it is ranked among the study's own dialogues)."""
    if judges_the_context(item.study) and item.conversation_id:
        return [item.conversation_id]
    compared = check_conversations.check_item_conversations([item.pk]).get(item.pk, [])
    if compared:
        return [c["id"] for c in compared]
    return list(item.item_responses.order_by("position").values_list("response_id", flat=True))


@transaction.atomic
def check_rules_set(*, item: StudyItem, rules: Any) -> StudyItem:
    """Replace a check item's rules (responses numbered from 1, as the API takes them) on a draft study:
    a researcher edits what a check tests, e.g. keeps only the answer it is about. Checked as when the item
    was written; ValidationError names the rule and nothing changes."""
    study = Study.objects.select_for_update().get(pk=item.study_id)
    _require_draft(study, "change a check's rules")
    if not item.check_kind:
        raise ValidationError({"item": "not a check item"})
    ids = _shown_ids(item)
    cleaned, problems = rules_clean(study, rules, len(ids))
    if problems:
        raise ValidationError(dict(problems))
    item.check_rules = resolve_rules(cleaned, ids)
    item.save(update_fields=["check_rules"])
    return item


def check_rule_drop(*, item: StudyItem, index: Any) -> StudyItem:
    """Drop the check item's rule at ``index`` (0-based, as listed): the check no longer tests that answer.
    The last rule cannot be dropped (remove the item instead)."""
    numbered = next((row["rules"] for row in study_check_items(item.study) if row["id"] == item.pk), [])
    try:
        position = int(index)
        if not 0 <= position < len(numbered):
            raise ValueError
    except (TypeError, ValueError):
        raise ValidationError({"rule": f"no rule {index!r} on this check (it has {len(numbered)})"}) from None
    if len(numbered) == 1:
        raise ValidationError({"rule": "a check needs at least one rule: remove the check item instead"})
    return check_rules_set(item=item, rules=[r for i, r in enumerate(numbered) if i != position])


def check_rules_add(*, item: StudyItem, rules: Any) -> StudyItem:
    """Add rules (responses numbered from 1) to the check item's own."""
    numbered = next((row["rules"] for row in study_check_items(item.study) if row["id"] == item.pk), [])
    return check_rules_set(item=item, rules=[*numbered, *(rules or [])])


@transaction.atomic
def study_checks_configure(*, study: Study, per_assignment: Any = None, positions: Any = None,
                           min_pass_rate: Any = None) -> Study:
    """Set how many checks each assignment shows, where (1-based positions; empty: random
    positions, a seeded draw per assignment) and the pass rate below which a rater is flagged."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    _require_draft(study, "change the check settings")
    config = checks_config(study)
    problems = Problems()
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
    if chat_checks.scripted_turn_checks(study):
        raise ValidationError({"file": "a chat study's checks are scripted bot replies: add them one by one on the "
                                       "checks page or in the API"})
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
                data, row_problems = item_problems(
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

def _scripted_fields(item: StudyItem) -> dict[str, Any]:
    """A chat study's check: its scripted reply and the bot reply it replaces (None: random per rater)."""
    meta = item.conversation.metadata or {}
    if not meta.get("scripted_reply"):
        return {"scripted_reply": None, "position": None}
    return {"scripted_reply": item.conversation.turns[0]["text"], "position": meta.get("position")}


def study_check_items(study: Study) -> list[dict[str, Any]]:
    """The study's check items with their responses (numbered as in the rules) and readable rules."""
    items = list(study.items.filter(check_kind__gt="").select_related("conversation", "reference_response")
                 .prefetch_related("item_responses__response").order_by("position"))
    # A dialogue judged whole is number 1 of its rules, even where the study's own dialogues are ranked with it
    # (those are not part of the check: not listed as its conversations).
    compared = {} if judges_the_context(study) else check_conversations.check_item_conversations([i.pk for i in items])
    rows = []
    for item in items:
        responses = [link.response for link in item.item_responses.all()]
        number = {r.pk: n for n, r in enumerate(responses, 1)}
        number.update({c["id"]: n for n, c in enumerate(compared.get(item.pk, []), 1)})
        if judges_the_context(study) and item.conversation_id:
            number[item.conversation_id] = 1
        rules = [{k: (number.get(v, v) if k in ("response", "greater", "than", "best", "worst") else v)
                  for k, v in rule.items()} for rule in item.check_rules]
        rows.append({"id": item.pk, "kind": item.check_kind, "item": item, "turns": item.conversation.turns,
                     "responses": [r.text for r in responses],
                     "reference": item.reference_response.text if item.reference_response else None,
                     "reference_value": item.reference_value, "rules": rules,
                     "conversations": [{"turns": c["turns"], "speaker": c["speaker"]} for c in compared.get(item.pk, [])],
                     **_scripted_fields(item)})
    return rows
