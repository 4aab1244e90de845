"""Every write to the study data: named <noun>_<verb>, keyword-only, one transaction each.

Views, API views, commands and Celery tasks call these; none of them writes models directly.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import math
import os
import random
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, BinaryIO

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.text import slugify

from studies import (
    allocation,
    bws_tuples,
    checks,
    designs,
    dialogue_studies,
    item_draws,
    pairwise_services,
    platforms,
    review,
    selectors,
)
from studies.importing import files as import_files
from studies.importing.reading import text_problem, value_problem
from studies.importing.records import ImportFailed, ImportProblem, ParsedConversation, ParsedHeader
from studies.models import (
    Assignment,
    AssignmentItem,
    Conversation,
    Corpus,
    Criterion,
    Design,
    Experiment,
    ImportJob,
    Invite,
    Rater,
    Rating,
    Response,
    Study,
    StudyItem,
    StudyItemResponse,
    System,
    Unit,
)

logger = logging.getLogger(__name__)

DEFAULT_CRITERIA = (
    {"name": "readability", "question": "How readable is this response?",
     "help_text": "Is it fluent, grammatical and easy to understand, whatever the conversation?"},
    {"name": "coherence", "question": "How coherent is this response with the conversation so far?",
     "help_text": "Does it follow on from what was said, staying on topic and making sense as a reply?"},
)
IMPORT_BATCH = 1000
DRAFT_REASON_MAX = 2000
DRAFT_MAX_FIELDS = 200
# At most this many responses to one conversation in an import (DailyDialog++ has 15; a screen shows
# a handful): more is a malformed file, and Response.position is a small integer.
MAX_RESPONSES_PER_CONVERSATION = 1000
MAX_REPORTED_PROBLEMS = 20


class StudyStateError(Exception):
    """An action that the study's status does not allow (e.g. editing items of a published study)."""


class AssignmentRefused(Exception):
    """A rater may not start this study: another condition of the experiment, blocked, full, closed,
    a second acceptance of the same study, an invite that is invalid, expired or claimed elsewhere.
    ``reason`` says which, so that pages can word their answer for the platform."""

    OTHER_CONDITION, ALREADY_DONE, BLOCKED, CLOSED, FULL, BUSY = (
        "other_condition", "already_done", "blocked", "closed", "full", "busy")
    INVITE_INVALID, INVITE_EXPIRED, INVITE_CLAIMED = "invite_invalid", "invite_expired", "invite_claimed"

    def __init__(self, message: str, *, reason: str = "refused"):
        super().__init__(message)
        self.reason = reason


def unique_slug(model: type, text: str, *, field_name: str = "slug", max_length: int = 80) -> str:
    """A slug for ``text`` not yet used by ``model`` (suffixes -2, -3, ... on clashes)."""
    base = slugify(text)[: max_length - 6] or "untitled"
    candidate, n = base, 1
    while model.objects.filter(**{field_name: candidate}).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate


SLUG_ATTEMPTS = 5


def _slug_not_available(slug: str) -> ValidationError:
    # Says nothing about whose object holds the slug (it may be another researcher's).
    return ValidationError({"slug": [f"the slug {slug!r} is not available; choose another"]})


def _create_with_slug(model: type, *, slug: str | None, text: str, **fields):
    """``model.objects.create(slug=..., **fields)`` that survives a concurrent create of the same slug.

    The check-then-insert of ``unique_slug`` races: two requests can pick the same free slug and the
    second insert raises IntegrityError. Each insert runs in a savepoint; an explicit slug that turns
    out taken is a ValidationError, an automatic one moves on to the next free slug (then a random
    suffix, so retries cannot collide again)."""
    for attempt in range(SLUG_ATTEMPTS):
        candidate = slug or unique_slug(model, text)
        if attempt >= 2 and not slug:
            candidate = f"{candidate[:72]}-{secrets.token_hex(3)}"
        try:
            with transaction.atomic():
                return model.objects.create(slug=candidate, **fields)
        except IntegrityError:
            if not model.objects.filter(slug=candidate).exists():
                raise  # another constraint: not a slug race
            if slug:
                raise _slug_not_available(slug) from None
    raise _slug_not_available(candidate)


# --- experiments and studies ----------------------------------------------------------------------

@transaction.atomic
def experiment_create(*, owner, title: str, slug: str | None = None, description: str = "",
                      conditions: Sequence[Mapping[str, Any]] = ()) -> Experiment:
    """Create an experiment and, optionally, its conditions (each a mapping of study_create's arguments)."""
    if slug and Experiment.objects.filter(slug=slug).exists():
        raise _slug_not_available(slug)
    experiment = _create_with_slug(Experiment, slug=slug, text=title, owner=owner, title=title, description=description)
    for condition in conditions:
        study_create(experiment=experiment, **condition)
    return experiment


@transaction.atomic
def study_create(*, experiment: Experiment, title: str, design: str, design_config: Mapping | None = None,
                 criteria: Sequence[Mapping[str, Any] | str] | None = None, raters_per_item: int = 40,
                 items_per_assignment: int = 50, instructions: str = "", platform: str = Study.Platform.INVITE,
                 platform_config: Mapping | None = None, slug: str | None = None,
                 unit: str = Unit.RESPONSE) -> Study:
    """Create a draft study (one condition). The design configuration is validated and completed with
    its defaults; criteria default to the seed study's readability and coherence. ``unit``: what a
    rating judges, a response or a whole dialogue (``studies.dialogue_studies``)."""
    errors: dict[str, Any] = dict(dialogue_studies.unit_problems(unit, design))
    try:
        config = designs.design_config_clean(design, design_config)
    except ValidationError as error:
        errors.update(error.message_dict)
    if raters_per_item < 1:
        errors["raters_per_item"] = ["must be at least 1"]
    if items_per_assignment < 1:
        errors["items_per_assignment"] = ["must be at least 1"]
    if platform not in Study.Platform.values:
        errors["platform"] = [f"unknown platform {platform!r}"]
    if slug and Study.objects.filter(slug=slug).exists():
        errors.update(_slug_not_available(slug).message_dict)
    base = (pairwise_services.PAIRWISE_CRITERIA if design == Design.PAIRWISE  # A/B: comparative wording
            else dialogue_studies.default_criteria(unit) or DEFAULT_CRITERIA)  # dialogue units: of the whole dialogue
    specs = [{"name": c} if isinstance(c, str) else dict(c) for c in (criteria or base)]
    defaults = {c["name"]: c for c in [*DEFAULT_CRITERIA, *base]}
    names = [slugify(c.get("name", "")) for c in specs]
    if not all(names):
        errors["criteria"] = ["every criterion needs a name"]
    elif len(set(names)) != len(names):
        errors["criteria"] = ["criterion names must be different"]
    if errors:
        raise ValidationError(errors)
    study = _create_with_slug(
        Study, slug=slug, text=f"{experiment.slug}-{design}",
        experiment=experiment, title=title, design=design, design_config=config, unit=unit,
        raters_per_item=raters_per_item, items_per_assignment=items_per_assignment,
        instructions=instructions, platform=platform, platform_config=dict(platform_config or {}),
    )
    Criterion.objects.bulk_create([
        Criterion(
            study=study, name=name, position=i,
            question=spec.get("question") or dialogue_studies.default_question(unit, name)
            or defaults.get(name, {}).get("question") or f"How good is the response's {name}?",
            help_text=spec.get("help_text") or defaults.get(name, {}).get("help_text", ""),
        )
        for i, (name, spec) in enumerate(zip(names, specs, strict=True))
    ])
    return study


def _require_status(study: Study, *allowed: str, action: str) -> None:
    if study.status not in allowed:
        raise StudyStateError(f"cannot {action}: the study is {study.status}")


