"""Writes for onboarding: the researcher's practice items and pass mark (draft studies, like check
items), and the rater's practice: an attempt per platform identity and experiment, one answer per
item (stored once), the pass or fail when the last item is answered, and the slot after a pass.

A practice item's expected answer is a list of check rules (``studies.rating.check_rules``: value, range,
ordering; best/worst for BWS; whatever rule kinds the checks learn, e.g. a label or a label set) and
is scored by ``checks.check_passed`` on the values the study's design gives the answers
(``StudyDesign.practice_values``: the same values ``check_answers`` reads from stored ratings), so
practice agrees with gold items by construction. Practice answers are ``PracticeAnswer`` rows only:
no Rating, no Assignment, so a rater who fails holds no slot and no report, export or ICC sees them.
Training raters on examples with feedback before the task follows Mephisto's onboarding tasks and
Potato's training phase."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone
from django.utils.translation import gettext

from studies.designs import design_for, unit_for
from studies.designs.kinds import repeated_fields
from studies.designs.rater_reads import study_criteria
from studies.errors import AssignmentRefused, ConsentRequired, StudyStateError
from studies.models import (
    Assignment,
    Onboarding,
    PracticeAnswer,
    PracticeAttempt,
    PracticeItem,
    Study,
)
from studies.onboarding import selectors
from studies.onboarding.signals import practice_passed
from studies.rating import check_rules, checks, dialogue_checks, entry

MAX_ITEMS = 20
MAX_EXPLANATION = 5000
MAX_RETAKES = 10


def _locked_draft(study: Study, action: str) -> Study:
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.status != Study.Status.DRAFT:
        raise StudyStateError(f"cannot {action}: the study is {study.status} (practice is set while it is a draft)")
    return study


def practice_problem(study: Study, *, from_preview: bool = False) -> str | None:
    """Why this study cannot have practice items (the same designs and units as check items, but a check
    pair of whole conversations has no practice form yet; a chat's practice is a written transcript, never
    one saved from the preview), or None."""
    design = design_for(study)
    if dialogue_checks.written_dialogue_checks(study):  # a dialogue written for it, labelled turn by turn
        return None
    if getattr(design, "check_conversations", 0):
        return ("practice items are not available for comparisons of whole conversations yet; "
                "check pairs are (save your answers as a gold check item, or add one on the checks page)")
    return unit_for(study).practice_refusal(design, from_preview=from_preview) or design.checks_problem()


@transaction.atomic
def practice_item_create(*, study: Study, context: Any, responses: Any, rules: Any, explanation: Any,
                         reference: Any = None, reference_value: Any = None) -> PracticeItem:
    """Add a practice item to a draft study: the conversation (one turn per line), the responses (one
    per line, shown in this order), the expected answer as check rules (JSON list, responses
    1-based), and the explanation the rater reads after answering. Every problem raises
    ValidationError keyed by the field (``rules[0].value``, ``explanation``, ...); nothing is written."""
    study = _locked_draft(study, "add practice items")
    if refusal := practice_problem(study):
        raise ValidationError({"rules": refusal.replace("attention-check items", "practice items")})
    written = dialogue_checks.written_dialogue_checks(study)
    if written:  # the dialogue is the context, its rules name it as response 1
        data, problems = dialogue_checks.dialogue_check_problems(study, kind="gold", context=context, rules=rules)
    else:
        data, problems = check_rules.item_parts_clean(study, context=context, responses=responses, rules=rules,
                                                      reference=reference, reference_value=reference_value)
    problems = dict(problems)
    text = explanation.strip() if isinstance(explanation, str) else ""
    if not text:
        problems.setdefault("explanation", "say why the expected answer is right (the rater reads it after answering)")
    elif len(text) > MAX_EXPLANATION:
        problems.setdefault("explanation", f"at most {MAX_EXPLANATION} characters")
    count = PracticeItem.objects.filter(study=study).count()
    if count >= MAX_ITEMS:
        problems.setdefault("context", f"a study has at most {MAX_ITEMS} practice items")
    if problems:
        raise ValidationError(problems)
    last = PracticeItem.objects.filter(study=study).aggregate(m=Max("position"))["m"]
    if written:
        dialogue = dialogue_checks.written_dialogue_create(study, "practice", count + 1, data["turns"])
        item = PracticeItem.objects.create(
            study=study, position=0 if last is None else last + 1, conversation=dialogue, response_ids=[dialogue.pk],
            rules=check_rules.resolve_rules(data["rules"], [dialogue.pk]), explanation=text)
        Onboarding.objects.get_or_create(study=study)
        return item
    conversation, shown, reference_response = check_rules.written_conversation_create(study, "practice", count + 1, data)
    # A practice dialogue is judged whole (dialogue unit): its one target is the conversation itself.
    targets = [conversation.pk] if check_rules.practice_judges_the_context(study) else [r.pk for r in shown]
    item = PracticeItem.objects.create(
        study=study, position=0 if last is None else last + 1, conversation=conversation,
        response_ids=targets, reference_response=reference_response,
        reference_value=data["reference_value"], rules=check_rules.resolve_rules(data["rules"], targets),
        explanation=text)
    Onboarding.objects.get_or_create(study=study)  # pass mark 0: every practice item, until one is set
    return item


@transaction.atomic
def practice_item_delete(*, item: PracticeItem) -> None:
    """Remove a practice item (and its conversation) from a draft study; the others keep their
    order, renumbered from 0, and the pass mark never exceeds what is left."""
    study = _locked_draft(item.study, "remove practice items")
    conversation = item.conversation
    item.delete()
    if not PracticeItem.objects.filter(conversation=conversation).exists():  # a copy's item may share it
        conversation.delete()
    for n, pk in enumerate(PracticeItem.objects.filter(study=study).order_by("position").values_list("pk", flat=True)):
        PracticeItem.objects.filter(pk=pk).update(position=n)
    left = PracticeItem.objects.filter(study=study).count()
    if left:
        Onboarding.objects.filter(study=study, pass_mark__gt=left).update(pass_mark=left)
    else:
        Onboarding.objects.filter(study=study).delete()


def _whole_number(value: Any, low: int, high: int) -> int | None:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if low <= number <= high else None


@transaction.atomic
def onboarding_configure(*, study: Study, pass_mark: Any, owner_wide: Any = False, max_wrong: Any = None,
                         retakes: Any = 0) -> Onboarding:
    """Set the pass mark (how many practice items a rater must agree with, from 1 to their number),
    whether a pass in any of the researcher's experiments counts, and ParlAI's onboarding limits: the
    most answers that may disagree before the practice ends as failed (blank: no limit) and how many
    times a rater who failed may start again (0 to ``MAX_RETAKES``). ValidationError names the field."""
    study = _locked_draft(study, "change the practice settings")
    n = PracticeItem.objects.filter(study=study).count()
    if n == 0:
        raise ValidationError({"pass_mark": "add practice items first"})
    errors = {}
    mark = _whole_number(pass_mark, 1, n)
    if mark is None:
        errors["pass_mark"] = (f"a whole number from 1 to {n} (the study has {n} practice "
                               f"item{'s' if n != 1 else ''})")
    wrong = None
    if max_wrong not in (None, ""):
        wrong = _whole_number(max_wrong, 0, n - 1)
        if wrong is None:
            errors["max_wrong"] = f"a whole number from 0 to {n - 1}, or blank for no limit"
    again = _whole_number(0 if retakes in (None, "") else retakes, 0, MAX_RETAKES)
    if again is None:
        errors["retakes"] = f"a whole number from 0 to {MAX_RETAKES}"
    if errors:
        raise ValidationError(errors)
    onboarding, _ = Onboarding.objects.update_or_create(
        study=study, defaults={"pass_mark": mark, "owner_wide": owner_wide in (True, "on", "1", "true", "yes"),
                               "max_wrong": wrong, "retakes": again})
    return onboarding


def _copy(source: Study, target: Study) -> int:
    """Replace ``target``'s practice with ``source``'s (items share the conversations; same pass mark)."""
    PracticeItem.objects.filter(study=target).delete()
    items = list(PracticeItem.objects.filter(study=source).order_by("position"))
    PracticeItem.objects.bulk_create([
        PracticeItem(study=target, position=i.position, conversation_id=i.conversation_id, response_ids=i.response_ids,
                     reference_response_id=i.reference_response_id, reference_value=i.reference_value, rules=i.rules,
                     explanation=i.explanation) for i in items])
    Onboarding.objects.filter(study=target).delete()
    if (settings := Onboarding.objects.filter(study=source).first()) is not None and items:
        Onboarding.objects.create(study=target, pass_mark=settings.pass_mark, owner_wide=settings.owner_wide,
                                  max_wrong=settings.max_wrong, retakes=settings.retakes)
    return len(items)


def practice_copy(*, source: Study, target: Study) -> int:
    """Give a new copy of a study (``editing.study_duplicate``) the same practice; the caller holds
    the transaction. Returns the number of practice items copied."""
    return _copy(source, target)


@transaction.atomic
def practice_share(*, study: Study) -> tuple[list[Study], list[tuple[Study, str]]]:
    """Use this study's practice in every other draft condition of its experiment, so that the
    experiment's conditions share one practice (the pass is per experiment anyway). A condition of
    another design or with other criteria cannot take the same expected answers and is skipped with
    the reason, as is a published one. Returns (updated, [(skipped, why)])."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if not PracticeItem.objects.filter(study=study).exists():
        raise ValidationError({"practice": "this study has no practice items to share"})
    names = list(study.criteria.order_by("position").values_list("name", flat=True))
    updated, skipped = [], []
    for other in study.experiment.studies.exclude(pk=study.pk).select_for_update().order_by("pk"):
        if other.status != Study.Status.DRAFT:
            skipped.append((other, f"it is {other.status}"))
        elif other.design != study.design or other.unit != study.unit:
            skipped.append((other, "another design or unit"))
        elif list(other.criteria.order_by("position").values_list("name", flat=True)) != names:
            skipped.append((other, "other criteria"))
        else:
            _copy(study, other)
            updated.append(other)
    return updated, skipped


