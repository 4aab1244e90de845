"""Label aggregation of a study's categorical and multi-label criteria (studies.analysis.aggregation):
per criterion, the labels the configured method (``settings.LABEL_AGGREGATION_METHOD``) gives, every
method's accuracy on the gold and instructed check items whose rules name a label, and each rater's
competence by each method. Check items are aggregated with the rest (their answers are ordinary
answers; only their known label makes them a yardstick). Raters a reviewer excluded are left out.
Computed once per version of the ratings and kept in the cache."""
from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import Q, QuerySet

from studies.designs.common import DONE as DONE_STATUSES
from studies.models import CheckKind, Criterion, Rating, Study, StudyItem
from studies.reports import targets
from studies.reports.selectors import ratings_version

LABEL_KINDS = ("categorical", "multilabel")


def method_used() -> str:
    from studies.analysis.aggregation import DEFAULT_METHOD, METHODS

    method = getattr(settings, "LABEL_AGGREGATION_METHOD", DEFAULT_METHOD)
    return method if method in METHODS else DEFAULT_METHOD


def _truth(criterion: Criterion, options: list[str]) -> dict[str, dict[Any, str]]:
    """check kind -> task -> known label, from the check items' label rules for this criterion."""
    known: dict[str, dict[Any, str]] = {kind: {} for kind in CheckKind.values}
    for item_id, kind, rules in StudyItem.objects.filter(study_id=criterion.study_id, check_kind__gt="") \
            .values_list("pk", "check_kind", "check_rules"):
        for rule in rules or []:
            if rule.get("criterion") not in (None, "", criterion.name) or "response" not in rule:
                continue
            task = (item_id, rule["response"])
            if criterion.kind == "categorical" and "label" in rule:
                known[kind][task] = str(rule["label"])
            elif criterion.kind == "multilabel" and "labels" in rule:
                for option in options:
                    known[kind][(task, option)] = "yes" if option in rule["labels"] else "no"
    return known


def criterion_aggregation(criterion: Criterion, *, keep: int | None = None) -> dict[str, Any]:
    """One label criterion: its methods (title, accuracy on gold and instructed items), the labels of
    the method used, and competence per rater id and method. ``keep``: one excluded rater put back (for
    that rater's own page: their competence as before the exclusion)."""
    from studies.analysis import aggregation

    ratings = targets.with_targets(Rating.objects.filter(
        Q(assignment__excluded=False) | Q(assignment__rater_id=keep), criterion=criterion,
        assignment__status__in=DONE_STATUSES))
    rows = list(ratings.values_list("assignment__rater_id", "item_id", "target_id", "label", "labels", "target_system"))
    options = [str(o) for o in (criterion.options or {}).get("labels") or []]
    if criterion.kind == "multilabel":
        answers = aggregation.multilabel_rows(((r, (i, t), labels) for r, i, t, _, labels, _ in rows), options)
        order = ["no", "yes"]  # a tied option is not given: it needs more than half the raters
    else:
        answers = [(r, (i, t), label) for r, i, t, label, _, _ in rows]
        order = options  # a tie goes to the label listed first in the criterion
    frame = aggregation.answers_frame(answers)
    truth = _truth(criterion, options)
    used = method_used()
    methods, competence, labels, delivered = [], {}, {}, []
    for method, title in aggregation.METHODS.items():
        result = aggregation.aggregate(frame, method, order)
        methods.append({"method": method, "title": title, "used": method == used,
                        **{kind: aggregation.accuracy(result.labels, known) for kind, known in truth.items()}})
        for rater, value in result.competence.items():
            competence.setdefault(rater, {})[method] = value
        if method == used:
            labels = result.labels
            delivered = delivered_targets(criterion, rows, result, options)
    return {"criterion": criterion.name, "kind": criterion.kind, "method": used,
            "method_title": aggregation.METHODS[used], "methods": methods, "competence": competence,
            "labels": labels, "targets": delivered, "n_answers": len(rows), "n_raters": len({r for r, *_ in rows}),
            "has_truth": any(truth.values())}


def delivered_targets(criterion: Criterion, rows: list[tuple], result: Any, options: list[str]) -> list[dict[str, Any]]:
    """One entry per rated target, in item order: {item, position, check, target, system, answers, label,
    probability, probabilities}. Categorical: the label and its posterior probability, and every
    label's. Multi-label: the options given (P(yes) above ½, ties not given) and each option's P(yes);
    ``probability`` is the probability of the least certain option's verdict."""
    answers: dict[tuple[int, int], int] = {}
    systems: dict[tuple[int, int], str] = {}
    for _, item, target, _, _, system in rows:
        answers[(item, target)] = answers.get((item, target), 0) + 1
        systems[(item, target)] = system or ""
    items = dict(StudyItem.objects.filter(pk__in={i for i, _ in answers}).values_list("pk", "position"))
    checks = dict(StudyItem.objects.filter(pk__in={i for i, _ in answers}).values_list("pk", "check_kind"))
    out = []
    for (item, target), n in sorted(answers.items(), key=lambda pair: (items.get(pair[0][0], 0), pair[0][1])):
        task = (item, target)
        entry = {"item": item, "position": items.get(item, 0) + 1, "check": checks.get(item, ""), "target": target,
                 "system": systems[task], "answers": n}
        if criterion.kind == "multilabel":
            yes = {o: result.probabilities.get((task, o), {}).get("yes", 0.0) for o in options
                   if (task, o) in result.labels}
            given = [o for o in options if result.labels.get((task, o)) == "yes"]
            sure = [result.confidence((task, o)) for o in yes]
            entry.update(label=given, probabilities=yes, probability=min(sure) if sure else None)
        else:
            if task not in result.labels:
                continue
            entry.update(label=result.labels[task], probability=result.confidence(task),
                         probabilities=dict(result.probabilities.get(task, {})))
        out.append(entry)
    return out


def study_aggregation(study: Study, *, keep: int | None = None) -> list[dict[str, Any]]:
    """``criterion_aggregation`` for each label criterion of the study, cached per ratings version
    (``keep``: an excluded rater put back, for their own page only)."""
    criteria = list(study.criteria.filter(kind__in=LABEL_KINDS).order_by("position"))
    if not criteria:
        return []
    studies: QuerySet[Study] = Study.objects.filter(pk=study.pk)
    version = f"{ratings_version(studies)}:{method_used()}:{keep}"
    key = "aggregation:v2:" + hashlib.sha256(version.encode()).hexdigest()
    found = cache.get(key)
    if found is None:
        found = [criterion_aggregation(c, keep=keep) for c in criteria]
        cache.set(key, found, timeout=3600)
    return found
