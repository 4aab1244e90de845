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
from django.db.models import QuerySet

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


def criterion_aggregation(criterion: Criterion) -> dict[str, Any]:
    """One label criterion: its methods (title, accuracy on gold and instructed items), the labels of
    the method used, and competence per rater id and method."""
    from studies.analysis import aggregation

    ratings = targets.with_targets(Rating.objects.filter(
        criterion=criterion, assignment__status__in=DONE_STATUSES, assignment__excluded=False))
    rows = list(ratings.values_list("assignment__rater_id", "item_id", "target_id", "label", "labels"))
    options = [str(o) for o in (criterion.options or {}).get("labels") or []]
    if criterion.kind == "multilabel":
        answers = aggregation.multilabel_rows(((r, (i, t), labels) for r, i, t, _, labels in rows), options)
    else:
        answers = [(r, (i, t), label) for r, i, t, label, _ in rows]
    frame = aggregation.answers_frame(answers)
    truth = _truth(criterion, options)
    used = method_used()
    methods, competence, labels = [], {}, {}
    for method, title in aggregation.METHODS.items():
        result = aggregation.aggregate(frame, method)
        methods.append({"method": method, "title": title, "used": method == used,
                        **{kind: aggregation.accuracy(result.labels, known) for kind, known in truth.items()}})
        for rater, value in result.competence.items():
            competence.setdefault(rater, {})[method] = value
        if method == used:
            labels = result.labels
    return {"criterion": criterion.name, "kind": criterion.kind, "method": used,
            "method_title": aggregation.METHODS[used], "methods": methods, "competence": competence,
            "labels": labels, "n_answers": len(rows), "n_raters": len({r for r, *_ in rows}),
            "has_truth": any(truth.values())}


def study_aggregation(study: Study) -> list[dict[str, Any]]:
    """``criterion_aggregation`` for each label criterion of the study, cached per ratings version."""
    criteria = list(study.criteria.filter(kind__in=LABEL_KINDS).order_by("position"))
    if not criteria:
        return []
    studies: QuerySet[Study] = Study.objects.filter(pk=study.pk)
    version = f"{ratings_version(studies)}:{method_used()}"
    key = "aggregation:" + hashlib.sha256(version.encode()).hexdigest()
    found = cache.get(key)
    if found is None:
        found = [criterion_aggregation(c) for c in criteria]
        cache.set(key, found, timeout=3600)
    return found