@transaction.atomic
def study_items_build(*, study: Study, corpus: Corpus, systems: Sequence[str] | None = None,
                      reference_system: str | None = None, limit: int | None = None, seed: int = 0,
                      reference_conversation: str | None = None) -> int:
    """``_items_build``, then the draw is recorded on the study (``item_draws``: all of a corpus's usable
    conversations, or ``limit`` of them drawn at random, which prediction-powered estimates rely on)."""
    count = _items_build(study=study, corpus=corpus, systems=systems, reference_system=reference_system,
                         limit=limit, seed=seed, reference_conversation=reference_conversation)
    item_draws.study_item_draw_record(study=study, corpus=corpus, limit=limit, seed=seed)
    return count


def _items_build(*, study: Study, corpus: Corpus, systems: Sequence[str] | None = None,
                 reference_system: str | None = None, limit: int | None = None, seed: int = 0,
                 reference_conversation: str | None = None) -> int:
    """(Re)build a draft study's items from a corpus: one item per conversation that has a response
    from every chosen system. The reference response (from ``reference_system``, else the one marked
    ``is_reference``) is the anchor in magnitude-estimation designs and is judged, unlabelled, among
    the others in Likert and BWS designs (as in Santhanam & Shaikh 2019). ``limit`` samples that
    many conversations (seeded). Returns the number of items. A dialogue-unit study gets one item
    per conversation instead (``dialogue_studies.dialogue_items_build``)."""
    if study.design == Design.PAIRWISE:  # one item per (conversation, system pair): its own schedule
        return pairwise_services.pairwise_items_build(study=study, corpus=corpus, systems=systems,
                                                      reference_system=reference_system, limit=limit, seed=seed)
    study = Study.objects.select_for_update().get(pk=study.pk)
    _require_status(study, Study.Status.DRAFT, action="change items")
    if study.assignments.exists():
        raise StudyStateError("cannot change items: raters have already started")
    if study.is_dialogue:
        return dialogue_studies.dialogue_items_build(
            study=study, corpus=corpus, systems=systems, reference_system=reference_system,
            reference_conversation=reference_conversation, limit=limit, seed=seed)
    available = set(Response.objects.filter(conversation__corpus=corpus).values_list("system__name", flat=True))
    chosen = list(dict.fromkeys(systems)) if systems else sorted(available - {reference_system})
    unknown = [s for s in [*chosen, *([reference_system] if reference_system else [])] if s not in available]
    if unknown:
        raise ValidationError({"systems": f"no responses from {', '.join(unknown)} in corpus {corpus.slug}"})
    judged_systems = [s for s in chosen if s != reference_system]
    rows = (
        Response.objects.filter(conversation__corpus=corpus, position=0)
        .filter(Q(system__name__in=judged_systems) | Q(system__name=reference_system) | Q(is_reference=True))
        .values_list("conversation_id", "id", "system__name", "is_reference")
        .order_by("conversation_id", "system__name")
    )
    by_conversation: dict[int, dict[str, Any]] = {}
    for conversation_id, response_id, system_name, is_reference in rows:
        entry = by_conversation.setdefault(conversation_id, {"judged": {}, "reference": None})
        if system_name == reference_system or (reference_system is None and is_reference):
            entry["reference"] = response_id
        if system_name in judged_systems:
            entry["judged"][system_name] = response_id
    usable = [
        (cid, e) for cid, e in sorted(by_conversation.items())
        if len(e["judged"]) == len(judged_systems) and (e["reference"] or not study.is_magnitude)
    ]
    if limit is not None and limit < len(usable):
        usable = sorted(random.Random(seed).sample(usable, limit))
    if not usable:
        raise ValidationError({"corpus": (
            f"no conversation in {corpus.slug} has responses from all of {', '.join(judged_systems)}"
            + (" and a reference response" if study.is_magnitude else ""))})
    shown = len(judged_systems) + (0 if study.is_magnitude else 1 if usable[0][1]["reference"] else 0)
    if study.design == Design.BWS and shown != study.design_config["tuple_size"]:
        # BWS ranks every response an item shows, so the tuple size follows the choice (a draft, no rater yet).
        if not 2 <= shown <= 10:
            raise ValidationError({"systems": f"BWS ranks 2 to 10 responses per item; these choices show {shown}"})
        study.design_config = {**study.design_config, "tuple_size": shown}
        study.save(update_fields=["design_config"])
    if study.design == Design.BWS_TUPLES:  # single responses in generated tuples (studies.bws_tuples)
        units = [r for _, e in usable for r in [*e["judged"].values(), *([e["reference"]] if e["reference"] else [])]]
        return bws_tuples.tuple_items_create(study=study, units=units)
    study.items.filter(check_kind="").delete()  # check items (studies.checks) stay
    reference_value = study.design_config.get("reference_value") if study.design == Design.RME else None
    items = StudyItem.objects.bulk_create([
        StudyItem(study=study, conversation_id=cid, position=i, reference_response_id=e["reference"],
                  reference_value=reference_value)
        for i, (cid, e) in enumerate(usable)
    ])
    links = []
    for item, (_, entry) in zip(items, usable, strict=True):
        judged = [entry["judged"][s] for s in judged_systems]
        if not study.is_magnitude and entry["reference"] and entry["reference"] not in judged:
            judged.append(entry["reference"])
        links += [StudyItemResponse(item=item, response_id=r, position=p) for p, r in enumerate(judged)]
    StudyItemResponse.objects.bulk_create(links, batch_size=2000)
    return len(items)


@transaction.atomic
def study_item_reference_values_set(*, study: Study, values: Mapping[int, float]) -> int:
    """Set BME reference values (item id -> value, already on the study's scale); the metrics app
    calls this so that ``studies`` never imports ``metrics``."""
    _require_status(study, Study.Status.DRAFT, action="change reference values")
    items = {i.pk: i for i in study.items.filter(pk__in=list(values))}
    missing = sorted(set(values) - set(items))
    if missing:
        raise ValidationError({"values": f"items {missing[:5]} are not in study {study.slug}"})
    for pk, value in values.items():
        if not value > 0:
            raise ValidationError({"values": f"item {pk}: a reference value must be positive, got {value}"})
        items[pk].reference_value = float(value)
    StudyItem.objects.bulk_update(items.values(), ["reference_value"], batch_size=1000)
    return len(items)


@transaction.atomic
def study_publish(*, study: Study) -> Study:
    """draft -> published, once the study can be rated: it has items and criteria, every magnitude
    item has its reference value, every BWS item shows tuple_size responses."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    _require_status(study, Study.Status.DRAFT, action="publish")
    problems = []
    if not study.items.filter(check_kind="").exists():
        problems.append("it has no items (import dialogues and build the items first)")
    if not study.criteria.exists():
        problems.append("it has no criteria")
    if study.is_magnitude:
        anchor = "reference_conversation" if study.is_dialogue else "reference_response"
        lacking = study.items.filter(Q(reference_value__isnull=True) | Q(**{f"{anchor}__isnull": True})).count()
        if lacking:
            problems.append(f"{lacking} item(s) have no reference response or reference value"
                            + (" (fill them from a metric first)" if study.design == Design.BME else ""))
    if study.design == Design.BWS and study.is_dialogue:
        if problem := dialogue_studies.item_size_problem(study):
            problems.append(problem)
    elif study.design == Design.BWS:
        size = study.design_config["tuple_size"]
        wrong = study.items.annotate(n=Count("item_responses")).exclude(n=size).count()
        if wrong:
            problems.append(f"{wrong} item(s) do not show exactly {size} responses to rank")
    if study.design == Design.BWS_TUPLES:
        problems += bws_tuples.publish_problems(study)
    if study.design == Design.PAIRWISE:
        wrong = study.items.annotate(n=Count("item_responses")).exclude(n=2).count()
        if wrong:
            problems.append(f"{wrong} item(s) do not show exactly two responses to compare")
    if problems:
        raise StudyStateError("cannot publish: " + "; ".join(problems))
    study.status, study.published_at = Study.Status.PUBLISHED, timezone.now()
    study.save(update_fields=["status", "published_at"])
    return study


@transaction.atomic
def study_close(*, study: Study) -> Study:
    """published -> closed: no new assignments; started ones may still be submitted."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    _require_status(study, Study.Status.PUBLISHED, action="close")
    study.status, study.closed_at = Study.Status.CLOSED, timezone.now()
    study.save(update_fields=["status", "closed_at"])
    return study


