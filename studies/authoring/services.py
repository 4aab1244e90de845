"""Writes of the researcher's set-up: experiments, studies, their items and reference values, publish and close, rater settings.\n\nNamed <noun>_<verb>, keyword-only, one transaction each; views, API views, commands and tasks call these."""
from __future__ import annotations

import logging
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.text import slugify

from studies import bws_tuples, designs, dialogue_studies, pairwise_services
from studies.authoring import allocation, item_draws
from studies.errors import StudyStateError
from studies.models import (
    Corpus,
    Criterion,
    Design,
    Experiment,
    Response,
    Study,
    StudyItem,
    StudyItemResponse,
    Unit,
)
from studies.slugs import _create_with_slug, _slug_not_available

logger = logging.getLogger(__name__)


DEFAULT_CRITERIA = (
    {"name": "readability", "question": "How readable is this response?",
     "help_text": "Is it fluent, grammatical and easy to understand, whatever the conversation?"},
    {"name": "coherence", "question": "How coherent is this response with the conversation so far?",
     "help_text": "Does it follow on from what was said, staying on topic and making sense as a reply?"},
)


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
    study.items.filter(check_kind="").delete()  # check items (studies.rating.checks) stay
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
