"""The researcher's workflow after ``study_create``: edit, duplicate, delete (drafts), re-open,
pause and resume a study, and share an experiment with collaborators.

What may change when: a study's *structure* (design, design configuration, criteria) is what every
rating was given under, so it changes only while the study is a draft that no rater has started;
otherwise a new study (``study_duplicate``) is the way to change it. Its *text and limits*
(title, instructions, consent text, questionnaire, raters per item, items per assignment, reward,
estimated duration, time limit, deadline) may change at any time: they touch only raters to come.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import ProtectedError, Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.text import slugify

from studies.authoring import services as authoring
from studies.designs import DESIGNS, design_for, unit_for
from studies.designs.kinds import criterion_kind_clean
from studies.errors import StudyStateError
from studies.models import (
    Criterion,
    Experiment,
    Study,
    StudyItem,
    StudyItemConversation,
    StudyItemResponse,
    StudyItemSystem,
)
from studies.onboarding import services as onboarding
from studies.rating import allocation
from studies.slugs import unique_slug

STRUCTURE_FIELDS = ("design", "design_config", "criteria", "platform")
TEXT_FIELDS = ("title", "instructions", "consent_text", "questionnaire", "raters_per_item", "items_per_assignment",
               "reward", "estimated_minutes", "language", "language_from_browser")
RATER_SETTING_FIELDS = ("time_limit_minutes", "closes_at")
EDITABLE_FIELDS = (*STRUCTURE_FIELDS, *TEXT_FIELDS, *RATER_SETTING_FIELDS)
REWARD_MAX = Decimal("10000")
QUESTION_KINDS = ("yes_no", "choice", "text")  # what studies.rating.questionnaire.questionnaire_clean reads


def structure_lock_reason(study: Study) -> str | None:
    """Why the design, its settings and the criteria cannot change now, or None when they can."""
    if study.status != Study.Status.DRAFT:
        return (f"the study is {study.get_status_display().lower()}: its design and criteria stay as they were so "
                f"that every rating is given under the same settings (duplicate it to change them)")
    started = study.assignments.count()
    if started:
        return (f"{started} rater(s) have started: changing the design or criteria would mix ratings given "
                f"under different settings (duplicate the study to change them)")
    return None


def _criteria_specs(raw: Sequence[Mapping[str, Any] | str], errors: dict[str, Any], *,
                    takes_kinds: bool = True, level: str | None = None) -> list[dict[str, Any]]:
    specs = [{"name": c} if isinstance(c, str) else dict(c) for c in raw]
    names = [slugify(str(c.get("name", ""))) for c in specs]
    if not specs:
        errors["criteria"] = "a study needs at least one criterion"
    elif not all(names):
        errors["criteria"] = "every criterion needs a name"
    elif len(set(names)) != len(names):
        errors["criteria"] = "criterion names must be different"
    cleaned = []
    for i, (spec, name) in enumerate(zip(specs, names, strict=True)):
        settings, problems = criterion_kind_clean(spec, takes_kinds=takes_kinds, prefix=f"criteria[{i}]", level=level)
        errors.update(problems)
        cleaned.append({**spec, "name": name, **settings})
    return cleaned


def _criteria_replace(study: Study, specs: list[dict[str, Any]]) -> None:
    """Keep criteria by name (their ids and any check rules stay), add new ones, drop missing ones."""
    defaults = {c["name"]: c for c in authoring.DEFAULT_CRITERIA}
    existing = {c.name: c for c in study.criteria.all()}
    study.criteria.exclude(name__in=[s["name"] for s in specs]).delete()
    for position, spec in enumerate(specs):
        name = spec["name"]
        question = (spec.get("question") or "").strip() or defaults.get(name, {}).get("question") \
            or f"How good is the response's {name}?"
        help_text = (spec.get("help_text") or "").strip() or defaults.get(name, {}).get("help_text", "")
        criterion = existing.get(name) or Criterion(study=study, name=name)
        criterion.question, criterion.help_text, criterion.position = question[:300], help_text, position
        criterion.kind, criterion.options = spec.get("kind") or "scale", spec.get("options") or {}
        criterion.rationale = spec.get("rationale") or ""
        criterion.save()


def _positive_int(value: Any, field: str, errors: dict[str, Any], *, high: int = 100_000) -> int | None:
    if isinstance(value, bool):
        value = None
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        errors[field] = f"must be a whole number from 1 to {high}"
        return None
    if not 1 <= number <= high:
        errors[field] = f"must be a whole number from 1 to {high}"
        return None
    return number


def reward_clean(value: Any) -> Decimal | None:
    """A reward per assignment: blank -> None, else a non-negative amount with at most 2 decimals."""
    if value is None or str(value).strip() == "":
        return None
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise ValidationError({"reward": "must be an amount such as 2.50"}) from None
    if not amount.is_finite() or amount < 0 or amount > REWARD_MAX:
        raise ValidationError({"reward": f"must be an amount from 0 to {REWARD_MAX}"})
    if amount != amount.quantize(Decimal("0.01")):
        raise ValidationError({"reward": "has at most two decimals (cents)"})
    return amount.quantize(Decimal("0.01"))


@transaction.atomic
def study_update(*, study: Study, values: Mapping[str, Any]) -> tuple[Study, list[str]]:
    """Change the settings named in ``values`` (any of EDITABLE_FIELDS; others are refused). Returns
    the study and notes for the researcher (e.g. items removed after a design change).

    Structure (design, design_config, criteria) changes only while ``structure_lock_reason`` is None;
    a design change drops the built items (they were chosen for the old design) but keeps check items
    only when the design stays; so does a change of the settings the items were drawn under
    (the design's ``config_change``: e.g. bws_tuples' tuple size, factor, tries and seed, pairwise's
    pairs per conversation, a new tuple size in a dialogue BWS study, whose tuples of whole dialogues
    were cut to the old size; a response BWS item's size follows its systems instead, so a size its
    items do not show is refused). Validation names every bad field and nothing is written then."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    errors: dict[str, Any] = {}
    unknown = sorted(set(values) - set(EDITABLE_FIELDS))
    if unknown:
        errors["fields"] = f"cannot change {', '.join(unknown)} here"
    changes: dict[str, Any] = {}
    structure = {k: values[k] for k in STRUCTURE_FIELDS if k in values}
    criteria_specs, rebuild = _structure_clean(study, structure, errors, changes) if structure else (None, False)
    _text_and_limits_clean(values, errors, changes)
    rater_settings = _rater_settings_changed(study, values)
    if errors:
        raise ValidationError(errors)
    if rater_settings:
        authoring.study_rater_settings_set(study=study, values=rater_settings)  # raises naming its field
        study.refresh_from_db(fields=["platform_config"])
    notes = _stale_items_drop(study, changes, rebuild)
    for field, value in changes.items():
        setattr(study, field, value)
    if changes:
        study.save(update_fields=list(changes))
    if criteria_specs is not None:
        _criteria_replace(study, criteria_specs)
    return study, notes


