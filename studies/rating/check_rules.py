"""Check items' parts and rules, as written by a researcher: a conversation, the responses to judge and the
rules of what a careful rater answers (a value, a range, an ordering, a label), checked against the study's
design and criteria, and the written conversation stored in the study's checks corpus. Attention checks,
gold items (``studies.authoring.checks``) and practice items (``studies.onboarding``) are all written and
scored this way; how an assignment's answers are scored against the rules: ``studies.rating.checks``."""
from __future__ import annotations

import math
import string
from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import Count
from django.utils.translation import gettext

from studies.designs import design_for, kind_for, unit_for
from studies.models import CheckKind, Conversation, Corpus, Response, Study, StudyItem, System

CHECK_SYSTEM = "attention-check"
MAX_RESPONSES = 10
MAX_TEXT = 5000
VALUE_KEYS = {"value", "min", "max"}
LABEL_KEYS = ("label", "labels", "spans", "turns")  # the expected answer of a label, span or per-turn criterion


class Problems(dict):
    def add(self, key: str, message: str) -> None:
        self.setdefault(key, message)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def judges_the_context(study: Study) -> bool:
    """Whether a check or practice item of this study is one whole dialogue judged as it is (a dialogue-unit
    study rating one dialogue at a time), not responses to a context nor a pair of conversations."""
    return unit_for(study).checks_judge_the_context and not design_for(study).check_conversations


def practice_judges_the_context(study: Study) -> bool:
    """Whether a practice item of this study is one whole conversation judged as it is: as its check items
    (``judges_the_context``) unless the unit says otherwise (a chat's scripted practice transcript)."""
    unit = unit_for(study)
    whole = unit.checks_judge_the_context if unit.practice_judges_the_context is None else unit.practice_judges_the_context
    return whole and not design_for(study).check_conversations


def rules_clean(study: Study, rules: Any, n_responses: int, *, prefix: str = "rules") -> tuple[list[dict], dict]:
    """Check rules against the study's design and criteria; responses stay 1-based here. Returns
    (cleaned rules, problems keyed ``rules[i].field``)."""
    problems = Problems()
    if not isinstance(rules, list) or not rules:
        problems.add(prefix, "give at least one rule (a JSON list), e.g. [{\"response\": 1, \"value\": 2}]")
        return [], problems
    criteria = {c.name: c for c in study.criteria.all()}
    cleaned = []
    for i, rule in enumerate(rules):
        out = _rule_clean(study, rule, f"{prefix}[{i}]", criteria, n_responses, problems)
        if out is not None:
            cleaned.append(out)
    return cleaned, problems


def _rule_clean(study: Study, rule: Any, key: str, criteria: Mapping[str, Any], n_responses: int,
                problems: Problems) -> dict[str, Any] | None:
    """One rule: its shape, the responses it names and its criteria, then what it expects (a label or a label
    set, an order, a value or a range, a rank). None, with the problem added, when it is refused."""
    if not isinstance(rule, Mapping):
        problems.add(key, "each rule is a JSON object")
        return None
    out: dict[str, Any] = {}
    name = rule.get("criterion")
    if name not in (None, ""):
        if name not in criteria:
            problems.add(f"{key}.criterion", f"unknown criterion {name!r} (the study has {', '.join(criteria)})")
            return None
        out["criterion"] = name
    kind = _rule_kind(study, rule, key, n_responses, problems)
    if kind is None:
        return None
    targets = [criteria[name]] if name else list(criteria.values())
    label_key = next((k for k in LABEL_KEYS if k in rule), None)
    expects = label_key or "value"  # what the rule's criteria must answer: a label, a label set, a number
    wrong = [c.name for c in targets if (kind_for(c).check_rule_key or ("value" if kind_for(c).numeric
                                                                         else None)) != expects]
    if wrong:
        problems.add(f"{key}.criterion", f"criterion {wrong[0]} is {kind_for(criteria[wrong[0]]).label.lower()}: "
                     + (f"a {label_key} rule names a criterion that takes {'one label' if label_key == 'label' else 'a label set'}"
                        if label_key else "name a criterion with a scale for this rule"))
        return None
    if label_key:
        return _label_rule_clean(rule, kind, label_key, targets, key, out, problems)
    if kind == "greater":
        if rule["greater"] == rule["than"]:
            problems.add(f"{key}.than", "compare two different responses")
            return None
        return {**out, "greater": rule["greater"], "than": rule["than"]}
    if kind == "response":
        return _value_rule_clean(study, rule, targets, key, out, problems)
    return {**out, kind: rule[kind]}


