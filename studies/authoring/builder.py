"""The study builder's live preview and the expected answers authored in it.

The preview is the rater's page for a real item of the study, rendered by the templates raters get
(``raters/_item_body.html`` through the design's own ``form_context``) with the criteria and scale
settings as they stand in the builder, unsaved: the draft never touches the database. An expected
answer is the researcher answering that page as a rater would: the answers are parsed by the
design (``answers_parse``), turned into check values as practice and check items score them
(``practice_values``), written as check rules (a value, within a tolerance where the scale has one;
a label or a label set; best and worst for rankings; which of two is better for comparisons), and
saved by the existing services (``onboarding.services.practice_item_create``,
``authoring.checks.check_item_create``), which check them again.
"""
from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from studies.authoring import checks
from studies.authoring.criteria_rows import rows_posted, rows_read, rows_specs
from studies.authoring.services import DEFAULT_CRITERIA
from studies.designs import design_for, kind_for, unit_for
from studies.designs.kinds import criterion_kind_clean
from studies.designs.rater_reads import study_criteria
from studies.models import CheckKind, Criterion, Response, Study, StudyItem
from studies.onboarding import services as practice_services
from studies.rating import check_rules
from studies.rating.views import item_preview_context

USES = {"practice": "practice item", "gold": "gold check item"}


def preview_items(study: Study):
    """The study's regular items (check items are not previewed: they are written, not drawn)."""
    return study.items.filter(check_kind="").order_by("position")


def preview_item(study: Study, number: int) -> StudyItem | None:
    """The ``number``-th regular item (0-based) with what its page shows, or None."""
    return next(iter(preview_items(study).select_related("conversation", "reference_response")[number:number + 1]),
                None)


def draft_study(study: Study, data: Mapping[str, Any]) -> tuple[Study, list[str]]:
    """A copy of ``study`` (never saved) with the design settings typed in the builder; notes on what
    could not be applied (the saved settings are shown instead)."""
    design = design_for(study)
    draft = copy.copy(study)
    notes = []
    if data.get("design") and data.get("design") != study.design:
        notes.append("The preview shows the saved design: save the study to preview another design.")
    if design.form_fields and any(name in data for name in design.form_fields):
        try:
            cleaned = {name: field.clean(data.get(name, "")) for name, field in design.form_fields.items()}
            draft.design_config = design.config_clean({**(study.design_config or {}),
                                                       **design.config_from_form(cleaned)})
        except ValidationError as error:
            notes.append("The scale settings are not complete yet (" + "; ".join(error.messages)
                         + "): the preview shows the saved ones.")
    return draft, notes


def _question(study: Study, name: str) -> str:
    """The question a criterion without one gets when the study is saved (``services.study_create``)."""
    defaults = {c["name"]: c for c in DEFAULT_CRITERIA}
    return (unit_for(study).default_question(name) or defaults.get(name, {}).get("question")
            or f"How good is the response's {name}?")


def draft_criteria(study: Study, data: Mapping[str, Any]) -> tuple[list[Criterion], list[str]]:
    """The criteria as the builder's rows stand (unsaved ``Criterion`` objects), or the saved ones when
    no rows are posted; and the rows' problems (a row with a problem is left out of the preview)."""
    if not rows_posted(data):
        return study_criteria(study), []
    specs, problems = rows_specs(rows_read(data))
    takes_kinds = design_for(study).takes_kinds
    criteria = []
    for position, spec in enumerate(specs):
        settings, found = criterion_kind_clean(spec, takes_kinds=takes_kinds, prefix=spec["name"])
        if found:
            problems += [f"{spec['name']}: {message}" for message in found.values()]
            continue
        criteria.append(Criterion(study=study, name=spec["name"], position=position,
                                  question=spec.get("question") or _question(study, spec["name"]),
                                  help_text=spec.get("help_text", ""), **settings))
    return criteria, problems