def study_close_if_done(*, study: Study, now=None, check_items: bool = True) -> str | None:
    """Close a published study that is done: its closing time (``platform_config.closes_at``) has
    passed, or every item has its ``raters_per_item`` submitted assignments. Returns why it closed,
    or None (left as it is). Called when an assignment is submitted, when a rater arrives, and by
    the periodic task ``studies.tasks.studies_close_due``. The row is locked only when the
    unlocked read says the study is done. ``check_items=False`` checks the closing time only (no
    query: what a rater's entry asks, since item counts change only at a submission)."""
    if allocation.study_close_reason(study, now=now, check_items=check_items) is None:
        return None
    with transaction.atomic():
        locked = Study.objects.select_for_update().get(pk=study.pk)
        reason = allocation.study_close_reason(locked, now=now, check_items=check_items)
        if reason is None:
            return None
        locked.status, locked.closed_at = Study.Status.CLOSED, now or timezone.now()
        locked.save(update_fields=["status", "closed_at"])
    study.status, study.closed_at = locked.status, locked.closed_at
    logger.info("study %s closed: %s", study.slug, reason)
    return reason


def studies_close_due(*, now=None) -> int:
    """Close every published study that is done (see study_close_if_done); one transaction per
    study. Returns how many closed."""
    now = now or timezone.now()
    candidates = Study.objects.filter(status=Study.Status.PUBLISHED).exclude(platform=Study.Platform.BENCHMARK)
    return sum(study_close_if_done(study=study, now=now) is not None for study in candidates)


RATER_SETTINGS = ("completion_code", "screened_out_code", "completion_url", "time_limit_minutes", "closes_at",
                  "close_when_complete")
TIME_LIMIT_MAX_MINUTES = 7 * 24 * 60
_CODE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


@transaction.atomic
def study_rater_settings_set(*, study: Study, values: Mapping[str, Any]) -> Study:
    """Set the rater-side keys of ``platform_config``: Prolific's fixed ``completion_code`` and
    optional ``screened_out_code``, ``completion_url`` (https), ``time_limit_minutes`` (1 to one
    week), ``closes_at`` (ISO 8601, in the future) and ``close_when_complete`` (on unless switched
    off: "on"/"true"/"1"/"yes" or True keep it on, anything else, blank included, turns it off).
    Blank clears the other keys; unknown keys and bad values raise ValidationError naming each
    field, and nothing changes."""
    errors: dict[str, str] = {}
    changes: dict[str, Any] = {}
    for key, raw in values.items():
        if key not in RATER_SETTINGS:
            errors[key] = f"not a rater setting (known: {', '.join(RATER_SETTINGS)})"
            continue
        text = "" if raw is None else str(raw).strip()
        if key == "close_when_complete":
            changes[key] = None if raw is True or text.lower() in ("on", "true", "1", "yes") else False
        elif not text:
            changes[key] = None
        elif key in ("completion_code", "screened_out_code"):
            if not _CODE.match(text):
                errors[key] = "must be 1 to 40 letters, digits, '-' or '_'"
            else:
                changes[key] = text
        elif key == "completion_url":
            try:
                if len(text) > 500:
                    raise ValidationError("too long")
                URLValidator(schemes=["https"])(text)
            except ValidationError:
                errors[key] = "must be an https:// address of at most 500 characters"
            else:
                changes[key] = text
        elif key == "time_limit_minutes":
            if not text.isdigit() or not 1 <= int(text) <= TIME_LIMIT_MAX_MINUTES:
                errors[key] = f"must be a whole number of minutes from 1 to {TIME_LIMIT_MAX_MINUTES}"
            else:
                changes[key] = int(text)
        else:  # closes_at
            try:
                when = parse_datetime(text)
            except ValueError:
                when = None
            if when is None:
                errors[key] = "must be a date and time such as 2026-12-01T18:00:00+00:00"
                continue
            when = when if timezone.is_aware(when) else timezone.make_aware(when)
            if when <= timezone.now():
                errors[key] = "is in the past"
            else:
                changes[key] = when.isoformat()
    config = {**Study.objects.select_for_update().get(pk=study.pk).platform_config}
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    if config.get("screened_out_code") and config.get("screened_out_code") == config.get("completion_code"):
        errors["screened_out_code"] = "must differ from the completion code"
    if errors:
        raise ValidationError(errors)
    Study.objects.filter(pk=study.pk).update(platform_config=config)
    study.platform_config = config
    return study


# --- raters, assignments, ratings -----------------------------------------------------------------

def rater_get_or_create(*, platform: str, external_id: str) -> Rater:
    external_id = external_id.strip()
    if not external_id:
        raise ValidationError({"external_id": "a rater needs a platform identity"})
    try:
        with transaction.atomic():
            rater, _ = Rater.objects.get_or_create(platform=platform, external_id=external_id)
    except IntegrityError:  # two first requests of the same worker at once
        rater = Rater.objects.get(platform=platform, external_id=external_id)
    return rater


ENTER_ATTEMPTS = 3


def _retrying(operation):
    """Run ``operation`` in a transaction, again (up to ENTER_ATTEMPTS times) when a concurrent
    request won a unique constraint first (same new worker in two conditions, a double click): the
    next attempt sees the winner's rows and resumes or refuses instead of answering 500."""
    for attempt in range(ENTER_ATTEMPTS):
        try:
            with transaction.atomic():
                return operation()
        except IntegrityError:
            if attempt == ENTER_ATTEMPTS - 1:
                raise AssignmentRefused("too many requests arrived at once; please reload the page",
                                        reason=AssignmentRefused.BUSY) from None
    raise AssertionError("unreachable")


def _rater_for_entry(platform: str, external_id: str) -> Rater | None:
    return Rater.objects.filter(platform=platform, external_id=external_id).first()


def _assignment_create(study: Study, rater: Rater, *, acceptance_id: str = "", platform_data: Mapping | None = None,
                       seed: int | None = None) -> Assignment:
    """Choose the items and create the assignment; the caller holds the study row lock and has
    checked the rater. Raises AssignmentRefused (nothing written) when the study cannot take them."""
    if study.status != Study.Status.PUBLISHED:
        raise AssignmentRefused("this study is not open" if study.status == Study.Status.DRAFT else "this study has closed",
                                reason=AssignmentRefused.CLOSED)
    closes_at = allocation.study_closes_at(study)
    if closes_at is not None and closes_at <= timezone.now():
        raise AssignmentRefused("this study has closed", reason=AssignmentRefused.CLOSED)
    if study.paused_at is not None:  # studies.editing.study_pause: no new raters; started ones go on
        raise AssignmentRefused("this study is paused for now; please try again later", reason=AssignmentRefused.CLOSED)
    # Assignments past their time limit give their items back before the study is judged full.
    if review.time_limit_minutes(study) > 0:
        review.assignments_expire_stale(studies=[study])
    taken = selectors.study_item_takes(study)
    item_ids = list(study.items.filter(check_kind="").values_list("id", flat=True))
    rng = random.Random(seed if seed is not None else secrets.randbits(62))
    open_items = [i for i in item_ids if taken.get(i, 0) < study.raters_per_item]
    if not open_items:
        raise AssignmentRefused("this study has all the ratings it needs", reason=AssignmentRefused.FULL)
    rng.shuffle(open_items)
    open_items.sort(key=lambda i: taken.get(i, 0))  # stable: random among equally rated items
    chosen = open_items[: study.items_per_assignment]
    rng.shuffle(chosen)
    chosen = checks.checks_place(study, chosen, rng)
    assignment_seed = rng.randrange(2**62)
    if rater.pk is None:
        rater.save(force_insert=True)  # only now, once every check has passed (no orphan raters)
    assignment = Assignment.objects.create(
        study=study, rater=rater, experiment_id=study.experiment_id, seed=assignment_seed,
        acceptance_id=acceptance_id, platform_data=dict(platform_data or {}), started_at=timezone.now(),
    )
    shown: dict[int, list[int]] = {}
    for item_id, response_id in (
        StudyItemResponse.objects.filter(item_id__in=chosen).order_by("item_id", "position")
        .values_list("item_id", "response_id")
    ):
        shown.setdefault(item_id, []).append(response_id)
    if study.is_dialogue:  # the rater rates the conversation itself
        shown = dialogue_studies.item_targets(chosen)
    order_rng = random.Random(assignment_seed)
    # Pairwise: sides balanced per rater and per item instead of a shuffle (studies.pairwise_services).
    sides = pairwise_services.pairwise_orders(study=study, chosen=chosen, shown=shown, rng=order_rng) \
        if study.design == Design.PAIRWISE else {}
    rows = []
    for position, item_id in enumerate(chosen):
        responses = shown[item_id][:]
        if item_id in sides:
            responses = sides[item_id]
        else:
            order_rng.shuffle(responses)
        rows.append(AssignmentItem(assignment=assignment, item_id=item_id, position=position, response_order=responses))
    AssignmentItem.objects.bulk_create(rows)
    return assignment


