"""Writes of the researcher's set-up: experiments, studies, their items and reference values, publish and close, rater settings.\n\nNamed <noun>_<verb>, keyword-only, one transaction each; views, API views, commands and tasks call these."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.text import slugify

from studies.authoring import checks, item_draws
from studies.authoring.gold_pool import shadowed_items_drop
from studies.designs import design_for, unit_for
from studies.designs.common import ItemSpec
from studies.designs.kinds import criterion_kind_clean
from studies.designs.units import unit_problem
from studies.errors import StudyStateError
from studies.models import (
    DEFAULT_ITEMS_PER_ASSIGNMENT,
    DEFAULT_RATERS_PER_ITEM,
    Corpus,
    Criterion,
    Experiment,
    Study,
    StudyItem,
    Unit,
)
from studies.slugs import _create_with_slug, _slug_not_available

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


MAX_PLACES = 100_000  # raters per item, items per rater: far above any study, far below a database integer


@transaction.atomic
def study_create(*, experiment: Experiment, title: str, design: str, design_config: Mapping | None = None,
                 criteria: Sequence[Mapping[str, Any] | str] | None = None,
                 raters_per_item: int = DEFAULT_RATERS_PER_ITEM, items_per_assignment: int = DEFAULT_ITEMS_PER_ASSIGNMENT,
                 instructions: str = "", platform: str = Study.Platform.INVITE,
                 platform_config: Mapping | None = None, slug: str | None = None,
                 unit: str = Unit.RESPONSE, unit_config: Mapping | None = None) -> Study:
    """Create a draft study (one condition). The design configuration is validated and completed with
    its defaults (``design_for(design).config_clean``); criteria default to the design's and unit's
    (the seed study's readability and coherence, worded for the unit). ``unit``: what a rating
    judges, a response, a whole dialogue or a chat the rater has (``studies.designs.units``), with its
    settings ``unit_config`` (a chat's turns and limits), cleaned by the unit."""
    errors: dict[str, Any] = {}
    judged = None
    unit_settings: dict[str, Any] = {}
    if problem := unit_problem(unit):
        errors["unit"] = [problem]
    else:
        judged = unit_for(unit)
    try:
        chosen = design_for(design)
        config = chosen.config_clean(design_config)
    except ValidationError as error:
        errors.update(error.message_dict)
    else:
        if judged is not None and (refusal := chosen.unit_problem(judged)):
            errors["unit"] = [refusal]
        elif judged is not None:
            try:
                unit_settings = judged.config_clean(unit_config, design=chosen)
            except ValidationError as error:
                errors.update(error.message_dict)
    for name, given in (("raters_per_item", raters_per_item), ("items_per_assignment", items_per_assignment)):
        if not 1 <= given <= MAX_PLACES:
            errors[name] = [f"must be between 1 and {MAX_PLACES:,}"]
    if platform not in Study.Platform.values:
        errors["platform"] = [f"unknown platform {platform!r}"]
    if slug and Study.objects.filter(slug=slug).exists():
        errors.update(_slug_not_available(slug).message_dict)
    base = chosen.default_criteria(judged) if judged is not None and "design" not in errors else []
    base = base or list(DEFAULT_CRITERIA)
    specs = [{"name": c} if isinstance(c, str) else dict(c) for c in (criteria or base)]
    defaults = {c["name"]: c for c in [*DEFAULT_CRITERIA, *base]}
    names = [slugify(c.get("name", "")) for c in specs]
    if not all(names):
        errors["criteria"] = ["every criterion needs a name"]
    elif len(set(names)) != len(names):
        errors["criteria"] = ["criterion names must be different"]
    takes_kinds = "design" not in errors and chosen.takes_kinds
    kinds = []
    for i, spec in enumerate(specs):  # how each is answered: the scale, labels, free text; a reason or not
        settings, problems = criterion_kind_clean(spec, takes_kinds=takes_kinds, prefix=f"criteria[{i}]",
                                                  level=judged.level if judged is not None else None)
        kinds.append(settings)
        errors.update({k: [v] for k, v in problems.items()})
    if errors:
        raise ValidationError(errors)
    assert judged is not None
    study = _create_with_slug(
        Study, slug=slug, text=f"{experiment.slug}-{design}",
        experiment=experiment, title=title, design=design, design_config=config, unit=unit, unit_config=unit_settings,
        raters_per_item=raters_per_item, items_per_assignment=items_per_assignment,
        instructions=instructions, platform=platform, platform_config=dict(platform_config or {}),
    )
    Criterion.objects.bulk_create([
        Criterion(
            study=study, name=name, position=i,
            question=spec.get("question") or judged.default_question(name)
            or defaults.get(name, {}).get("question") or f"How good is the response's {name}?",
            # built-in help only with the built-in question: a criterion the researcher wrote keeps no help they did not
            help_text=spec.get("help_text") or ("" if spec.get("question") else defaults.get(name, {}).get("help_text", "")),
            **settings,
        )
        for i, (name, spec, settings) in enumerate(zip(names, specs, kinds, strict=True))
    ])
    return study


def _require_status(study: Study, *allowed: str, action: str) -> None:
    if study.status not in allowed:
        raise StudyStateError(f"cannot {action}: the study is {study.status}")


@transaction.atomic
def study_items_build(*, study: Study, corpus: Corpus | None = None, systems: Sequence[str] | None = None,
                      reference_system: str | None = None, limit: int | None = None, seed: int = 0,
                      reference_conversation: str | None = None) -> int:
    """``_items_build``, then the draw is recorded on the study (``item_draws``: all of a corpus's usable
    conversations, or ``limit`` of them drawn at random, which prediction-powered estimates rely on).
    A chat study's items are its ``systems`` (each with an endpoint): no corpus, no draw."""
    count = _items_build(study=study, corpus=corpus, systems=systems, reference_system=reference_system,
                         limit=limit, seed=seed, reference_conversation=reference_conversation)
    if corpus is not None:
        item_draws.study_item_draw_record(study=study, corpus=corpus, limit=limit, seed=seed)
    return count


def _items_build(*, study: Study, corpus: Corpus | None, systems: Sequence[str] | None = None,
                 reference_system: str | None = None, limit: int | None = None, seed: int = 0,
                 reference_conversation: str | None = None) -> int:
    """(Re)build a draft study's items from a corpus, as its design and unit build them
    (``StudyDesign.items_build``; e.g. one item per conversation with a response from every chosen
    system, the reference response as an anchor or judged among them; one per system pair; tuples;
    one per whole dialogue). ``limit`` samples that many conversations (seeded). Returns the number
    of items."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    _require_status(study, Study.Status.DRAFT, action="change items")
    if study.assignments.exists():
        raise StudyStateError("cannot change items: raters have already started")
    spec = ItemSpec(corpus=corpus, systems=systems, reference_system=reference_system,
                    reference_conversation=reference_conversation, limit=limit, seed=seed)
    return design_for(study).items_build(study=study, spec=spec)


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
    """draft -> published, once the study can be rated: it has items and criteria, and its design
    finds nothing missing (``StudyDesign.publish_problems``: every magnitude item has its reference
    value, every BWS item shows tuple_size responses, ...)."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    _require_status(study, Study.Status.DRAFT, action="publish")
    study.shadowed_dropped = shadowed_items_drop(study=study)  # a check or practice item is never also rated
    problems = []
    if not study.items.filter(check_kind="").exists():
        problems.append("it has no items (import dialogues and build the items first)")
    if not study.criteria.exists():
        problems.append("it has no criteria")
    problems += design_for(study).publish_problems(study)
    problems += checks.checks_publish_problems(study)
    if problems:
        raise StudyStateError("cannot publish: " + "; ".join(problems))
    study.status, study.published_at = Study.Status.PUBLISHED, timezone.now()
    study.save(update_fields=["status", "published_at"])
    return study


RATER_SETTINGS = ("completion_code", "screened_out_code", "completion_url", "time_limit_minutes", "closes_at",
                  "close_when_complete", "currency")
_CURRENCY = re.compile(r"^[A-Z]{3}$")


TIME_LIMIT_MAX_MINUTES = 7 * 24 * 60


_CODE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


@transaction.atomic
def study_rater_settings_set(*, study: Study, values: Mapping[str, Any]) -> Study:
    """Set the rater-side keys of ``platform_config``: Prolific's fixed ``completion_code`` and
    optional ``screened_out_code``, ``completion_url`` (https), ``time_limit_minutes`` (1 to one
    week), ``closes_at`` (ISO 8601, in the future), ``currency`` (ISO 4217 code) and ``close_when_complete`` (on unless switched
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
        elif key == "currency":  # what the reward is paid in (Prolific, invitations; MTurk is always USD)
            if not _CURRENCY.match(text.upper()):
                errors[key] = "must be a three-letter currency code such as GBP, USD or EUR"
            elif study.platform == Study.Platform.MTURK and text.upper() != "USD":
                errors[key] = "Mechanical Turk pays rewards in USD: leave it blank or write USD"
            else:
                changes[key] = text.upper()
        elif key == "time_limit_minutes":
            if not (text.isascii() and text.isdigit()) or len(text) > 6 or not 1 <= int(text) <= TIME_LIMIT_MAX_MINUTES:
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
