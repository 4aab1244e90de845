"""How a rater enters a study or an experiment: the rater record, a new or resumed assignment, the experiment link's choice of condition, and every refusal (``AssignmentRefused``)."""
from __future__ import annotations

import math
import random
import secrets
from collections.abc import Mapping

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from studies.designs import design_for, unit_for
from studies.errors import AssignmentRefused, PracticeRequired, StudyStateError
from studies.models import (
    Assignment,
    AssignmentItem,
    Experiment,
    Rater,
    RaterBlock,
    Study,
)
from studies.rating import allocation, checks, platforms, practice_gate, review, selectors


def rater_get_or_create(*, platform: str, external_id: str) -> Rater:
    external_id = platforms.platform_id(platform, external_id)
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
                raise AssignmentRefused(gettext("too many requests arrived at once; please reload the page"),
                                        reason=AssignmentRefused.BUSY) from None
    raise AssertionError("unreachable")


def rater_blocked_for(rater: Rater, study: Study) -> bool:
    """Blocked site-wide (``Rater.blocked``), or by the researcher who owns the study's experiment
    (``RaterBlock``, ``review.rater_block_set``); another researcher's block does not count here."""
    return rater.blocked or RaterBlock.objects.filter(
        rater=rater, lifted_at__isnull=True, owner__owned_experiments__pk=study.experiment_id).exists()


def _rater_for_entry(platform: str, external_id: str) -> Rater | None:
    """The rater with this (normalised) id; else one stored before ids were normalised (typed in
    another case), so that respelling an id never makes a new rater."""
    raters = Rater.objects.filter(platform=platform)
    return raters.filter(external_id=external_id).first() or raters.filter(external_id__iexact=external_id) \
        .order_by("pk").first()


def _assignment_create(study: Study, rater: Rater, *, acceptance_id: str = "", platform_data: Mapping | None = None,
                       seed: int | None = None) -> Assignment:
    """Choose the items and create the assignment; the caller holds the study row lock and has
    checked the rater. Raises AssignmentRefused (nothing written) when the study cannot take them."""
    if study.status != Study.Status.PUBLISHED:
        raise AssignmentRefused(gettext("this study is not open") if study.status == Study.Status.DRAFT else gettext("this study has closed"),
                                reason=AssignmentRefused.CLOSED)
    closes_at = allocation.study_closes_at(study)
    if closes_at is not None and closes_at <= timezone.now():
        raise AssignmentRefused(gettext("this study has closed"), reason=AssignmentRefused.CLOSED)
    if study.paused_at is not None:  # studies.authoring.editing.study_pause: no new raters; started ones go on
        raise AssignmentRefused(gettext("this study is paused for now; please try again later"), reason=AssignmentRefused.CLOSED)
    # Assignments past their time limit give their items back before the study is judged full.
    if review.time_limit_minutes(study) > 0:
        review.assignments_expire_stale(studies=[study])
    taken = selectors.study_item_takes(study)
    item_ids = list(study.items.filter(check_kind="").values_list("id", flat=True))
    rng = random.Random(seed if seed is not None else secrets.randbits(62))
    open_items = [i for i in item_ids if taken.get(i, 0) < study.raters_per_item]
    if not open_items:
        raise AssignmentRefused(gettext("this study has all the ratings it needs"), reason=AssignmentRefused.FULL)
    rng.shuffle(open_items)
    open_items.sort(key=lambda i: taken.get(i, 0))  # stable: random among equally rated items
    chosen = open_items[: study.items_per_assignment]
    rng.shuffle(chosen)
    chosen = checks.checks_place(study, chosen, rng)
    assignment_seed = rng.randrange(2**62)
    # Last of the refusals, so nobody practises for a study that is full or closed; a rater who has
    # not passed the practice (studies.onboarding) gets no slot and no rater row.
    if practice_gate.practice_needed(study, rater.platform, rater.external_id):
        raise PracticeRequired(study)
    if rater.pk is None:
        rater.save(force_insert=True)  # only now, once every check has passed (no orphan raters)
    assignment = Assignment.objects.create(
        study=study, rater=rater, experiment_id=study.experiment_id, seed=assignment_seed,
        acceptance_id=acceptance_id, platform_data=dict(platform_data or {}), started_at=timezone.now(),
    )
    shown = unit_for(study).item_targets(chosen)  # the responses, or the conversations a dialogue study rates
    order_rng = random.Random(assignment_seed)
    # A design may place an item's targets itself (pairwise: sides balanced per rater and per item);
    # the rest are shuffled.
    sides = design_for(study).assignment_orders(study=study, chosen=chosen, shown=shown, rng=order_rng)
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
        # Says nothing of conditions: a rater must not learn that the experiment has others.
        raise AssignmentRefused(gettext("you have already taken part in this study through another link"),
                                reason=AssignmentRefused.OTHER_CONDITION)
    if acceptance_id is not None and existing.acceptance_id != acceptance_id:
        raise AssignmentRefused(gettext("you have already done this study"), reason=AssignmentRefused.ALREADY_DONE)
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
        if rater_blocked_for(rater, locked):
            raise AssignmentRefused(gettext("this worker identity may not take part"), reason=AssignmentRefused.BLOCKED)
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
        if rater_blocked_for(rater, locked):
            raise AssignmentRefused(gettext("this worker identity may not take part"), reason=AssignmentRefused.BLOCKED)
    if acceptance_id:
        holder = Assignment.objects.filter(study=locked, acceptance_id=acceptance_id).select_related("rater").first()
        if holder is not None:
            if (holder.rater.platform, holder.rater.external_id) == (platform, external_id):
                return holder
            raise AssignmentRefused(gettext("this link belongs to another worker's assignment"),
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
    nothing. Ids are compared normalised (``platforms.platform_id``), so a participant screened out
    (or done) cannot come back as "new" by respelling their id's case or digits. Races (the same new worker in two conditions at once, a double click on the last slot)
    retry and then resume or refuse; they never surface as IntegrityError."""
    external_id = platforms.platform_id(platform, external_id)
    acceptance_id = platforms.platform_id(platform, acceptance_id)
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
        raise AssignmentRefused(gettext("this experiment is not open"), reason=AssignmentRefused.CLOSED)
    if problem := allocation.experiment_platform_problem(conditions):
        raise StudyStateError(problem)
    if conditions[0].platform != platform:
        raise AssignmentRefused(gettext("this experiment takes raters from %(platform)s")
                                % {"platform": conditions[0].get_platform_display()},
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
    raise AssignmentRefused(gettext("this experiment has all the ratings it needs"), reason=AssignmentRefused.FULL) \
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
    external_id = platforms.platform_id(platform, external_id)
    acceptance_id = platforms.platform_id(platform, acceptance_id)
    if not external_id:
        raise ValidationError({"external_id": "a rater needs a platform identity"})
    return _retrying(lambda: _enter_experiment(experiment, platform=platform, external_id=external_id,
                                               acceptance_id=acceptance_id, platform_data=platform_data, seed=seed))
