"""Reads for onboarding: a study's practice and the report's practice figures (pass rates, items most often failed)."""
from __future__ import annotations

import re
from typing import Any

from django.db.models import Count, Q
from django.utils.translation import gettext

from studies.designs.kinds.multilabel import NONE_TEXT, NONE_VALUE
from studies.models import PracticeAnswer, PracticeAttempt, PracticeItem, Study
from studies.rating.check_rules import rules_text
from studies.rating.practice_gate import onboarding_of

RESPONSE_KEYS = ("response", "greater", "than", "best", "worst")  # the rule keys that name a response


def practice_items(study: Study) -> list[PracticeItem]:
    return list(PracticeItem.objects.filter(study=study).select_related("conversation", "reference_response")
                .order_by("position"))


def effective_pass_mark(study: Study, n_items: int | None = None) -> int:
    """The study's pass mark, never more than its number of practice items; every item until the
    researcher sets one (0 without practice)."""
    n = PracticeItem.objects.filter(study=study).count() if n_items is None else n_items
    onboarding = onboarding_of(study)
    return min(onboarding.pass_mark, n) if onboarding is not None and onboarding.pass_mark else n


def max_wrong(study: Study) -> int | None:
    """The most practice answers that may disagree before the practice ends as failed (None: no limit)."""
    onboarding = onboarding_of(study)
    return onboarding.max_wrong if onboarding is not None else None


def retakes_allowed(study: Study) -> int:
    onboarding = onboarding_of(study)
    return onboarding.retakes if onboarding is not None else 0


def retakes_left(attempt: PracticeAttempt) -> int:
    """How many times a failed rater may still start the practice again."""
    return max(0, retakes_allowed(attempt.study) - attempt.retakes_used)


def attempt_next_position(attempt: PracticeAttempt) -> int | None:
    """The first practice item (0-based) this attempt has not answered, or None."""
    answered = set(attempt.answers.values_list("item_id", flat=True))
    for n, item_id in enumerate(PracticeItem.objects.filter(study=attempt.study_id).order_by("position")
                                .values_list("id", flat=True)):
        if item_id not in answered:
            return n
    return None


def practice_report(studies) -> dict[str, Any] | None:
    """The report's Practice section: per study, attempts finished, passed and the pass rate; and
    the practice items ordered by how often they were answered against the expected answer. None
    when none of the studies has practice items."""
    items = list(PracticeItem.objects.filter(study__in=studies).select_related("study", "conversation")
                 .order_by("study", "position")
                 .annotate(answered=Count("answers"), failed=Count("answers", filter=Q(answers__agreed=False))))
    if not items:
        return None
    rows = []
    for study in studies:
        finished = PracticeAttempt.objects.filter(study=study).exclude(status=PracticeAttempt.Status.STARTED)
        n = finished.count()
        passed = finished.filter(status=PracticeAttempt.Status.PASSED).count()
        if PracticeItem.objects.filter(study=study).exists():
            rows.append({"study": study, "finished": n, "passed": passed, "failed": n - passed,
                         "in_practice": PracticeAttempt.objects.filter(
                             study=study, status=PracticeAttempt.Status.STARTED).count(),
                         "pass_rate": passed / n if n else None, "pass_mark": effective_pass_mark(study)})
    hardest = sorted(items, key=lambda i: (-(i.failed / i.answered if i.answered else 0), i.study_id, i.position))
    return {"studies": rows, "items": [
        {"study": i.study, "number": i.position + 1, "answered": i.answered, "failed": i.failed,
         "fail_rate": i.failed / i.answered if i.answered else None,
         "last_turn": (i.conversation.turns[-1].get("text", "") if i.conversation.turns else "")[:80]}
        for i in hardest]}


def answers_of(attempt: PracticeAttempt) -> dict[int, PracticeAnswer]:
    return {a.item_id: a for a in attempt.answers.all()}


def study_practice_panel(study: Study) -> dict[str, Any]:
    """The study page's Practice card (and the API's practice list): the items with their rules (responses
    numbered from 1, as the API takes them) and the expected answer in the raters' letters (A, B, ...), the
    pass mark, and how raters have done so far."""
    rows = []
    for item in practice_items(study):
        number = {rid: n for n, rid in enumerate(item.response_ids, 1)}
        texts = dict(item.conversation.responses.values_list("pk", "text"))
        rows.append({"item": item, "number": item.position + 1, "turns": item.conversation.turns,
                     "responses": [texts.get(rid, "") for rid in item.response_ids],
                     "shown": [(n, chr(ord("A") + n - 1), texts.get(rid, "")) for n, rid in enumerate(item.response_ids, 1)],
                     # the rules as the API takes them (responses numbered from 1)
                     "rules": [{k: (number.get(v, v) if k in RESPONSE_KEYS else v) for k, v in rule.items()}
                               for rule in item.rules],
                     # what raters see: responses by letter (A, B, ...), as the practice page and its feedback
                     "expected": expected_answer_text(item, {c.name: c.question for c in study.criteria.all()})})
    onboarding = onboarding_of(study)
    attempts = PracticeAttempt.objects.filter(study=study)
    return {"items": rows, "pass_mark": effective_pass_mark(study, len(rows)),
            "owner_wide": bool(onboarding and onboarding.owner_wide),
            "max_wrong": onboarding.max_wrong if onboarding else None, "retakes": onboarding.retakes if onboarding else 0,
            "conditions": Study.objects.filter(experiment_id=study.experiment_id).count(),
            "passed": attempts.filter(status=PracticeAttempt.Status.PASSED).count(),
            "failed": attempts.filter(status=PracticeAttempt.Status.FAILED).count()}