def _structure_clean(study: Study, structure: Mapping[str, Any], errors: dict[str, Any], changes: dict[str, Any]
                     ) -> tuple[list[dict[str, Any]] | None, bool]:
    """The design, its settings, the criteria and the platform asked for (``structure``): refused while
    ``structure_lock_reason`` holds unless they are what the study has; else checked into ``errors`` and
    ``changes``. Returns (the criteria to store or None, whether the built items go)."""
    design = structure.get("design", study.design)
    same = (design == study.design
            and ("design_config" not in structure
                 or _config_or_none(design, structure["design_config"]) == study.design_config)
            and ("criteria" not in structure or _criteria_unchanged(study, structure["criteria"]))
            and structure.get("platform", study.platform) == study.platform)
    lock = None if same else structure_lock_reason(study)
    if lock:
        errors["design"] = f"cannot change the design, criteria or platform: {lock}"
    if lock or same:
        return None, False
    rebuild = False  # the settings the items were drawn under changed: they go
    if "design" in structure or "design_config" in structure:
        rebuild = _design_clean(study, design, structure, errors, changes)
    criteria_specs = None
    if "criteria" in structure:
        takes_kinds = design in DESIGNS and design_for(design).takes_kinds
        criteria_specs = _criteria_specs(structure["criteria"], errors, takes_kinds=takes_kinds,
                                         level=unit_for(study).level)
    if "platform" in structure:
        if structure["platform"] not in Study.Platform.values or structure["platform"] == Study.Platform.BENCHMARK:
            errors["platform"] = f"unknown platform {structure['platform']!r}"
        else:
            changes["platform"] = structure["platform"]
    return criteria_specs, rebuild