def _rule_kind(study: Study, rule: Mapping[str, Any], key: str, n_responses: int, problems: Problems) -> str | None:
    """Which rule it is (response, greater, best or worst), its response numbers in range, and a kind the
    study's design checks (``check_rule_kinds``; a label rule suits every rating design)."""
    kinds = [k for k in ("response", "greater", "best", "worst") if k in rule]
    unknown = set(rule) - {"criterion", "response", "value", "min", "max", "greater", "than", "best", "worst",
                           "min_match", *LABEL_KEYS}
    if unknown:
        problems.add(key, f"unknown key(s) {', '.join(sorted(unknown))}")
        return None
    if len(kinds) != 1:
        problems.add(key, "a rule has exactly one of response (with value or min/max), greater (with than), "
                          "best, worst")
        return None
    kind = kinds[0]
    refs = [kind] + (["than"] if kind == "greater" else [])
    bad = [r for r in refs if not isinstance(rule.get(r), int) or isinstance(rule.get(r), bool)
           or not 1 <= rule[r] <= n_responses]
    if bad:
        noun = "conversation" if design_for(study).check_conversations else "response"
        problems.add(f"{key}.{bad[0]}", f"must be a {noun} number from 1 to {n_responses}")
        return None
    allowed = design_for(study).check_rule_kinds  # e.g. response/greater for values, best/worst for ranks
    if kind not in allowed and not any(k in rule for k in LABEL_KEYS):
        problems.add(f"{key}.{kind}", "best/worst rules are for best-worst scaling studies"
                     if kind in ("best", "worst") else f"this study checks ranks: use {' or '.join(allowed)}")
        return None
    return kind


def _label_rule_clean(rule: Mapping[str, Any], kind: str, label_key: str, targets: list, key: str,
                      out: dict[str, Any], problems: Problems) -> dict[str, Any] | None:
    """A label (or label set) rule: one response and the answer each named criterion's kind accepts."""
    if kind != "response" or set(rule) & VALUE_KEYS:
        problems.add(key, f"a {label_key} rule has response and {label_key} (and criterion)")
        return None
    expected = None
    for criterion in targets:
        expected, problem = kind_for(criterion).expected_clean(criterion, rule[label_key])
        if problem:
            problems.add(f"{key}.{label_key}", problem)
            return None
    if label_key == "turns":  # the share of the listed turns that must match (the researcher's tolerance)
        share = rule.get("min_match", 1.0)
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            problems.add(f"{key}.min_match", "must be a share of the listed turns above 0 and at most 1, e.g. 0.8")
            return None
        out["min_match"] = float(share)
    elif "min_match" in rule:
        problems.add(f"{key}.min_match", "only a per-turn rule (turns) takes min_match")
        return None
    return {**out, "response": rule["response"], label_key: expected}


def _value_rule_clean(study: Study, rule: Mapping[str, Any], targets: list, key: str, out: dict[str, Any],
                      problems: Problems) -> dict[str, Any] | None:
    """A value rule: exactly a value the design allows on each criterion's scale, or a min/max range."""
    given = {k: rule[k] for k in VALUE_KEYS if k in rule}
    if not given or ("value" in given and len(given) > 1):
        problems.add(key, "give value, or min and/or max")
        return None
    parsed = {k: _number(v) for k, v in given.items()}
    wrong = [k for k, v in parsed.items() if v is None]
    if wrong:
        problems.add(f"{key}.{wrong[0]}", "must be a finite number")
        return None
    numbers = {k: v for k, v in parsed.items() if v is not None}  # all of them: none was wrong
    if "value" in numbers:
        for criterion in targets:
            problem = design_for(study).value_problem(study.design_config, numbers["value"],
                                                      scale_min=criterion.scale_min, scale_max=criterion.scale_max)
            if problem:
                problems.add(f"{key}.value", problem)
    elif "min" in numbers and "max" in numbers and numbers["min"] > numbers["max"]:
        problems.add(f"{key}.max", "must be at least min")
    return {**out, "response": rule["response"], **numbers}