def preview_context(study: Study, data: Mapping[str, Any], number: int) -> dict[str, Any]:
    """What ``studies/_builder_preview.html`` shows: the ``number``-th regular item (0-based, clipped)
    as raters get it with the draft, the builder's problems and notes, and the item navigation."""
    count = preview_items(study).count()
    if not count:
        return {"study": study, "no_items": True}
    number = min(max(number, 0), count - 1)
    draft, notes = draft_study(study, data)
    criteria, problems = draft_criteria(draft, data)
    context = item_preview_context(draft, preview_item(study, number), criteria=criteria)
    context.update({
        "study": study, "item_number": number, "item_count": count,
        "builder_problems": problems, "builder_notes": notes,
        **expected_offer(study),
        "scale_tolerance": any(kind_for(c).numeric for c in criteria) and _takes_values(study),
        "answer_choices": answer_choices(study, preview_item(study, number)),
    })
    return context


def expected_offer(study: Study) -> dict[str, Any]:
    """What the preview offers to save the researcher's answers as: ``expected_uses`` (practice and/or a
    gold check item, as the study's design and unit take them), ``expected_refusal`` (why nothing is
    offered) and ``practice_note`` (why practice is not, where gold check items are: ACUTE-Eval takes
    check pairs but no practice yet). Read from the same services as the checks page, so the two agree."""
    design = design_for(study)
    checks_refused = unit_for(study).checks_refusal(design, from_preview=True) or design.checks_problem()
    practice_refused = practice_services.practice_problem(study, from_preview=True)
    uses = {key: label for key, label in USES.items()
            if not (checks_refused if key == "gold" else practice_refused)}
    return {"expected_uses": uses, "expected_refusal": "" if uses else (checks_refused or practice_refused),
            "practice_note": practice_refused if uses and "practice" not in uses else ""}


def _takes_values(study: Study) -> bool:
    """Whether the design's scale answers are values (a tolerance means something), not ranks or choices."""
    value_range = getattr(design_for(study), "value_range", None)
    return value_range is not None and value_range(study.design_config) is not None


def _tolerance(given: Any) -> float:
    text = str(given or "").strip()
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValidationError({"tolerance": f"a number of points of 0 or more, not “{text[:20]}”"})
    return value


def _numeric_rules(study: Study, criterion: Criterion, given: dict[int, Any], order: Sequence[int],
                   tolerance: float) -> list[dict[str, Any]]:
    """The rules that say these numbers (a value per response, a rank, a choice as 1/0) are right."""
    design = design_for(study)
    config = study.design_config
    number = {target: order.index(target) + 1 for target in order}
    if all(design.value_problem(config, float(v), scale_min=criterion.scale_min,
                                scale_max=criterion.scale_max) is None for v in given.values()):
        bounds = design.value_range(config, scale_min=criterion.scale_min, scale_max=criterion.scale_max)
        rules = []
        for target, value in given.items():
            if tolerance:
                low, high = value - tolerance, value + tolerance
                if bounds:
                    low, high = max(low, bounds[0]), min(high, bounds[1])
                rules.append({"criterion": criterion.name, "response": number[target], "min": low, "max": high})
            else:
                rules.append({"criterion": criterion.name, "response": number[target], "value": value})
        return rules
    if "best" in design.check_rule_kinds:  # a ranking: the first and the last place
        ranked = sorted(given, key=lambda target: given[target])
        return [{"criterion": criterion.name, "best": number[ranked[0]]},
                {"criterion": criterion.name, "worst": number[ranked[-1]]}]
    ranked = sorted(given, key=lambda target: -given[target])  # a comparison: which is better
    if given[ranked[0]] == given[ranked[-1]]:
        raise ValidationError({criterion.name: "a tie cannot be the expected answer: choose the better response"})
    return [{"criterion": criterion.name, "greater": number[a], "than": number[b]}
            for a, b in zip(ranked, ranked[1:], strict=False) if given[a] > given[b]]