def _design_clean(study: Study, design: str, structure: Mapping[str, Any], errors: dict[str, Any],
                  changes: dict[str, Any]) -> bool:
    """A new design or design configuration, checked by the design itself (its settings, the study's unit,
    a change of what the items were drawn under). Returns whether the built items go (``config_change``)."""
    try:
        chosen = design_for(design)
        config = chosen.config_clean(structure.get(
            "design_config", study.design_config if design == study.design else None))
    except ValidationError as error:
        errors.update(error.message_dict)
        return False
    rebuild = False
    refused = chosen.unit_problem(unit_for(study))
    if refused:  # the unit is fixed at creation; a design it cannot run is refused as there
        errors["design"] = refused
    if design == study.design:  # e.g. new tuples or pairs, or a BWS size its items do not show
        problems, rebuild = chosen.config_change(study, config)
        errors.update(problems)
    if (not chosen.takes_kinds and "criteria" not in structure
            and study.criteria.exclude(kind="scale").exists()):  # labels, text: Rating rows only
        errors["design"] = ("this design answers every criterion on its own scale: first make the "
                            "labelled or free-text criteria plain ones")
    changes["design"], changes["design_config"] = design, config
    return rebuild


def _text_and_limits_clean(values: Mapping[str, Any], errors: dict[str, Any], changes: dict[str, Any]) -> None:
    """The study's text and limits (title, instructions, consent text, raters per item, items per assignment,
    estimated minutes, reward, questionnaire): what may change at any time, checked into ``errors`` and
    ``changes``."""
    for field in ("title", "instructions", "consent_text"):
        if field in values:
            text = str(values[field] or "").strip() if field == "title" else str(values[field] or "")
            if field == "title" and not text:
                errors["title"] = "a study needs a title"
            elif field == "title" and len(text) > 200:
                errors["title"] = "must be at most 200 characters"
            else:
                changes[field] = text
    if "language" in values:  # the rater pages' own words (studies.rating.language)
        codes = [code for code, _name in settings.LANGUAGES]
        if values["language"] in codes:
            changes["language"] = values["language"]
        else:
            errors["language"] = f"must be one of {', '.join(codes)}"
    if "language_from_browser" in values:
        changes["language_from_browser"] = bool(values["language_from_browser"])
    for field in ("raters_per_item", "items_per_assignment"):
        if field in values:
            number = _positive_int(values[field], field, errors)
            if number is not None:
                changes[field] = number
    if "estimated_minutes" in values:
        raw = values["estimated_minutes"]
        changes["estimated_minutes"] = None if raw in (None, "") else _positive_int(
            raw, "estimated_minutes", errors, high=authoring.TIME_LIMIT_MAX_MINUTES)
    if "reward" in values:
        try:
            changes["reward"] = reward_clean(values["reward"])
        except ValidationError as error:
            errors.update(error.message_dict)
    if "questionnaire" in values:
        problem = questionnaire_problem(values["questionnaire"])
        if problem:
            errors["questionnaire"] = problem
        else:
            changes["questionnaire"] = list(values["questionnaire"])


