"""The pairwise (A/B) item on the rater's page: form fields, what the page shows, stored answers.

Fields: ``choice-<criterion>`` (left | right | tie) and ``reason-<criterion>`` (free text, per the
study's ``reason`` mode). rater_views calls these for a pairwise study instead of its per-response
fields; the page is templates/raters/_pairwise.html with static/concord/rater_pairwise.js."""
from __future__ import annotations

from typing import Any

from studies.models import AssignmentItem, Comparison, Study
from studies.rating import selectors

CHOICE_PREFIX, REASON_PREFIX = "choice-", "reason-"
FIELD_PREFIXES = (CHOICE_PREFIX, REASON_PREFIX)


def parse(post, study: Study) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """The answers in a submitted pairwise form ({criterion: {"choice", "reason"}}) and the missing
    choices; everything else is checked by pairwise_services.comparisons_record."""
    answers: dict[str, dict[str, str]] = {}
    errors: dict[str, str] = {}
    for name in (c.name for c in selectors.study_criteria(study)):
        choice = (post.get(CHOICE_PREFIX + name) or "").strip()
        if not choice:
            errors[CHOICE_PREFIX + name] = "pick the better response"
        answers[name] = {"choice": choice, "reason": post.get(REASON_PREFIX + name) or ""}
    return answers, errors


def stored_values(slot: AssignmentItem) -> dict[str, str]:
    """The stored answers of a slot as form values (empty before the first answer)."""
    if slot.answered_at is None:
        return {}
    values = {}
    for name, choice, reason in Comparison.objects.filter(assignment_id=slot.assignment_id, item_id=slot.item_id) \
            .values_list("criterion__name", "choice", "reason"):
        values[CHOICE_PREFIX + name], values[REASON_PREFIX + name] = choice, reason
    return values


def item_context(study: Study, responses: list[dict[str, Any]], values: dict, errors: dict) -> dict[str, Any]:
    """What _pairwise.html needs: the two sides and one row per criterion."""
    config = study.design_config
    sides = [{**responses[0], "side": "left", "label": "A", "key": "a"},
             {**responses[1], "side": "right", "label": "B", "key": "b"}] if len(responses) == 2 else []
    criteria = []
    for criterion in selectors.study_criteria(study):
        choice_field, reason_field = CHOICE_PREFIX + criterion.name, REASON_PREFIX + criterion.name
        criteria.append({
            "name": criterion.name, "question": criterion.question, "help": criterion.help_text,
            "choice_field": choice_field, "choice": values.get(choice_field, ""), "choice_error": errors.get(choice_field),
            "reason_field": reason_field, "reason": values.get(reason_field, ""), "reason_error": errors.get(reason_field),
        })
    return {"sides": sides, "criteria": criteria, "allow_tie": config.get("allow_tie", True),
            "reason": config.get("reason", "optional"), "reason_max_length": config.get("reason_max_length", 300)}