def _existing_for(study: Study, rater: Rater, acceptance_id: str | None) -> Assignment | None:
    """The rater's assignment in the study's experiment if they may resume it; refuses another
    condition, and (when ``acceptance_id`` is given) an assignment bound to another acceptance."""
    existing = Assignment.objects.filter(experiment_id=study.experiment_id, rater=rater).first()
    if existing is None:
        return None
    if existing.study_id != study.pk:
        raise AssignmentRefused("you have already taken part in another condition of this experiment",
                                reason=AssignmentRefused.OTHER_CONDITION)
    if acceptance_id is not None and existing.acceptance_id != acceptance_id:
        raise AssignmentRefused("you have already done this study", reason=AssignmentRefused.ALREADY_DONE)
    return existing


def assignment_start(*, study: Study, rater: Rater, platform_data: Mapping | None = None,
                     seed: int | None = None) -> Assignment:
    """Give the rater an assignment, or return the one they already have (resume).

    Items are those furthest below their target (``raters_per_item``), ties broken at random; the
    item order and each item's response order are a per-rater seeded shuffle, stored. The study row
    is locked before the rater's assignment is looked up, so concurrent starts never push an item
    past its target and a double click finds the first request's assignment instead of "full"."""
    def start() -> Assignment:
        locked = Study.objects.select_for_update().get(pk=study.pk)
        existing = _existing_for(locked, rater, None)
        if existing is not None:
            return existing
        if rater.blocked:
            raise AssignmentRefused("this worker identity may not take part", reason=AssignmentRefused.BLOCKED)
        return _assignment_create(locked, rater, platform_data=platform_data, seed=seed)
    return _retrying(start)


def _enter(study: Study, *, platform: str, external_id: str, acceptance_id: str, platform_data: Mapping | None,
           seed: int | None) -> Assignment:
    locked = Study.objects.select_for_update().get(pk=study.pk)
    rater = _rater_for_entry(platform, external_id)
    if rater is not None:
        existing = _existing_for(locked, rater, acceptance_id)
        if existing is not None:
            return existing
        if rater.blocked:
            raise AssignmentRefused("this worker identity may not take part", reason=AssignmentRefused.BLOCKED)
    if acceptance_id:
        holder = Assignment.objects.filter(study=locked, acceptance_id=acceptance_id).select_related("rater").first()
        if holder is not None:
            if (holder.rater.platform, holder.rater.external_id) == (platform, external_id):
                return holder
            raise AssignmentRefused("this link belongs to another worker's assignment",
                                    reason=AssignmentRefused.ALREADY_DONE)
    return _assignment_create(locked, rater or Rater(platform=platform, external_id=external_id),
                              acceptance_id=acceptance_id, platform_data=platform_data, seed=seed)


def assignment_enter(*, study: Study, platform: str, external_id: str, acceptance_id: str = "",
                     platform_data: Mapping | None = None, seed: int | None = None) -> Assignment:
    """A rater arriving by a platform link: resume their assignment or start one, all or nothing.

    The assignment is bound to the platform's per-acceptance id (MTurk assignmentId, Prolific
    SESSION_ID): a known worker presenting another one gets nothing of the first assignment
    (AssignmentRefused, reason ALREADY_DONE). The rater row is created only once every check has
    passed, in the same transaction as the assignment, so a refused or failed entry writes
    nothing. Races (the same new worker in two conditions at once, a double click on the last slot)
    retry and then resume or refuse; they never surface as IntegrityError."""
    external_id = external_id.strip()
    if not external_id:
        raise ValidationError({"external_id": "a rater needs a platform identity"})
    return _retrying(lambda: _enter(study, platform=platform, external_id=external_id, acceptance_id=acceptance_id,
                                    platform_data=platform_data, seed=seed))


def _enter_experiment(experiment: Experiment, *, platform: str, external_id: str, acceptance_id: str,
                      platform_data: Mapping | None, seed: int | None) -> Assignment:
    # Every open condition's row is locked (in id order, so two entries cannot deadlock) before the
    # rater is looked up: concurrent new raters are counted one after another, and a double click
    # finds the first request's assignment. A per-condition entry locks one of these rows.
    conditions = list(allocation.experiment_conditions(experiment).select_for_update())
    rater = _rater_for_entry(platform, external_id)
    held = Assignment.objects.filter(experiment=experiment).select_related("study")
    existing = held.filter(rater=rater).first() if rater is not None else None
    if existing is None and acceptance_id:
        existing = held.filter(acceptance_id=acceptance_id).first()
    if existing is not None:  # a returning rater goes back to their condition (identity binding as there)
        return _enter(existing.study, platform=platform, external_id=external_id, acceptance_id=acceptance_id,
                      platform_data=platform_data, seed=seed)
    if not conditions:
        raise AssignmentRefused("this experiment is not open", reason=AssignmentRefused.CLOSED)
    if problem := allocation.experiment_platform_problem(conditions):
        raise StudyStateError(problem)
    if conditions[0].platform != platform:
        raise AssignmentRefused(f"this experiment takes raters from {conditions[0].get_platform_display()}",
                                reason=AssignmentRefused.CLOSED)
    loads = allocation.condition_loads(conditions)
    rng = random.Random(seed if seed is not None else secrets.randbits(62))
    ranked = sorted(conditions, key=lambda s: (loads.get(s.pk, math.inf), rng.random()))
    refusal: AssignmentRefused | None = None
    for study in ranked:
        try:
            return _enter(study, platform=platform, external_id=external_id, acceptance_id=acceptance_id,
                          platform_data=platform_data, seed=seed)
        except AssignmentRefused as error:  # full or closed: try the next condition
            if error.reason not in (AssignmentRefused.FULL, AssignmentRefused.CLOSED):
                raise
            refusal = refusal or error
    raise AssignmentRefused("this experiment has all the ratings it needs", reason=AssignmentRefused.FULL) \
        if refusal is None or refusal.reason == AssignmentRefused.FULL else refusal