def _rater_settings_changed(study: Study, values: Mapping[str, Any]) -> dict[str, Any]:
    """The rater settings in ``values`` (time limit, deadline), less a deadline sent back unchanged."""
    rater_settings = {k: values[k] for k in RATER_SETTING_FIELDS if k in values}
    if "closes_at" in rater_settings and _same_minute(allocation.study_closes_at(study), rater_settings["closes_at"]):
        # The deadline sent back unchanged (an edit form, to the minute): not a new deadline, even if
        # it has passed, so the study's text can still be edited after it.
        del rater_settings["closes_at"]
    return rater_settings


def _stale_items_drop(study: Study, changes: Mapping[str, Any], rebuild: bool) -> list[str]:
    """Delete the built items when the design changed or the settings they were drawn under did; the notes say so."""
    if changes.get("design", study.design) != study.design:
        removed, _ = StudyItem.objects.filter(study=study).delete()
        if removed:
            return ["The design changed, so the items were removed: build them again for the new design."]
    elif rebuild:
        removed, _ = StudyItem.objects.filter(study=study).delete()
        if removed:
            return ["The settings that shape the items (tuple size, pairs per conversation, ...) changed, so the "
                    "items were removed: build them again."]
    return []


def _criteria_unchanged(study: Study, raw: Sequence[Mapping[str, Any] | str]) -> bool:
    """True when ``raw`` names the study's criteria in order with their wording (a blank question or
    help text means "as it is"): what a form that shows the locked criteria sends back."""
    current = list(study.criteria.values_list("name", "question", "help_text", "kind", "options", "rationale"))
    specs = _criteria_specs(raw, {})
    return len(specs) == len(current) and all(
        spec["name"] == name
        and (spec.get("question") or "").strip() in ("", question)
        and (spec.get("help_text") or "").strip() in ("", help_text)
        and (spec["kind"], spec["options"], spec["rationale"]) == (kind, options, rationale)
        for spec, (name, question, help_text, kind, options, rationale) in zip(specs, current, strict=False))


def _same_minute(current, raw: Any) -> bool:
    if current is None or not raw:
        return False
    try:
        sent = parse_datetime(str(raw).strip())
    except ValueError:
        return False
    if sent is None:
        return False
    sent = sent if timezone.is_aware(sent) else timezone.make_aware(sent)
    return abs((sent - current).total_seconds()) < 60 and sent.replace(second=0, microsecond=0) == \
        current.replace(second=0, microsecond=0)


def _config_or_none(design: str, config: Any) -> dict | None:
    try:
        return design_for(design).config_clean(config)
    except ValidationError:
        return None


def questionnaire_problem(value: Any) -> str | None:
    """Why ``value`` is not a questionnaire (a list of questions as ``models.default_questionnaire``)."""
    if not isinstance(value, list):
        return "must be a list of questions"
    names = set()
    for i, question in enumerate(value, start=1):
        if not isinstance(question, Mapping):
            return f"question {i}: must be an object with name, kind and question"
        name, kind = question.get("name"), question.get("kind")
        if not isinstance(name, str) or not name or slugify(name).replace("-", "_") != name:
            return f"question {i}: name must be lower-case letters, digits and _ (got {name!r})"
        if name in names:
            return f"question {i}: the name {name!r} is used twice"
        names.add(name)
        if kind not in QUESTION_KINDS:
            return f"question {i} ({name}): kind must be one of {', '.join(QUESTION_KINDS)}"
        if not isinstance(question.get("question"), str) or not question["question"].strip():
            return f"question {i} ({name}): needs the question text"
        if kind == "choice":
            choices = question.get("choices")
            if not isinstance(choices, list) or len(choices) < 2 or not all(isinstance(c, str) and c for c in choices):
                return f"question {i} ({name}): a choice question needs at least two choices"
    return None