def expected_answer_text(item: PracticeItem, criteria: dict[str, str] | None = None) -> list[str]:
    """The expected answer in the rater's words, one line per rule: responses by the letter the rater
    saw (A, B, ... in the item's fixed order), criteria by their question (``check_rules.rules_text``)."""
    number = {rid: n for n, rid in enumerate(item.response_ids, 1)}
    # a dialogue judged whole; the noun in the page's language (the feedback rows match on the English one)
    noun = gettext("Dialogue") if item.response_ids == [item.conversation_id] else gettext("Response")
    return [_labelled(line) for line in rules_text([{k: (number.get(v, v) if k in RESPONSE_KEYS else v) for k, v in rule.items()}
                       for rule in item.rules], criteria, noun)]


def _labelled(text: str) -> str:
    """A line with multi-label's internal "none" value shown as the words the rater clicked."""
    return text.replace(NONE_VALUE, str(NONE_TEXT))


def _shown(value) -> str:
    """A stored form value as the feedback shows it: a list joined, the none value named."""
    return _labelled(", ".join(map(str, value)) if isinstance(value, list) else str(value))


_FORM_KEY = re.compile(r"^r([A-Z])\d*-(.+)$")  # a rater form's field: r<letter>-<criterion>


def given_answer_text(values: dict, criteria: dict[str, str] | None = None) -> list[str]:
    """The rater's own answer to a practice item, as the feedback shows it beside ours: responses by the
    letter the rater saw, criteria by their question (the stored form record, ``PracticeAnswer.values``)."""
    lines = []
    for key in sorted(values):
        shown = _shown(values[key])
        if not shown:
            continue
        if match := _FORM_KEY.match(key):
            letter_, name = match.groups()
            reason = name.endswith(".rationale")
            name = name.removesuffix(".rationale")
            prefix = f"{(criteria or {}).get(name, name)}: "
            target = gettext("Response %(letter)s") % {"letter": letter_} + (gettext(" (why)") if reason else "")
            lines.append(f"{prefix}{target}: {shown}")
        elif "-" in key:
            kind, name = key.split("-", 1)
            lines.append(f"{(criteria or {}).get(name, name)}: {kind} {shown}")
    return lines



def feedback_rows(item: PracticeItem, values: dict, criteria: dict[str, str] | None = None) -> list[dict[str, str]]:
    """The practice feedback as one list: per question (in the study's order) and response (A, B, ...),
    the rater's answer beside ours, so the two are read side by side rather than as two lists ordered
    differently; a rule naming no criterion is shown under each. A rule about several responses ("A above B", "A ranked best") has its own row with no
    response; an answer nothing was expected of shows "any answer". Rows: question, target, given, expected."""
    criteria = criteria or {}
    order = {name: n for n, name in enumerate(criteria)}
    rows: dict[tuple[str, str], dict[str, list[str]]] = {}

    def row(name: str, target: str) -> dict[str, list[str]]:
        return rows.setdefault((name, target), {"given": [], "expected": []})

    for key in sorted(values):
        shown = _shown(values[key])
        if not shown:
            continue
        if match := _FORM_KEY.match(key):
            letter_, name = match.groups()
            reason = name.endswith(".rationale")
            row(name.removesuffix(".rationale"), f"Response {letter_}{' (why)' if reason else ''}")["given"].append(shown)
        elif "-" in key:
            kind, name = key.split("-", 1)
            row(name, "")["given"].append(f"{kind} {shown}")
    number = {rid: n for n, rid in enumerate(item.response_ids, 1)}
    for rule in item.rules:
        lettered = {k: (number.get(v, v) if k in RESPONSE_KEYS else v) for k, v in rule.items() if k != "criterion"}
        text = _labelled(rules_text([lettered])[0])
        single = set(lettered) & set(RESPONSE_KEYS) == {"response"}
        target = text.split(": ", 1)[0] if single and ": " in text else ""
        # A rule naming no criterion holds on each (``check_rules``): shown where the rater answered it.
        names = ([rule["criterion"]] if rule.get("criterion") else
                 [n for n in criteria if (n, target) in rows] or list(criteria) or [""])
        # a rule about several responses is shown whole, with the noun in the page's language
        shown = text.split(": ", 1)[1] if target else _labelled(rules_text([lettered], noun=gettext("Response"))[0])
        for name in names:
            row(name, target)["expected"].append(shown)
    ranked = sorted(rows.items(), key=lambda kv: (order.get(kv[0][0], len(order)), kv[0][0], kv[0][1]))
    return [{"question": criteria.get(name, name), "target": _target_shown(target),
             "given": "; ".join(found["given"]) or gettext("no answer"),
             "expected": "; ".join(found["expected"]) or gettext("any answer")}
            for (name, target), found in ranked]


_TARGET = re.compile(r"^Response (\w+)( \(why\))?$")


def _target_shown(target: str) -> str:
    """A row's response in the page's language ("Response A (why)"); the rows were matched in English."""
    match = _TARGET.match(target)
    if not match:
        return target
    shown = gettext("Response %(letter)s") % {"letter": match.group(1)}
    return shown + (gettext(" (why)") if match.group(2) else "")