def expected_rules(study: Study, item: StudyItem, post: Mapping[str, Any], *, tolerance: Any = "") -> list[dict]:
    """The check rules (responses 1-based, in the order the preview shows them) that the researcher's
    answers to ``item`` make; ValidationError keyed by the rater form's fields or ``tolerance``."""
    design = design_for(study)
    criteria = study_criteria(study)
    order = unit_for(study).item_targets([item.pk])[item.pk]
    within = _tolerance(tolerance)
    answers, errors = design.answers_parse(post, study=study, order=order, criteria=criteria)
    if errors:
        raise ValidationError(errors)
    values, errors = design.practice_values(study=study, answers=answers, order=order, criteria=criteria)
    if errors:
        raise ValidationError(errors)
    rules: list[dict[str, Any]] = []
    for criterion in criteria:
        kind = kind_for(criterion)
        given = {target: values[(criterion.name, target)] for target in order if (criterion.name, target) in values}
        if not given:
            continue
        if kind.check_rule_key:  # a label or a label set, per response
            rules += [{"criterion": criterion.name, "response": order.index(target) + 1,
                       kind.check_rule_key: list(value) if isinstance(value, tuple) else value}
                      for target, value in given.items()]
        elif kind.numeric:
            rules += _numeric_rules(study, criterion, given, order, within)
    if not rules:
        raise ValidationError({"rules": "these questions take no expected answer (free text is never scored)"})
    return rules


TEST_FIELD = "expected_test"  # the answers a gold check tests: "<criterion>|<response number>" or "<criterion>|"


def rule_key(rule: Mapping[str, Any]) -> str:
    """A rule's checkbox in the preview: its question and response ("safety|2"), or its question alone for
    a rule about an order (best, worst, greater)."""
    return f"{rule.get('criterion', '')}|{rule.get('response', '')}"


def answer_choices(study: Study, item: StudyItem) -> list[dict[str, str]]:
    """The checkboxes of the preview's expected-answer card: one per question and response for labels
    and values, one per question for an order; labelled as the rater sees them ("safety · response B")."""
    import string

    design = design_for(study)
    order = unit_for(study).item_targets([item.pk]).get(item.pk, [])
    choices = []
    for criterion in study_criteria(study):
        kind = kind_for(criterion)
        if not (kind.check_rule_key or kind.numeric):
            continue
        per_response = kind.check_rule_key or ("response" in design.check_rule_kinds and _takes_values(study))
        if per_response:
            choices += [{"key": f"{criterion.name}|{n}", "text": f"{criterion.name} · response {string.ascii_uppercase[n - 1]}"}
                        for n in range(1, len(order) + 1)]
        else:
            choices.append({"key": f"{criterion.name}|", "text": f"{criterion.name} · the order"})
    return choices


def rules_chosen(rules: list[dict], post: Mapping[str, Any], use: str) -> list[dict]:
    """The rules of the answers the researcher ticked (``TEST_FIELD``): a gold check tests only what was
    chosen, so one extra label elsewhere on the screen does not fail a careful rater. A gold check needs
    at least one; a practice item with none ticked shows every answer."""
    getlist = getattr(post, "getlist", None)
    chosen = set(getlist(TEST_FIELD) if getlist else (post.get(TEST_FIELD) or []))
    if not chosen:
        if use == "gold":
            raise ValidationError({TEST_FIELD: "tick the answers this check tests (a rater passes when those match; "
                                               "the other answers on the screen are not scored)"})
        return rules
    kept = [rule for rule in rules if rule_key(rule) in chosen]
    if not kept:
        raise ValidationError({TEST_FIELD: "none of the ticked answers has an expected value: tick an answer you gave"})
    return kept


def _written_from(study: Study, use: str, turns: Any, texts: list[str]) -> Any:
    """The practice or gold check item already written from an item with these turns and texts, or None."""
    if use == "practice":
        written = [(p, p.conversation, p.response_ids) for p in study.practice_items.select_related("conversation")]
    else:
        written = [(c, c.conversation, list(c.item_responses.order_by("position").values_list("response_id", flat=True)))
                   for c in study.items.filter(check_kind=CheckKind.GOLD).select_related("conversation")]
    for found, conversation, ids in written:
        if conversation.turns == turns:
            if check_rules.judges_the_context(study):  # a dialogue judged whole: its turns are the item
                return found
            by_id = dict(Response.objects.filter(pk__in=ids).values_list("pk", "text"))
            if [by_id.get(pk) for pk in ids] == texts:
                return found
    return None