def experiment_enter(*, experiment: Experiment, platform: str, external_id: str, acceptance_id: str = "",
                     platform_data: Mapping | None = None, seed: int | None = None) -> Assignment:
    """A rater arriving by the experiment-level link (one HIT type or Prolific study for all
    conditions): a returning rater resumes the condition they already have (bound to the platform's
    acceptance id as in ``assignment_enter``); a new one is placed in the published condition that
    is least full relative to the places it needs (``allocation.condition_loads``: started, submitted
    and approved assignments over ceil(items x raters per item / items per rater)), ties broken at
    random, so conditions fill evenly whatever order raters arrive in. A full or closed condition is
    skipped. Raises StudyStateError when the conditions are on different platforms (one link cannot
    carry two platforms' parameters), AssignmentRefused as ``assignment_enter`` does; nothing is
    written on either."""
    external_id = external_id.strip()
    if not external_id:
        raise ValidationError({"external_id": "a rater needs a platform identity"})
    return _retrying(lambda: _enter_experiment(experiment, platform=platform, external_id=external_id,
                                               acceptance_id=acceptance_id, platform_data=platform_data, seed=seed))


# --- invitations ----------------------------------------------------------------------------------

INVITE_DAYS_DEFAULT = 14
INVITE_DAYS_MAX = 365


def _browser_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def invite_create(*, study: Study, label: str = "", expires_in_days: int | float = INVITE_DAYS_DEFAULT,
                  created_by=None) -> Invite:
    """A single-use invitation link to the study, valid for ``expires_in_days`` (default 14)."""
    label = (label or "").strip()
    errors: dict[str, str] = {}
    if len(label) > 120:
        errors["label"] = "must be at most 120 characters"
    elif problem := platforms.text_problem(label):
        errors["label"] = problem
    if isinstance(expires_in_days, bool) or not isinstance(expires_in_days, (int, float)) \
            or not 0 < expires_in_days <= INVITE_DAYS_MAX:
        errors["expires_in_days"] = f"must be a number of days above 0 and at most {INVITE_DAYS_MAX}"
    if study.platform != Study.Platform.INVITE:
        errors["study"] = f"study {study.slug} takes raters from {study.get_platform_display()}, not by invitation"
    if errors:
        raise ValidationError(errors)
    return Invite.objects.create(study=study, label=label, created_by=created_by,
                                 expires_at=timezone.now() + timedelta(days=expires_in_days))


def invite_enter(*, study: Study, token: str, browser_secret: str, seed: int | None = None) -> Assignment:
    """An invitee opening their link: the first browser claims the invite (its secret is stored
    hashed) and gets an assignment; that browser may resume later, any other is refused. An
    unclaimed invite past its expiry is refused. Nothing is written when anything is refused."""
    if not browser_secret:
        raise ValueError("a browser secret is required")
    digest = _browser_hash(browser_secret)

    def enter() -> Assignment:
        invite = Invite.objects.select_for_update().filter(token=token).first()
        if invite is None:
            raise AssignmentRefused("this invitation link is not valid (it may have been cut or changed)",
                                    reason=AssignmentRefused.INVITE_INVALID)
        if invite.study_id != study.pk:
            raise AssignmentRefused("this invitation is for another study", reason=AssignmentRefused.INVITE_INVALID)
        if invite.claimed_at is not None:
            if not hmac.compare_digest(invite.browser_hash, digest):
                raise AssignmentRefused("this invitation has already been opened in another browser",
                                        reason=AssignmentRefused.INVITE_CLAIMED)
        elif invite.expires_at <= timezone.now():
            raise AssignmentRefused("this invitation has expired", reason=AssignmentRefused.INVITE_EXPIRED)
        assignment = _enter(study, platform=Study.Platform.INVITE, external_id=invite.rater_id_text, acceptance_id="",
                            platform_data={"invite": invite.pk}, seed=seed)
        if invite.claimed_at is None:
            Invite.objects.filter(pk=invite.pk).update(claimed_at=timezone.now(), browser_hash=digest)
        return assignment
    return _retrying(enter)


def assignment_consent(*, assignment: Assignment) -> Assignment:
    """Record that the rater read the instructions and agreed (once)."""
    Assignment.objects.filter(pk=assignment.pk, consented_at__isnull=True).update(consented_at=timezone.now())
    assignment.refresh_from_db(fields=["consented_at"])
    return assignment


def assignment_item_open(*, slot: AssignmentItem) -> AssignmentItem:
    """Note when the rater first saw an item (server time); later visits keep the first time."""
    if slot.started_at is None:
        now = timezone.now()
        if AssignmentItem.objects.filter(pk=slot.pk, started_at__isnull=True).update(started_at=now):
            slot.started_at = now  # ours: no second read
        else:  # another request was first; keep its time
            slot.refresh_from_db(fields=["started_at"])
    return slot


def assignment_item_draft_save(*, slot: AssignmentItem, draft: Mapping[str, Any]) -> None:
    """Autosave what the rater has typed so far (any shape the page sends, bounded in size); the
    ratings themselves are stored only by ratings_record."""
    if slot.assignment.status != Assignment.Status.STARTED:
        raise StudyStateError(f"this assignment is already {slot.assignment.status}")
    if len(draft) > DRAFT_MAX_FIELDS:
        raise ValidationError({"draft": f"at most {DRAFT_MAX_FIELDS} fields"})
    cleaned = {}
    for key, value in draft.items():
        name = str(key)
        if len(name) > 80 or (problem := platforms.text_problem(name)):
            raise ValidationError({"draft": f"a field name {problem or 'is longer than 80 characters'}"})
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValidationError({name: "must be text or a number"})
        if isinstance(value, float) and not math.isfinite(value):
            raise ValidationError({name: "must be a finite number"})
        # A value is a number or a choice; a pairwise reason (studies.pairwise_rater) is free text.
        text = str(value)[:DRAFT_REASON_MAX if name.startswith("reason-") else 20]
        if problem := platforms.text_problem(text):
            raise ValidationError({name: problem})
        cleaned[name] = text
    AssignmentItem.objects.filter(pk=slot.pk).update(draft=cleaned)


def answer_slot_lock(*, assignment: Assignment, item_id: int, seconds: float | None,
                     active_seconds: float | None) -> AssignmentItem:
    """The slot an answer is for, read with its assignment row locked (concurrent submits of one
    assignment run one after the other), after the checks every kind of answer shares (ratings,
    best-worst picks, pairwise choices): timings are finite and not negative, the assignment is still
    started, and the item is part of it. Must run inside a transaction."""
    for name, given in (("seconds", seconds), ("active_ms", active_seconds)):
        if given is not None and (isinstance(given, bool) or not isinstance(given, (int, float))
                                  or (isinstance(given, float) and not math.isfinite(given)) or given < 0):
            raise ValidationError({name: f"must be a finite number of at least 0, got {given!r}"})
    slot = (AssignmentItem.objects.select_for_update(of=("assignment",)).select_related("assignment__study")
            .filter(assignment_id=assignment.pk, item_id=item_id).first())
    current = slot.assignment if slot else Assignment.objects.select_related("study").get(pk=assignment.pk)
    if current.status != Assignment.Status.STARTED:
        raise StudyStateError(f"this assignment is already {current.status}")
    if slot is None:
        raise ValidationError({"item": "this item is not part of the assignment"})
    return slot