def resolve_rules(rules: list[dict], response_ids: Sequence[int]) -> list[dict]:
    """Rules with 1-based response numbers turned into these response ids."""
    return [{k: (response_ids[v - 1] if k in ("response", "greater", "than", "best", "worst") else v)
             for k, v in rule.items()} for rule in rules]


def rules_display(item: StudyItem) -> list[dict]:
    """The stored rules with response ids turned back into 1-based numbers (for pages and the API); a
    whole dialogue judged as a check is number 1."""
    order = {rid: n for n, rid in enumerate(item.item_responses.order_by("position").values_list("response_id", flat=True), 1)}
    if not order and judges_the_context(item.study) and item.conversation_id:
        order = {item.conversation_id: 1}
    return [{k: (order.get(v, v) if k in ("response", "greater", "than", "best", "worst") else v)
             for k, v in rule.items()} for rule in item.check_rules]


def checks_corpus(study: Study) -> Corpus:
    """A per-study corpus holding the check items' conversations (owned like the study, so the texts
    are visible only to its researchers)."""
    corpus, _ = Corpus.objects.get_or_create(
        slug=f"checks-{study.slug}"[:80],
        defaults={"title": f"Attention checks of {study.title}"[:200], "source_format": "checks",
                  "owner": study.experiment.owner})
    return corpus


def _text(value: Any, field: str, problems: Problems) -> str:
    if not isinstance(value, str) or not value.strip():
        problems.add(field, "must be non-empty text")
        return ""
    if len(value) > MAX_TEXT:
        problems.add(field, f"at most {MAX_TEXT} characters")
    return value.strip()


def turns_clean(value: Any, problems: Problems, field: str = "context") -> list[dict[str, str]]:
    """Turns as [{"speaker", "text"}] or as text, one turn per line ("A: hello" names the speaker);
    problems keyed ``field`` (the context, or a compared conversation)."""
    if isinstance(value, str):
        lines = [line.strip() for line in value.splitlines() if line.strip()]
        value = []
        for n, line in enumerate(lines):
            speaker, sep, text = line.partition(":")
            if sep and speaker and len(speaker) <= 20 and text.strip():
                value.append({"speaker": speaker.strip(), "text": text.strip()})
            else:
                value.append({"speaker": "A" if n % 2 == 0 else "B", "text": line})
    if not isinstance(value, list) or not value:
        problems.add(field, "give the conversation, one turn per line")
        return []
    turns = []
    for i, turn in enumerate(value):
        if not isinstance(turn, Mapping):
            problems.add(f"{field}[{i}]", "each turn is {\"speaker\": ..., \"text\": ...}")
            continue
        turns.append({"speaker": str(turn.get("speaker") or ("A" if i % 2 == 0 else "B"))[:40],
                      "text": _text(turn.get("text"), f"{field}[{i}].text", problems)})
    return turns