def _conversations_gold_save(study: Study, item: StudyItem, order: Sequence[int], rules: list[dict]) -> tuple[Any, bool]:
    """A gold check pair copied from a previewed item: its conversations, in the order the preview shows
    them, with their judged speakers (``check_conversations``); the same pair twice is stored once."""
    from studies.authoring.check_conversations import check_item_conversations
    from studies.models import Conversation, StudyItemConversation

    speakers = dict(StudyItemConversation.objects.filter(item=item).values_list("conversation_id", "speaker"))
    turns = dict(Conversation.objects.filter(pk__in=list(order)).values_list("pk", "turns"))
    pair = [{"turns": turns[cid], "speaker": speakers.get(cid, "")} for cid in order]
    golds = list(study.items.filter(check_kind=CheckKind.GOLD))
    for found in golds:
        shown = check_item_conversations([found.pk]).get(found.pk, [])
        if [{"turns": c["turns"], "speaker": c["speaker"]} for c in shown] == pair:
            if found.check_rules == check_rules.resolve_rules(rules, [c["id"] for c in shown]):
                return found, False
            raise ValidationError({"expected": f"this item is already a {USES['gold']} with another expected answer: "
                                               "remove that one first (study page)"})
    return checks.check_item_create(study=study, kind=CheckKind.GOLD, conversations=pair, rules=rules), True


@transaction.atomic
def expected_answer_save(*, study: Study, item: StudyItem, post: Mapping[str, Any], use: str,
                         explanation: str = "", tolerance: Any = "") -> tuple[Any, bool]:
    """Save the researcher's answers to ``item`` as a practice item (with its ``explanation``) or a gold
    check item, through the services that own them (they check the study is a draft, the rules and the
    texts again); returns (the item, whether it is new). ValidationError names the field; nothing is
    written on any problem. The same item sent twice (a double click) is stored once; another answer to an
    item already written is refused (remove that item first)."""
    study = Study.objects.select_for_update().get(pk=study.pk)  # one save at a time: the check below holds
    offered = expected_offer(study)["expected_uses"]
    if use not in offered:
        raise ValidationError({"use": f"choose one of: {', '.join(offered.values()) or 'none for this study'}"})
    rules = rules_chosen(expected_rules(study, item, post, tolerance=tolerance), post, use)
    design = design_for(study)
    order = unit_for(study).item_targets([item.pk])[item.pk]
    if design.check_conversations and use == "gold":  # a pair of whole conversations (ACUTE-Eval)
        return _conversations_gold_save(study, item, order, rules)
    texts = unit_for(study).target_texts(study, item, order, ranked=design.ranks)
    parts = {"context": item.conversation.turns, "responses": [texts[target] for target in order], "rules": rules}
    if design.anchored and item.reference_response_id:
        parts.update(reference=item.reference_response.text, reference_value=item.reference_value)
    if (found := _written_from(study, use, parts["context"], parts["responses"])) is not None:
        ids = found.response_ids if use == "practice" else [found.conversation_id] \
            if check_rules.judges_the_context(study) else \
            list(found.item_responses.order_by("position").values_list("response_id", flat=True))
        if (found.rules if use == "practice" else found.check_rules) == check_rules.resolve_rules(rules, ids):
            return found, False
        raise ValidationError({"expected": f"this item is already a {USES[use]} with another expected answer: "
                                           f"remove that one first (study page)"})
    if use == "practice":
        return practice_services.practice_item_create(study=study, explanation=explanation, **parts), True
    return checks.check_item_create(study=study, kind=CheckKind.GOLD, **parts), True