# --- the rater's practice ---------------------------------------------------------------------------

def practice_attempt_begin(*, study: Study, platform: str, external_id: str, acceptance_id: str = "",
                           platform_data: Mapping | None = None, via_experiment: bool = False) -> PracticeAttempt:
    """The identity's attempt at the practice of ``study``'s experiment: the one it already has
    (started, passed or failed: a reload or a new link of the same worker finds it), else a new one.

    A worker id is a claim: an attempt is also found by the platform's per-acceptance id (MTurk
    assignmentId, Prolific SESSION_ID), so a worker who failed and comes back with a made-up worker
    id on the same acceptance finds their failed attempt; another worker's started or passed attempt
    on that acceptance is refused (AssignmentRefused, ALREADY_DONE). Nothing else is written: no
    Rater, no Assignment."""
    external_id = external_id.strip()
    if not external_id:
        raise ValidationError({"external_id": "a rater needs a platform identity"})
    mine = PracticeAttempt.objects.filter(experiment_id=study.experiment_id, platform=platform)
    found = mine.filter(external_id=external_id).first()
    if found is not None:
        return found
    if acceptance_id:
        claimed = mine.filter(acceptance_id=acceptance_id).first()
        if claimed is not None:
            if claimed.status == PracticeAttempt.Status.FAILED:
                return claimed
            raise AssignmentRefused(gettext("this link belongs to another worker's practice"),
                                    reason=AssignmentRefused.ALREADY_DONE)
    try:
        with transaction.atomic():
            return PracticeAttempt.objects.create(
                experiment_id=study.experiment_id, study=study, via_experiment=via_experiment, platform=platform,
                external_id=external_id, acceptance_id=acceptance_id, platform_data=dict(platform_data or {}),
                pass_mark=selectors.effective_pass_mark(study))
    except IntegrityError:  # a double click on the link: the first request's attempt
        return mine.get(external_id=external_id)