@transaction.atomic
def ratings_record(*, assignment: Assignment, item_id: int, answers: Mapping[str, Mapping[int, Any]],
                   seconds: float | None = None, active_seconds: float | None = None) -> int:
    """Store one item's answers. Values are checked against the study's design (Likert points,
    magnitude range, complete BWS ranking without ties); any problem raises ValidationError keyed
    ``<criterion>.<response id>`` and nothing is stored. Storing the same answers twice stores them
    once; changed answers replace the earlier ones. Returns the number of ratings now stored.

    Four statements on the rater's hot path: the slot read together with its assignment, which is
    locked (concurrent submits of one assignment run one after the other); the criteria come from
    the cache (selectors.study_criteria); a first answer is one upsert on the unique
    (assignment, response, criterion): a double submit that waited on the lock may have read the
    slot as it was before the first one committed (PostgreSQL re-reads only the locked row), and
    still stores one rating each; a changed answer reads the stored ones and writes only what changed."""
    slot = answer_slot_lock(assignment=assignment, item_id=item_id, seconds=seconds, active_seconds=active_seconds)
    assignment, study = slot.assignment, slot.assignment.study
    criteria = {c.name: c for c in selectors.study_criteria(study)}
    shown = set(slot.response_order)
    errors: dict[str, str] = {}
    for name in criteria:
        if name not in answers:
            errors[name] = "answer this question for every response"
    for name, per_response in answers.items():
        criterion = criteria.get(name)
        if criterion is None:
            errors[name] = "unknown criterion"
            continue
        if set(per_response) != shown:
            errors[name] = "answer for every response shown (and only those)"
            continue
        if study.design == Design.BWS:
            problem = designs.ranks_problem([per_response[r] for r in slot.response_order], len(shown))
            if problem:
                errors[name] = problem
            continue
        for response_id, value in per_response.items():
            problem = designs.value_problem(study.design, study.design_config, value,
                                            scale_min=criterion.scale_min, scale_max=criterion.scale_max)
            if problem:
                errors[f"{name}.{response_id}"] = problem
    if errors:
        raise ValidationError(errors)
    is_rank = study.design == Design.BWS
    target = dialogue_studies.rating_target  # response, or conversation in a dialogue study
    given = [(criteria[name], response_id, (None, int(raw)) if is_rank else (float(raw), None))
             for name, per_response in answers.items() for response_id, raw in per_response.items()]
    changed = True
    if slot.answered_at is None:
        # No ratings for this item yet (ratings and answered_at are written together).
        Rating.objects.bulk_create(
            [Rating(assignment=assignment, item_id=item_id, **target(study, response_id), criterion=criterion,
                    value=value, rank=rank, seconds=seconds) for criterion, response_id, (value, rank) in given],
            update_conflicts=True, unique_fields=dialogue_studies.rating_unique_fields(study),
            update_fields=["value", "rank", "seconds", "updated_at"])
    else:
        existing = {(r.target_id, r.criterion_id): r
                    for r in Rating.objects.filter(assignment=assignment, item_id=item_id)}
        create, update = [], []
        for criterion, response_id, (value, rank) in given:
            old = existing.get((response_id, criterion.pk))
            if old is None:
                create.append(Rating(assignment=assignment, item_id=item_id, **target(study, response_id),
                                     criterion=criterion, value=value, rank=rank, seconds=seconds))
            elif (old.value, old.rank) != (value, rank):
                old.value, old.rank, old.seconds = value, rank, seconds
                old.updated_at = timezone.now()  # bulk_update does not apply auto_now
                update.append(old)
        Rating.objects.bulk_create(create)
        if update:
            Rating.objects.bulk_update(update, ["value", "rank", "seconds", "updated_at"])
        changed = bool(create or update)
    if changed:
        slot.answered_at = timezone.now()
        slot.active_seconds = active_seconds if active_seconds is not None else slot.active_seconds
        slot.draft = {}
        slot.save(update_fields=["answered_at", "active_seconds", "draft"])
    return len(given)  # validation asked for every criterion x every shown response


def completion_code_for(assignment: Assignment) -> str:
    """The code a rater takes back to the platform. Prolific checks the study's fixed codes
    (``platform_config.completion_code`` or the ``cc`` of its ``completion_url``; ``screened_out_code`` for a rater screened out, e.g. by
    failed attention checks, when the researcher set one), so every Prolific rater gets the same
    code; elsewhere (MTurk, invites) each assignment gets its own random code, which a reviewer can
    match to one person. A Prolific study without a configured code falls back to a random one."""
    config = assignment.study.platform_config or {}
    if assignment.rater.platform == Study.Platform.PROLIFIC:
        if assignment.screened_out and (code := platforms.screened_out_code(config)):
            return code
        if code := platforms.prolific_completion_code(config):
            return code[:40]
    return f"CC-{secrets.token_hex(4).upper()}"


@transaction.atomic
def assignment_submit(*, assignment: Assignment, questionnaire: Mapping[str, Any] | None = None,
                      total_seconds: float | None = None) -> Assignment:
    """Finish an assignment: every item answered; store the questionnaire on the rater; issue the
    completion code (``completion_code_for``). Submitting again returns the same assignment and
    code. The study closes itself once every item has its raters (``study_close_if_done``)."""
    assignment = Assignment.objects.select_for_update().select_related("rater", "study").get(pk=assignment.pk)
    if assignment.status != Assignment.Status.STARTED:
        return assignment
    unanswered = assignment.assignment_items.filter(answered_at__isnull=True).count()
    if unanswered:
        raise ValidationError({"items": f"{unanswered} item(s) are not answered yet"})
    now = timezone.now()
    if questionnaire:
        rater = assignment.rater
        answers = dict(questionnaire)
        for key in ("prior_rating_experience", "prior_agent_experience"):
            if key in answers:
                setattr(rater, key, answers.pop(key))
        rater.questionnaire = {**rater.questionnaire, **answers}
        rater.save(update_fields=["prior_rating_experience", "prior_agent_experience", "questionnaire"])
    assignment.status = Assignment.Status.SUBMITTED
    assignment.submitted_at = now
    assignment.total_seconds = total_seconds if total_seconds is not None else (now - assignment.started_at).total_seconds()
    # Checks first: a rater who failed them gets the study's screened-out code where one is set.
    checks.assignment_checks_score(assignment=assignment)
    assignment.completion_code = completion_code_for(assignment)
    assignment.save(update_fields=["status", "submitted_at", "total_seconds", "completion_code"])
    study_close_if_done(study=assignment.study, now=now)
    if (assignment.study.live_config or {}).get("close_when_reached"):  # the study came with the row lock
        from studies.tasks import study_close_if_reliable_run  # late: tasks import services

        transaction.on_commit(lambda: study_close_if_reliable_run.delay(assignment.study_id), robust=True)
    return assignment


# --- import ---------------------------------------------------------------------------------------

@dataclass
class ImportSummary:
    corpus: Corpus
    format: str
    conversations: int = 0
    responses: int = 0
    systems_created: list[str] = field(default_factory=list)
    benchmark_study: Study | None = None
    ratings: int = 0
    missing_scores: dict[str, int] = field(default_factory=dict)
    unit: str = Unit.RESPONSE

    def as_dict(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus.slug, "format": self.format, "conversations": self.conversations,
            "responses": self.responses, "systems_created": self.systems_created,
            "benchmark_study": self.benchmark_study.slug if self.benchmark_study else None,
            "ratings": self.ratings, "missing_scores": self.missing_scores, "unit": self.unit,
        }


def _corpus_name_taken(slug: str) -> ImportProblem:
    # Corpus names are global: say nothing of whose corpus holds it.
    return ImportProblem(None, "corpus", f"the corpus name {slug!r} is not available; choose another name")


def _size_of(stream: BinaryIO) -> int | None:
    try:
        position = stream.tell()
        stream.seek(0, 2)
        size = stream.tell()
        stream.seek(position)
        return size
    except (OSError, AttributeError):
        return None


