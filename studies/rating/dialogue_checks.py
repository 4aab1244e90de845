"""Check items of one dialogue written for them, in a dialogue-unit study whose criteria judge turns (a kind
with ``checks_dialogues``: per turn): a known bad dialogue whose turns have expected labels, with the share
of those turns that must match (``min_match``, the researcher's tolerance; ``studies.rating.checks``).

The researcher writes the dialogue (turns, or one turn per line, "bot: hi") as the check's ``context`` and
rules naming it as response 1 (``{"criterion": "abc", "response": 1, "turns": {"1": ["redundant"]},
"min_match": 0.8}``; a turn is its index in the dialogue, from 0, as the answers key them). The dialogue is
stored in the study's checks corpus and is the check item's conversation, so the rater sees it exactly like
the study's dialogues. A rule naming a turn the criterion does not judge in that dialogue is refused by name.
Practice items of such studies are written the same way (``studies.onboarding.services``): the dialogue is
the practice item's conversation and its one shown target."""
from __future__ import annotations

from typing import Any

from django.db.models import Max

from studies.designs import design_for, kind_for, unit_for
from studies.designs.kinds.per_turn import judged_indices, options_of
from studies.models import CheckKind, Conversation, Study, StudyItem
from studies.rating.check_rules import Problems, checks_corpus, resolve_rules, rules_clean, turns_clean

CHECK_POSITION_BASE = 1_000_000  # as studies.authoring.checks: after every regular item


def dialogue_checks_possible(design: Any, unit: Any, kinds: Any) -> bool:
    """Whether check items may be dialogues written for them: a dialogue unit whose raters do not make the
    dialogue (a chat's are unknown in advance), a design rating one dialogue per screen without an anchor, and
    a judgement kind among ``kinds`` that checks turns of a dialogue."""
    return (unit.level == "dialogue" and not unit.collects_dialogues and design.takes_kinds and not design.ranks
            and not design.anchored and any(kind.checks_dialogues for kind in kinds))


def written_dialogue_checks(study: Study) -> bool:
    """``dialogue_checks_possible`` for a study and its criteria."""
    return dialogue_checks_possible(design_for(study), unit_for(study), [kind_for(c) for c in study.criteria.all()])


def dialogue_check_problems(study: Study, *, kind: Any, context: Any, rules: Any) -> tuple[dict[str, Any], Problems]:
    """The written dialogue and its rules, checked; problems keyed ``context``, ``rules[i].<field>``."""
    problems = Problems()
    if kind not in CheckKind.values:
        problems.add("kind", f"one of {', '.join(CheckKind.values)}")
    turns = turns_clean(context, problems)
    cleaned, rule_problems = rules_clean(study, rules, 1) if turns else ([], {})
    problems.update({k: v for k, v in rule_problems.items() if k not in problems})
    criteria = {c.name: c for c in study.criteria.all()}
    for i, rule in enumerate(cleaned):
        if "turns" not in rule:
            continue
        judged = judged_indices(turns, options_of(criteria[rule["criterion"]])[2]) if rule.get("criterion") else []
        if missing := [t for t in rule["turns"] if int(t) not in judged]:
            problems.add(f"rules[{i}].turns", f"turn {missing[0]} is not a judged turn of this dialogue (judged, "
                                              f"from 0: {', '.join(map(str, judged)) or 'none'})")
    return {"turns": turns, "rules": cleaned}, problems


def written_dialogue_create(study: Study, prefix: str, number: int, turns: list[dict[str, str]]) -> Conversation:
    """The dialogue in the study's checks corpus as ``<prefix>-<n>`` (the first free n from ``number``)."""
    corpus = checks_corpus(study)
    taken = set(corpus.conversations.values_list("external_id", flat=True))
    while f"{prefix}-{number}" in taken:
        number += 1
    return Conversation.objects.create(corpus=corpus, external_id=f"{prefix}-{number}", turns=turns,
                                       metadata={prefix: True})


def dialogue_check_write(study: Study, kind: str, data: dict[str, Any], number: int) -> StudyItem:
    """Store the dialogue as ``check-<n>`` (the first free n) and the check item showing it."""
    conversation = written_dialogue_create(study, "check", number, data["turns"])
    last = study.items.filter(check_kind__gt="").aggregate(m=Max("position"))["m"]
    return StudyItem.objects.create(study=study, conversation=conversation, check_kind=kind,
                                    position=CHECK_POSITION_BASE if last is None else last + 1,
                                    check_rules=resolve_rules(data["rules"], [conversation.pk]))