def practice_answer(*, attempt: PracticeAttempt, item: PracticeItem, post: Mapping[str, Any]
                    ) -> tuple[PracticeAnswer | None, dict[str, str]]:
    """Record the rater's answer to one practice item: (the answer, {}) or (None, problems by form
    field) when the form is incomplete or wrong (nothing stored). The answer is stored once: a
    second submit of the same item (double click, reload) returns the first, unchanged, so a rater
    cannot try again after seeing the explanation. After the last item the attempt is scored: passed
    when at least the pass mark agreed; a pass is announced (``practice_passed``) after the commit.
    Consent comes first: an attempt whose rater has not agreed (``practice_attempt_consent``) raises
    ConsentRequired and stores nothing, whatever was posted."""
    study = attempt.study
    if item.study_id != study.pk:
        raise ValidationError({"item": "not a practice item of this study"})
    design = design_for(study)
    criteria = study_criteria(study)
    parsed, errors = design.answers_parse(post, study=study, order=item.response_ids, criteria=criteria)
    errors.update(repeated_fields(post, design.field_prefixes, criteria))  # one value, posted once
    with transaction.atomic():
        locked = PracticeAttempt.objects.select_for_update().get(pk=attempt.pk)
        if locked.consented_at is None:
            raise ConsentRequired("the rater has not agreed to the study's terms yet")
        existing = PracticeAnswer.objects.filter(attempt=locked, item=item).first()
        if existing is not None:
            return existing, {}
        if locked.status != PracticeAttempt.Status.STARTED:
            raise StudyStateError("this practice has ended")
        values: dict = {}
        if not errors:
            values, errors = design.practice_values(study=study, answers=parsed, order=item.response_ids,
                                                    criteria=criteria)
        if errors:
            return None, errors
        agreed = checks.check_passed(item.rules, values, [c.name for c in criteria], len(item.response_ids))
        form = _form_record(post)
        answer = PracticeAnswer.objects.create(attempt=locked, item=item, values=form, agreed=agreed)
        PracticeAttempt.objects.filter(pk=locked.pk).update(shown=F("shown") + 1, agreed=F("agreed") + int(agreed))
        locked.refresh_from_db()
        n = PracticeItem.objects.filter(study=study).count()
        max_wrong = selectors.max_wrong(study)
        too_many_wrong = max_wrong is not None and locked.shown - locked.agreed > max_wrong
        if locked.shown >= n or too_many_wrong:  # ParlAI's onboarding: stop at the first answer over the limit
            locked.pass_mark = selectors.effective_pass_mark(study, n)
            locked.status = (PracticeAttempt.Status.PASSED if locked.agreed >= locked.pass_mark and not too_many_wrong
                             else PracticeAttempt.Status.FAILED)
            locked.finished_at = timezone.now()
            locked.save(update_fields=["pass_mark", "status", "finished_at"])
            if locked.status == PracticeAttempt.Status.PASSED:
                transaction.on_commit(lambda: practice_passed.send(sender=PracticeAttempt, attempt=locked))
    attempt.refresh_from_db()
    return answer, {}