@transaction.atomic
def study_duplicate(*, study: Study, title: str | None = None, experiment: Experiment | None = None) -> Study:
    """A new draft copy of the study: every setting (its unit of judgement too), its criteria and its
    items (check items with their rules; a dialogue item's anchor and ranked dialogues), no raters. The copy has no deadline (the original's may have passed) and is not
    paused. ``experiment`` defaults to the study's own (a new condition beside it)."""
    if study.platform == Study.Platform.BENCHMARK:
        raise StudyStateError("an imported benchmark takes no raters; it cannot be duplicated")
    target = experiment or study.experiment
    config = {k: v for k, v in (study.platform_config or {}).items() if k != "closes_at"}
    # named after the original (``demo-labels`` -> ``demo-labels-2``), not after its design, which a labels
    # study shares with every Likert one (``demo-likert-2``)
    slug = unique_slug(Study, re.sub(r"-\d+$", "", study.slug)) if target.pk == study.experiment_id else None
    copy = authoring.study_create(
        experiment=target, title=(title or f"{study.title} (copy)")[:200], design=study.design, slug=slug,
        design_config=study.design_config,
        criteria=[{"name": c.name, "question": c.question, "help_text": c.help_text, "kind": c.kind,
                   "options": c.options, "rationale": c.rationale} for c in study.criteria.all()],
        raters_per_item=study.raters_per_item, items_per_assignment=study.items_per_assignment,
        instructions=study.instructions, platform=study.platform, platform_config=config, unit=study.unit,
        unit_config=study.unit_config,
    )
    copy.questionnaire, copy.live_config, copy.checks_config = study.questionnaire, study.live_config, study.checks_config
    copy.consent_text, copy.reward, copy.estimated_minutes = study.consent_text, study.reward, study.estimated_minutes
    copy.item_draw = study.item_draw  # the same items: the same draw (studies.authoring.item_draws)
    copy.language, copy.language_from_browser = study.language, study.language_from_browser
    copy.save(update_fields=["questionnaire", "live_config", "checks_config", "consent_text", "reward",
                             "estimated_minutes", "item_draw", "language", "language_from_browser"])
    # Criterion scale overrides (imported benchmarks) travel with the criteria.
    scales = {c.name: (c.scale_min, c.scale_max) for c in study.criteria.all()}
    for criterion in copy.criteria.all():
        criterion.scale_min, criterion.scale_max = scales.get(criterion.name, (None, None))
        criterion.save(update_fields=["scale_min", "scale_max"])
    originals = list(study.items.order_by("position"))
    items = StudyItem.objects.bulk_create([
        StudyItem(study=copy, conversation_id=i.conversation_id, position=i.position,
                  reference_response_id=i.reference_response_id, reference_value=i.reference_value,
                  reference_conversation_id=i.reference_conversation_id,
                  check_kind=i.check_kind, check_rules=i.check_rules)
        for i in originals
    ])
    new_id = {old.pk: new.pk for old, new in zip(originals, items, strict=True)}
    StudyItemResponse.objects.bulk_create([
        StudyItemResponse(item_id=new_id[link.item_id], response_id=link.response_id, position=link.position)
        for link in StudyItemResponse.objects.filter(item__study=study).order_by("item_id", "position")
    ], batch_size=2000)
    onboarding.practice_copy(source=study, target=copy)  # practice items and pass mark (studies.onboarding)
    # A dialogue-unit BWS item ranks several whole dialogues (StudyItemConversation), not responses.
    StudyItemConversation.objects.bulk_create([
        StudyItemConversation(item_id=new_id[link.item_id], conversation_id=link.conversation_id, position=link.position,
                              speaker=link.speaker)
        for link in StudyItemConversation.objects.filter(item__study=study).order_by("item_id", "position")
    ], batch_size=2000)
    # A chat item names the system(s) raters chat with (StudyItemSystem).
    StudyItemSystem.objects.bulk_create([
        StudyItemSystem(item_id=new_id[link.item_id], system_id=link.system_id, position=link.position)
        for link in StudyItemSystem.objects.filter(item__study=study).order_by("item_id", "position")
    ], batch_size=2000)
    return copy