def dialogues_import(*, stream: BinaryIO, source_name: str, source_format: str = "auto",
                     corpus_slug: str | None = None, owner=None, systems: Iterable[str] = (),
                     on_progress=None, more_files: Sequence[tuple[str, BinaryIO]] = ()) -> ImportSummary:
    """Import conversations and responses from a binary stream, all or nothing.

    The file is parsed one record at a time and written in batches inside one transaction; any
    problem (malformed line, missing field, empty text, unknown system, duplicate id, non-UTF-8, too
    large) raises ImportFailed listing up to 20 problems by line and field, and nothing is kept.
    Systems must exist already, be declared by the file (Concord header; implied by the public
    formats) or be named in ``systems``. GRADE, FED and DSTC9 human scores also become a closed,
    read-only benchmark study (one rater per annotator position) whose unit is the file's: responses,
    or whole dialogues (FED dialogue level, DSTC9). ``more_files`` ((name, stream) pairs of the same
    format) go into the same corpus and benchmark study: several files of one evaluation."""
    files = [(source_name, stream), *more_files]
    limit = settings.IMPORT_MAX_BYTES
    size = sum(_size_of(s) or 0 for _, s in files)
    if size > limit:
        what = "the files are" if len(files) > 1 else "the file is"
        raise ImportFailed([ImportProblem(None, "", f"{what} {size / 2**20:.1f} MiB; the import limit is "
                                                    f"{limit / 2**20:.0f} MiB (CONCORD_IMPORT_MAX_BYTES)")])
    source_format, format_problems = import_files.formats_problems(files, source_format)
    if format_problems:
        raise ImportFailed(format_problems)
    slug = slugify(corpus_slug or source_name.rsplit("/", 1)[-1].rsplit(".", 1)[0])[:80]
    if not slug:
        raise ImportFailed([ImportProblem(None, "corpus", "give the corpus a name")])
    if Corpus.objects.filter(slug=slug).exists():
        raise ImportFailed([_corpus_name_taken(slug)])
    declared = {slugify(s) for s in systems}
    header = ParsedHeader()
    with transaction.atomic():
        try:
            with transaction.atomic():  # a savepoint: a concurrent import of the same name loses cleanly
                corpus = Corpus.objects.create(slug=slug, title=slug, source_format=source_format,
                                               source_name=source_name[-300:], owner=owner)
        except IntegrityError:
            raise ImportFailed([_corpus_name_taken(slug)]) from None
        summary = ImportSummary(corpus=corpus, format=source_format)
        writer = _CorpusWriter(corpus, header, declared, summary,
                               keep_scores=source_format in ("grade", "fed", "dstc9"))
        problems: list[ImportProblem] = []
        seen: dict[str, int] = {}
        batch: list[ParsedConversation] = []
        for record in import_files.parsed_records(files, source_format, header):
            if isinstance(record, ParsedConversation):
                if writer.merge(record):
                    continue  # another rating of a conversation already read (one rating per record)
                problem = writer.check(record, seen)
                record = problem or record
            if isinstance(record, ImportProblem):
                problems.append(record)
                if len(problems) >= MAX_REPORTED_PROBLEMS:
                    break
                continue
            if not problems:
                batch.append(record)
                if len(batch) >= IMPORT_BATCH:
                    writer.write(batch)
                    batch = []
                    if on_progress:
                        on_progress(summary.conversations)
        if not problems and not seen:
            problems.append(ImportProblem(None, "", "the file holds no conversations"))
        if problems:
            transaction.set_rollback(True)
            raise ImportFailed(problems)
        writer.write(batch)
        summary.missing_scores = dict(header.missing_scores)
        summary.unit = header.unit
        scored = [entry for entry in writer.scored if any(v is not None for s in entry[2].values() for v in s)]
        if header.benchmark and scored:
            summary.benchmark_study, summary.ratings = _benchmark_study_create(corpus, header, scored, owner)
    return summary


def _scores_extend(kept: dict[str, list[float | None]], extra: dict[str, list[float | None]]) -> None:
    """Append ``extra``'s annotator positions after ``kept``'s, padding with None so that position j
    is the same annotator in every quality."""
    width = max((len(v) for v in kept.values()), default=0)
    extra_width = max((len(v) for v in extra.values()), default=0)
    for name in kept.keys() | extra.keys():
        padded = kept.setdefault(name, [])
        padded += [None] * (width - len(padded))
        padded += extra.get(name) or [None] * extra_width


class _CorpusWriter:
    """Checks records against what the database and the file declare, and bulk-writes batches."""

    def __init__(self, corpus: Corpus, header: ParsedHeader, declared: set[str], summary: ImportSummary,
                 keep_scores: bool):
        self.corpus, self.header, self.declared, self.summary = corpus, header, declared, summary
        self.system_ids = dict(System.objects.values_list("name", "id"))
        self.keep_scores = keep_scores
        self.scored: list[tuple[int, int, dict[str, list[float | None]]]] = []  # conversation, response, scores
        self.rated: dict[Any, tuple[list, bytes]] = {}  # key -> (first record's responses, digest of its content)

    @staticmethod
    def _digest(record: ParsedConversation) -> bytes:
        content = repr((record.turns, [(r.system, r.text) for r in record.responses]))
        return hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def merge(self, record: ParsedConversation) -> bool:
        """Human-judgment files may give one rating per record: a record that repeats a conversation
        already read (same id, or for files without ids the same context) with the same responses adds
        its scores as further annotator positions of that conversation instead of being a duplicate
        (DSTC9: the k-th record of one dialogue is annotator k, also across the files of one import).
        The first record's score lists are extended in place (they are what ``write`` keeps)."""
        dialogue = not record.responses and self.header.unit == Unit.DIALOGUE
        if not self.keep_scores or not (dialogue or any(r.human_scores for r in record.responses)):
            return False
        digest = self._digest(record)
        key = ("content", digest) if record.id_generated else ("id", record.external_id)
        first = self.rated.get(key)
        if first is None:
            self.rated[key] = ([record] if dialogue else record.responses, digest)
            return False
        if first[1] != digest:
            return False  # a different conversation under the same id: check() reports the duplicate
        for kept, extra in zip(first[0], [record] if dialogue else record.responses, strict=True):
            _scores_extend(kept.human_scores, extra.human_scores)
        return True

    def check(self, record: ParsedConversation, seen: dict[str, int]) -> ImportProblem | None:
        """What the database could not store or would confuse, named by line and field, whatever the
        format: text with NUL or lone surrogates, ids longer than the column (two ids equal in their
        first 120 characters would collide), system names over 80 characters, too many responses."""
        line = record.line
        problem = self._storable(record)
        if problem is not None:
            return problem
        if record.external_id in seen:
            return ImportProblem(line, "id", f"duplicate conversation id {record.external_id!r} "
                                             f"(first on line {seen[record.external_id]})")
        seen[record.external_id] = line
        for response in record.responses:
            name = response.system
            if name not in self.system_ids and name not in self.header.systems and name not in self.declared:
                return ImportProblem(record.line, f"responses.{name}", (
                    f"unknown system {name!r}: declare it in the file's header \"systems\" or pass it as a "
                    "known system (--system / systems)"))
        return None

    @staticmethod
    def _storable(record: ParsedConversation) -> ImportProblem | None:
        line = record.line
        id_limit = Conversation._meta.get_field("external_id").max_length
        name_limit = System._meta.get_field("name").max_length
        if (message := text_problem(record.external_id)) is not None:
            return ImportProblem(line, "id", message)
        if len(record.external_id) > id_limit:
            return ImportProblem(line, "id", f"is {len(record.external_id)} characters long; ids may have at most "
                                             f"{id_limit}")
        for i, turn in enumerate(record.turns):
            for key in ("speaker", "text"):
                if (message := text_problem(turn[key])) is not None:
                    return ImportProblem(line, f"turns[{i}].{key}", message)
        if len(record.responses) > MAX_RESPONSES_PER_CONVERSATION:
            return ImportProblem(line, "responses", f"has {len(record.responses)} responses; one conversation may "
                                                    f"have at most {MAX_RESPONSES_PER_CONVERSATION}")
        for response in record.responses:
            field_name = f"responses.{response.system}"
            if len(response.system) > name_limit:
                return ImportProblem(line, f"responses.{response.system[:40]}…",
                                     f"the system name is {len(response.system)} characters long; at most {name_limit}")
            if (message := text_problem(response.system)) is not None:
                return ImportProblem(line, "system", message)
            if (message := text_problem(response.text)) is not None:
                return ImportProblem(line, field_name, message)
            if (problem := value_problem(response.metadata, f"{field_name}.metadata")) is not None:
                return ImportProblem(line, *problem)
        if (problem := value_problem(record.metadata, "metadata")) is not None:
            return ImportProblem(line, *problem)
        return None

    def _ensure_systems(self, names: set[str]) -> None:
        missing = sorted(names - set(self.system_ids))
        if not missing:
            return
        System.objects.bulk_create(
            [System(name=n, description=self.header.systems.get(n, ""), is_human=n in self.header.human_systems)
             for n in missing],
            ignore_conflicts=True,
        )
        self.system_ids.update(System.objects.filter(name__in=missing).values_list("name", "id"))
        self.summary.systems_created += missing

    def write(self, batch: list[ParsedConversation]) -> None:
        if not batch:
            return
        self._ensure_systems({r.system for c in batch for r in c.responses})
        conversations = Conversation.objects.bulk_create([
            Conversation(corpus=self.corpus, external_id=c.external_id, turns=c.turns, metadata=c.metadata)
            for c in batch
        ])
        pairs = [(conversation, parsed) for conversation, record in zip(conversations, batch, strict=True) for parsed in record.responses]
        responses = Response.objects.bulk_create([
            Response(conversation=conversation, system_id=self.system_ids[p.system], position=p.position,
                     text=p.text, is_reference=p.is_reference, metadata=p.metadata)
            for conversation, p in pairs
        ])
        if self.keep_scores:
            self.scored += [(c.pk, r.pk, p.human_scores) for (c, p), r in zip(pairs, responses, strict=True) if p.human_scores]
            # Dialogue-level judgments: the conversation itself is rated (no response). Kept even while
            # its scores are empty: a later record of the same dialogue (another file) extends them in place.
            if self.header.unit == Unit.DIALOGUE:
                self.scored += [(c.pk, None, record.human_scores)
                                for c, record in zip(conversations, batch, strict=True) if not record.responses]
        self.summary.conversations += len(conversations)
        self.summary.responses += len(responses)