def practice_retake(*, attempt: PracticeAttempt) -> PracticeAttempt:
    """Start a failed practice again, when the researcher allows retakes (``Onboarding.retakes``) and the
    rater has some left: the answers are cleared and the rater begins at the first item (consent kept).
    StudyStateError otherwise: the fail stands (a soft block, told to the rater, never to the platform)."""
    with transaction.atomic():
        locked = PracticeAttempt.objects.select_for_update().get(pk=attempt.pk)
        if locked.status != PracticeAttempt.Status.FAILED:
            raise StudyStateError("only a failed practice can be taken again")
        if locked.retakes_used >= selectors.retakes_allowed(locked.study):
            raise StudyStateError("no retakes are left")
        locked.answers.all().delete()
        locked.status, locked.shown, locked.agreed, locked.finished_at = PracticeAttempt.Status.STARTED, 0, 0, None
        locked.retakes_used += 1
        locked.save(update_fields=["status", "shown", "agreed", "finished_at", "retakes_used"])
    attempt.refresh_from_db()
    return attempt


def practice_attempt_consent(*, attempt: PracticeAttempt) -> PracticeAttempt:
    """Record that the rater read the instructions and agreed, before the first practice item (once)."""
    PracticeAttempt.objects.filter(pk=attempt.pk, consented_at__isnull=True).update(consented_at=timezone.now())
    attempt.refresh_from_db(fields=["consented_at"])
    return attempt


def practice_continue(*, attempt: PracticeAttempt) -> Assignment:
    """After a pass: the slot, through the same entry the rater came by (the study link, or the
    experiment link's choice of condition), with the identity and acceptance the practice began
    with. Raises StudyStateError before a pass, AssignmentRefused as the entry does (e.g. full)."""
    if attempt.status != PracticeAttempt.Status.PASSED:
        raise StudyStateError("the practice has not been passed")
    identity = {"platform": attempt.platform, "external_id": attempt.external_id,
                "acceptance_id": attempt.acceptance_id, "platform_data": attempt.platform_data}
    if attempt.via_experiment:
        assignment = entry.experiment_enter(experiment=attempt.experiment, **identity)
    else:
        assignment = entry.assignment_enter(study=attempt.study, **identity)
    if attempt.consented_at is not None and assignment.consented_at is None:  # agreed before the practice
        Assignment.objects.filter(pk=assignment.pk, consented_at__isnull=True).update(consented_at=attempt.consented_at)
        assignment.refresh_from_db(fields=["consented_at"])
    return assignment


def _form_record(post: Mapping[str, Any]) -> dict[str, Any]:
    """The posted form as stored with a practice answer: every value of a field that has several (the
    ticked boxes of a multi-label criterion), each cut to 500 characters; tokens left out."""
    getlist = getattr(post, "getlist", None)
    record: dict[str, Any] = {}
    for key in post:
        if key in ("form_token", "active_ms", "csrfmiddlewaretoken"):
            continue
        values = getlist(key) if getlist is not None else [post[key]]
        cut = [str(v)[:500] for v in values]
        record[key] = cut if len(cut) > 1 else (cut[0] if cut else "")
    return record
