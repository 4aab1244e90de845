"""One item's posted answers, parsed, recorded and refused field by field: what the rater's item page
and the rater API (``studies.api.rater_views``) both run, so an answer is checked the same way whichever
way it came.

The design parses the form (``StudyDesign.answers_parse``: every field's problem in the rater's words),
a field that holds one value may be posted once (``repeated_fields``), and the one answer
service stores it (``answers.ratings_record``: the slot lock, timings, the design's store-time checks,
the same answers twice stored once). A store-time problem keyed by criterion and target id
(``<criterion>.<target id>``, ``<criterion>.rationale.<target id>``) is named by the form field the
rater sees (``r<letter>-<criterion>``): a field name never carries a database id."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.utils import timezone

from studies.designs import design_for
from studies.designs.common import Errors
from studies.designs.kinds import repeated_fields
from studies.designs.rater_reads import study_criteria
from studies.designs.ratings import field_name
from studies.models import AssignmentItem
from studies.rating import answers as answering


def store_errors_by_field(error: ValidationError, order: Sequence[int]) -> Errors:
    """A store-time ValidationError's problems keyed by the form field they concern where one does."""
    errors: Errors = {}
    for key, messages in error.message_dict.items():
        criterion, _, rid = key.partition(".")
        why, _, why_rid = rid.partition(".")  # a criterion's reason: <criterion>.rationale.<target>
        field = (field_name(int(rid), criterion, order) if rid.isdigit() and int(rid) in order else
                 f"{field_name(int(why_rid), criterion, order)}.{why}"
                 if why == "rationale" and why_rid.isdigit() and int(why_rid) in order else key)
        errors[field] = "; ".join(messages)
    return errors


def item_answer_record(*, slot: AssignmentItem, post: Mapping[str, Any], active_seconds: float | None) -> Errors:
    """Parse ``post`` (a form's QueryDict: field -> value, a multi-label row's ticked labels as several
    values) for ``slot``'s item and store it; returns every field's problem (empty: stored), nothing
    stored when there is one. The slot must have been opened (``answers.assignment_item_open``): the
    item's time is counted from then. StudyStateError when the assignment is no longer started."""
    assignment, study = slot.assignment, slot.assignment.study
    design = design_for(study)
    criteria = study_criteria(study)
    answers, errors = design.answers_parse(post, study=study, order=slot.response_order, criteria=criteria)
    errors.update(repeated_fields(post, design.field_prefixes, criteria))  # one value, posted once
    if errors:
        return errors
    started = slot.started_at or timezone.now()
    try:
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers,
                                 seconds=(timezone.now() - started).total_seconds(), active_seconds=active_seconds)
    except ValidationError as error:
        return store_errors_by_field(error, slot.response_order)
    return {}