def item_problems(study: Study, *, kind: Any, context: Any, responses: Any, rules: Any,
                         reference: Any, reference_value: Any, shown_counts: set[int] | None,
                         whole: bool | None = None) -> tuple[dict[str, Any], Problems]:
    """``shown_counts``: how many responses the study's items show (``regular_shown_counts``), which a check
    item must match; None for practice items, which come before the items. ``whole``: the written conversation
    is judged whole (None: as the study's check items, ``judges_the_context``)."""
    problems = Problems()
    if kind not in CheckKind.values:
        problems.add("kind", f"one of {', '.join(CheckKind.values)}")
    turns = turns_clean(context, problems)
    if judges_the_context(study) if whole is None else whole:  # the written dialogue is judged whole: it is number 1
        turns, turn_problems = unit_for(study).written_turns_clean(turns)
        problems.update({k: v for k, v in turn_problems.items() if k not in problems})
        cleaned_rules, rule_problems = rules_clean(study, rules, 1)
        problems.update({k: v for k, v in rule_problems.items() if k not in problems})
        return {"turns": turns, "texts": [], "rules": cleaned_rules, "reference": "", "reference_value": None}, problems
    if isinstance(responses, str):
        responses = [line for line in responses.splitlines() if line.strip()]
    if not isinstance(responses, list) or not responses:
        problems.add("responses", "give the responses to judge, one per line")
        responses = []
    elif len(responses) > MAX_RESPONSES:
        problems.add("responses", f"at most {MAX_RESPONSES} responses")
    texts = [_text(r, f"responses[{i}]", problems) for i, r in enumerate(responses)]
    design = design_for(study)
    if texts and (problem := design.check_item_problem(study.design_config, len(texts))
                  or (shown_counts is not None and shown_count_problem(len(texts), shown_counts))):
        problems.add("responses", problem)  # e.g. two responses for pairwise, tuple_size for BWS
    cleaned_rules, rule_problems = rules_clean(study, rules, len(texts)) if texts else ([], {})
    problems.update({k: v for k, v in rule_problems.items() if k not in problems})
    ref_text, ref_value = "", None
    if design.anchored:  # the reference response and its value (fixed for RME, given for BME)
        ref_text = _text(reference, "reference", problems)
        ref_value, problem = design.check_reference_value(study.design_config, reference_value)
        if problem:
            problems.add("reference_value", problem)
    return {"turns": turns, "texts": texts, "rules": cleaned_rules, "reference": ref_text,
            "reference_value": ref_value}, problems


def regular_shown_counts(study: Study) -> set[int]:
    """How many responses (or, in a design comparing whole conversations, conversations: the unit's
    ``shown_relation``) the study's regular items show (one number, unless drawn items vary it)."""
    return set(study.items.filter(check_kind="").annotate(n=Count(unit_for(study).shown_relation))
               .values_list("n", flat=True).distinct())


def counts_text(counts: set[int]) -> str:
    return " or ".join(map(str, sorted(counts)))


def shown_count_problem(n: int, counts: set[int]) -> str | None:
    """A check item that shows another number of responses than every regular item (one response among
    sets of four) is recognisable on sight; None when it fits (or no items are built yet)."""
    if not counts or n in counts:
        return None
    return (f"the study's items show {counts_text(counts)} responses; a check item must show as "
            f"many, or raters can tell it apart (got {n})")


def item_parts_clean(study: Study, *, context: Any, responses: Any, rules: Any, reference: Any = None,
                     reference_value: Any = None) -> tuple[dict[str, Any], dict[str, str]]:
    """A conversation, responses and rules checked exactly as a check item's (``check_item_create``),
    for other items scored by the same rules (practice items, ``studies.onboarding``): (cleaned
    parts, problems by field); rules keep 1-based response numbers. Practice comes before the items, so it
    may show another number of responses than they do."""
    return item_problems(study, kind=CheckKind.GOLD, context=context, responses=responses, rules=rules,
                         reference=reference, reference_value=reference_value, shown_counts=None,
                         whole=practice_judges_the_context(study))


def written_conversation_create(study: Study, prefix: str, number: int, data: dict[str, Any]
                                ) -> tuple[Conversation, list[Response], Response | None]:
    """A conversation written on the study page (``item_parts_clean``'s ``data``) in the study's checks
    corpus, as ``<prefix>-<n>`` (the first free n from ``number``, metadata ``{prefix: True}``): its
    responses to judge and, for magnitude designs, its reference response. Check and practice items
    both store theirs this way."""
    corpus = checks_corpus(study)
    system, _ = System.objects.get_or_create(name=CHECK_SYSTEM, defaults={
        "description": "Responses written for attention checks and gold items"})
    taken = set(corpus.conversations.values_list("external_id", flat=True))
    while f"{prefix}-{number}" in taken:
        number += 1
    conversation = Conversation.objects.create(corpus=corpus, external_id=f"{prefix}-{number}", turns=data["turns"],
                                               metadata={prefix: True})
    responses = [Response.objects.create(conversation=conversation, system=system, position=p, text=t)
                 for p, t in enumerate(data["texts"])]
    reference = None
    if data["reference"]:
        reference = Response.objects.create(conversation=conversation, system=system, position=len(responses),
                                            text=data["reference"], is_reference=True)
    return conversation, responses, reference