@transaction.atomic
def study_delete(*, study: Study) -> str:
    """Delete a draft study that no rater has started (items, criteria, invites go with it); returns
    its title. Anything else is refused: a published or closed study holds ratings and their history."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.status != Study.Status.DRAFT:
        raise StudyStateError(f"cannot delete: the study is {study.status}; only drafts can be deleted "
                                       f"(close it instead)")
    if study.assignments.exists():
        raise StudyStateError("cannot delete: raters have started it")
    title = study.title
    try:
        study.delete()
    except ProtectedError:
        raise StudyStateError("cannot delete: other records depend on it") from None
    return title


@transaction.atomic
def study_reopen(*, study: Study) -> Study:
    """closed -> published again, for more raters. Refused (with what to change) when it would close
    again at once: its deadline has passed, or every item has its raters and it closes when complete."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.status != Study.Status.CLOSED:
        raise StudyStateError(f"cannot re-open: the study is {study.status}, not closed")
    if study.platform == Study.Platform.BENCHMARK:
        raise StudyStateError("cannot re-open: an imported benchmark takes no raters")
    closes_at = allocation.study_closes_at(study)
    if closes_at is not None and closes_at <= timezone.now():
        raise StudyStateError("cannot re-open: its deadline has passed; set a later deadline (or none) first")
    study.status = Study.Status.PUBLISHED
    if allocation.study_close_reason(study) is not None:
        raise StudyStateError("cannot re-open: every item already has its raters; raise the raters per "
                                       "item or turn off closing when complete first")
    study.closed_at, study.paused_at = None, None
    study.save(update_fields=["status", "closed_at", "paused_at"])
    return study


@transaction.atomic
def study_pause(*, study: Study) -> Study:
    """Stop taking new raters (assignments in progress may finish); ``study_resume`` undoes it."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.status != Study.Status.PUBLISHED:
        raise StudyStateError(f"cannot pause: the study is {study.status}, not published")
    if study.paused_at is None:
        study.paused_at = timezone.now()
        study.save(update_fields=["paused_at"])
    return study


@transaction.atomic
def study_resume(*, study: Study) -> Study:
    """Take new raters again after ``study_pause`` (idempotent)."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.status != Study.Status.PUBLISHED:
        raise StudyStateError(f"cannot resume: the study is {study.status}, not published")
    if study.paused_at is not None:
        study.paused_at = None
        study.save(update_fields=["paused_at"])
    return study


# --- collaborators ----------------------------------------------------------------------------------

def may_manage_collaborators(user, experiment: Experiment) -> bool:
    """The experiment's owner, or staff (collaborators may work on it but not share it further)."""
    return bool(user.is_authenticated and (user.is_staff or experiment.owner_id == user.pk))


def _user_named(identifier: str):
    text = (identifier or "").strip()
    if not text:
        raise ValidationError({"user": "give a username or an e-mail address"})
    users = get_user_model().objects.filter(Q(username__iexact=text) | Q(email__iexact=text), is_active=True)
    found = list(users[:2])
    if len(found) != 1:
        # The same words whether nobody or two accounts match: no probing for who has an account.
        raise ValidationError({"user": f"no single active account has the username or e-mail {text!r}"})
    return found[0]


@transaction.atomic
def experiment_collaborator_add(*, experiment: Experiment, by, identifier: str):
    """Give the account named by username or e-mail access to the experiment (every condition: its
    pages, reports, exports with raw ids). Only the owner or staff may; returns the user."""
    if not may_manage_collaborators(by, experiment):
        raise StudyStateError("only the experiment's owner can share it")
    user = _user_named(identifier)
    if user.pk == experiment.owner_id:
        raise ValidationError({"user": f"{user.get_username()} owns this experiment already"})
    experiment.collaborators.add(user)
    return user


@transaction.atomic
def experiment_collaborator_remove(*, experiment: Experiment, by, identifier: str):
    """Take the account's access away (idempotent); only the owner or staff may."""
    if not may_manage_collaborators(by, experiment):
        raise StudyStateError("only the experiment's owner can change who it is shared with")
    user = _user_named(identifier)
    experiment.collaborators.remove(user)
    return user