def _benchmark_study_create(corpus: Corpus, header: ParsedHeader, scored, owner) -> tuple[Study, int]:
    """A closed Likert study holding imported human judgments: one item per conversation, one rater
    per annotator position (annotator j of one item is not known to be annotator j of another).
    Its unit is the file's: a response (``scored`` holds (conversation, response, scores)) or the whole
    dialogue (response None: the ratings attach to the conversation)."""
    now = timezone.now()
    dialogue = header.unit == Unit.DIALOGUE
    experiment = _create_with_slug(
        Experiment, slug=None, text=corpus.slug, title=f"{corpus.slug} human judgments", owner=owner,
        is_benchmark=True,
        description=f"Imported from {corpus.source_name} ({corpus.source_format}). Each annotator position is "
                    "one rater; positions are not the same people across items.",
    )
    positions = max(len(s) for _, _, scores in scored for s in scores.values())
    points = int(min(11, max(2, max(high - low + 1 for low, high in header.scales.values()))))
    study = _create_with_slug(
        Study, slug=None, text=corpus.slug, experiment=experiment, title=f"{corpus.slug} (imported)",
        design=Design.LIKERT, design_config=designs.design_config_clean(Design.LIKERT, {"points": points}),
        unit=Unit.DIALOGUE if dialogue else Unit.RESPONSE,
        raters_per_item=positions, items_per_assignment=len(scored), status=Study.Status.CLOSED,
        platform=Study.Platform.BENCHMARK, published_at=now, closed_at=now,
        instructions="Imported human judgments (read-only benchmark).",
    )
    criteria = Criterion.objects.bulk_create([
        Criterion(study=study, name=name, question=f"{name.replace('-', ' ')} (as annotated in the source)",
                  position=i, scale_min=low, scale_max=high)
        for i, (name, (low, high)) in enumerate(header.scales.items())
    ])
    criterion_ids = {c.name: c.pk for c in criteria}
    items = StudyItem.objects.bulk_create(
        [StudyItem(study=study, conversation_id=cid, position=i) for i, (cid, _, _) in enumerate(scored)],
        batch_size=2000,
    )
    if not dialogue:
        StudyItemResponse.objects.bulk_create(
            [StudyItemResponse(item=item, response_id=rid, position=0)
             for item, (_, rid, _) in zip(items, scored, strict=True)],
            batch_size=2000,
        )
    raters = [rater_get_or_create(platform=Study.Platform.BENCHMARK, external_id=f"{corpus.slug}:annotator-{j + 1}")
              for j in range(positions)]
    assignments = Assignment.objects.bulk_create([
        Assignment(study=study, rater=rater, experiment=experiment, status=Assignment.Status.SUBMITTED, seed=0,
                   started_at=now, submitted_at=now)
        for rater in raters
    ])
    slots, ratings = [], []
    for item, (conversation_id, response_id, scores) in zip(items, scored, strict=True):
        target = {"conversation_id": conversation_id} if dialogue else {"response_id": response_id}
        for j, assignment in enumerate(assignments):
            given = [(name, s[j]) for name, s in scores.items() if j < len(s) and s[j] is not None]
            if not given:
                continue
            slots.append(AssignmentItem(assignment=assignment, item=item, position=item.position,
                                        response_order=[conversation_id if dialogue else response_id], answered_at=now))
            ratings += [Rating(assignment=assignment, item=item, criterion_id=criterion_ids[name], value=value, **target)
                        for name, value in given]
    AssignmentItem.objects.bulk_create(slots, batch_size=2000)
    Rating.objects.bulk_create(ratings, batch_size=2000)
    return study, len(ratings)


# --- import jobs (large uploads, run by a worker) ------------------------------------------------

def import_job_create(*, owner, path: str, source_name: str, source_format: str, corpus_slug: str,
                      systems: Sequence[str] = ()) -> ImportJob:
    job = ImportJob.objects.create(owner=owner, path=path, source_name=source_name, source_format=source_format,
                                   corpus_slug=corpus_slug, systems=list(systems))
    from studies.tasks import import_job_run  # late: tasks import services

    transaction.on_commit(lambda: import_job_run.delay(job.pk))
    return job


def import_job_run(*, job: ImportJob, resume: bool = False) -> ImportJob:
    """Run a queued import; its outcome (counts or the problems) is recorded on the job row.

    Every outcome ends the job: done, failed with the problems, or failed with a message on an
    unexpected error (never left ``running``); the uploaded file is deleted either way. ``resume``
    (a task redelivered after its worker died) also takes a job left ``running``: the import is one
    transaction, so nothing of the dead attempt was kept."""
    claimable = [ImportJob.Status.QUEUED, ImportJob.Status.RUNNING] if resume else [ImportJob.Status.QUEUED]
    claimed = ImportJob.objects.filter(pk=job.pk, status__in=claimable).update(status=ImportJob.Status.RUNNING)
    job.refresh_from_db()
    if not claimed:
        return job
    try:
        with open(job.path, "rb") as stream:
            summary = dialogues_import(stream=stream, source_name=job.source_name, source_format=job.source_format,
                                       corpus_slug=job.corpus_slug, owner=job.owner, systems=job.systems)
        job.status, job.counts, job.corpus = ImportJob.Status.DONE, summary.as_dict(), summary.corpus
    except ImportFailed as failure:
        job.status, job.message = ImportJob.Status.FAILED, "\n".join(str(p) for p in failure.problems)
    except OSError as error:
        job.status, job.message = ImportJob.Status.FAILED, f"cannot read the uploaded file: {error.strerror}"
    except Exception as error:  # noqa: BLE001 - any other failure must still end the job with a message
        logger.exception("import job %s failed unexpectedly", job.pk)
        job.status = ImportJob.Status.FAILED
        job.message = (f"the import stopped on an unexpected error ({type(error).__name__}); nothing was kept. "
                       f"Tell the administrators the job number ({job.pk}).")
    finally:
        _upload_delete(job.path)
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "counts", "corpus", "message", "finished_at"])
    return job


def _upload_delete(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        logger.warning("could not delete the import upload %s", path)