def _shown(value: Any) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def rules_text(rules: list[dict[str, Any]], criteria: Mapping[str, str] | None = None,
               noun: str = "Response") -> list[str]:
    """Rules with 1-based response numbers in the rater's words, one line per rule: responses by the
    letter raters see (A, B, ...), questions by their text ("How readable?: Response B: at most 2").
    A rule of a kind this does not know is shown with its keys, never dropped. The checks page and the
    Practice card (``studies.authoring.rule_rows``, which re-exports it) and the practice's expected answer
    (``studies.onboarding.selectors.expected_answer_text``) show rules this way. ``noun``: what the
    numbers name ("Conversation" for a check pair of whole conversations)."""
    def letter(n: Any) -> str:
        return f"{noun} {string.ascii_uppercase[n - 1]}" if isinstance(n, int) and 1 <= n <= 26 else f"{noun} ?"

    lines = []
    for rule in rules:
        prefix = f"{(criteria or {}).get(rule['criterion'], rule['criterion'])}: " if rule.get("criterion") else ""
        if "greater" in rule:
            text = gettext("%(a)s above %(b)s") % {"a": letter(rule["greater"]), "b": letter(rule.get("than"))}
        elif "best" in rule or "worst" in rule:
            text = (gettext("%(a)s ranked best") % {"a": letter(rule["best"])} if "best" in rule
                    else gettext("%(a)s ranked worst") % {"a": letter(rule["worst"])})
        elif "response" in rule and "value" in rule:
            text = f"{letter(rule['response'])}: {_shown(rule['value'])}"
        elif "response" in rule and ("min" in rule or "max" in rule):
            low, high = rule.get("min"), rule.get("max")
            bound = (gettext("from %(low)s to %(high)s") % {"low": _shown(low), "high": _shown(high)}
                     if low is not None and high is not None
                     else gettext("at least %(low)s") % {"low": _shown(low)} if low is not None
                     else gettext("at most %(high)s") % {"high": _shown(high)})
            text = f"{letter(rule['response'])}: {bound}"
        elif "response" in rule and "label" in rule:
            text = f"{letter(rule['response'])}: {rule['label']}"
        elif "response" in rule and "turns" in rule:
            text = f"{letter(rule['response'])}: " + "; ".join(
                gettext("turn %(n)s: %(answer)s") % {
                    "n": int(t) + 1, "answer": a if isinstance(a, str) else (", ".join(map(str, a)) or gettext("none"))}
                for t, a in rule["turns"].items()) + (
                " " + gettext("(at least %(share)s of these turns)") % {"share": f"{rule['min_match']:.0%}"}
                if rule.get("min_match", 1.0) < 1 else "")
        elif "response" in rule and "labels" in rule:
            text = f"{letter(rule['response'])}: " + (", ".join(map(str, rule["labels"])) or gettext("none of these"))
        elif "response" in rule and "spans" in rule:
            marked = rule["spans"].get("spans") or []
            text = f"{letter(rule['response'])}: " + ("; ".join(
                gettext("characters %(start)s–%(end)s marked %(label)s") % s for s in marked) or gettext("nothing marked"))
            if marked and (rule["spans"].get("slack") or rule["spans"].get("min_overlap", 1.0) < 1.0):
                text += " " + gettext("(within %(slack)s characters, or overlapping by at least %(share)s)") % {
                    "slack": rule["spans"].get("slack", 0), "share": f"{rule['spans'].get('min_overlap', 1.0):.0%}"}
        else:
            text = ", ".join(f"{k} {letter(v) if k == 'response' else v}" for k, v in rule.items() if k != "criterion")
        lines.append(prefix + text)
    return lines
