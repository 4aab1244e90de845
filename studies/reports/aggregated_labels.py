"""The aggregated labels delivered: each rated target's label by the aggregation the report uses
(``aggregation_selectors``: Dawid–Skene by default, ``settings.LABEL_AGGREGATION_METHOD``) with its
posterior probability, the method, and each rater's competence, in the shapes the report, the items
browser, the exports and the API read. Raters a reviewer excluded are left out (as in the aggregation).

A categorical target's ``probability`` is the posterior probability of its label (the vote share for
majority vote); a multi-label target's ``label`` is the list of options given (P(yes) above ½) with each
option's P(yes) in ``probabilities``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db.models import QuerySet

from studies.models import Study
from studies.pseudonyms import rater_pseudonym
from studies.reports import aggregation_selectors

TABLE_FIELDS = ("study", "criterion", "kind", "item", "check", "system", "target", "answers", "aggregated_label",
                "probability", "method")
COMPETENCE_FIELDS = ("study", "criterion", "rater", "method", "competence", "used")


def label_text(label: Any) -> str:
    """A label as text: a multi-label answer's options joined by "; " ("(none)" for none)."""
    if isinstance(label, list):
        return "; ".join(str(x) for x in label) or "(none)"
    return str(label)


def study_labels(study: Study) -> list[dict[str, Any]]:
    """Per label criterion of the study: {criterion, kind, method, method_title, targets, competence,
    n_answers, n_raters} (``aggregation_selectors.study_aggregation``; competence keyed by rater id)."""
    return [{key: found[key] for key in ("criterion", "kind", "method", "method_title", "targets", "n_answers",
                                         "n_raters", "methods")} | {"competence": found["competence"]}
            for found in aggregation_selectors.study_aggregation(study)]


def competence_rows(study: Study, *, raw_ids: bool = False, names: dict[int, str] | None = None
                    ) -> list[dict[str, Any]]:
    """One row per criterion, rater and method: the rater's competence, and whether the report uses it."""
    names = names if names is not None else _names(study, raw_ids=raw_ids)
    rows = []
    for found in aggregation_selectors.study_aggregation(study):
        for rater, values in sorted(found["competence"].items(), key=lambda pair: names.get(pair[0], "")):
            for method in (m["method"] for m in found["methods"]):
                if method in values:
                    rows.append({"study": study.slug, "criterion": found["criterion"],
                                 "rater": names.get(rater, str(rater)), "method": method,
                                 "competence": values[method], "used": method == found["method"]})
    return rows


def _names(study: Study, *, raw_ids: bool) -> dict[int, str]:
    rows = study.assignments.values_list("rater_id", "rater__platform", "rater__external_id")
    return {r: f"{p}:{e}" if raw_ids else rater_pseudonym(study.experiment_id, r) for r, p, e in rows}


def table_rows(studies: Iterable[Study]) -> list[dict[str, Any]]:
    """``TABLE_FIELDS`` rows: every target of every label criterion of ``studies`` with its aggregated label."""
    rows = []
    for study in studies:
        for found in aggregation_selectors.study_aggregation(study):
            for t in found["targets"]:
                rows.append({"study": study.slug, "criterion": found["criterion"], "kind": found["kind"],
                             "item": t["position"], "check": t["check"], "system": t["system"], "target": t["target"],
                             "answers": t["answers"], "aggregated_label": label_text(t["label"]),
                             "probability": t["probability"], "method": found["method"]})
    return rows


def lookup(studies: QuerySet[Study]) -> dict[tuple[str, str, int, int], tuple[str, float | None, str]]:
    """(study slug, criterion, item id, target id) -> (label text, probability, method), for the export."""
    out = {}
    for study in studies:
        for found in aggregation_selectors.study_aggregation(study):
            for t in found["targets"]:
                out[(study.slug, found["criterion"], t["item"], t["target"])] = (
                    label_text(t["label"]), t["probability"], found["method"])
    return out


def browser_lines(study: Study, item_ids: list[int], columns: Callable[[Iterable[int]], dict]
                  ) -> dict[int, list[dict[str, Any]]]:
    """item id -> one line per label criterion: the method and, per target (keyed by the column id
    ``columns(target ids)`` maps it to, itself where not mapped), {label, probability}; for the items browser."""
    out: dict[int, list[dict[str, Any]]] = {}
    wanted = set(item_ids)
    found_all = aggregation_selectors.study_aggregation(study)
    column_of = columns({t["target"] for found in found_all for t in found["targets"] if t["item"] in wanted})
    for found in found_all:
        lines: dict[int, dict[str, Any]] = {}
        for t in found["targets"]:
            if t["item"] not in wanted:
                continue
            line = lines.setdefault(t["item"], {"criterion": found["criterion"], "method": found["method_title"],
                                                "values": {}})
            line["values"][column_of.get(t["target"], t["target"])] = {
                "label": label_text(t["label"]), "probability": t["probability"]}
        for item, line in lines.items():
            out.setdefault(item, []).append(line)
    return out


def report_criteria(study: Study, *, raw_ids: bool = False) -> list[dict[str, Any]]:
    """``aggregation_selectors.study_aggregation`` with each criterion's raters named (pseudonyms unless
    ``raw_ids``) and their competence by every method, for the report's and the queue's aggregation cards."""
    names = _names(study, raw_ids=raw_ids)
    out = []
    for found in aggregation_selectors.study_aggregation(study):
        raters = [{"name": names.get(rater, str(rater)), "values": [values.get(m["method"]) for m in found["methods"]]}
                  for rater, values in found["competence"].items()]
        targets = [{**t, "text": label_text(t["label"])} for t in found["targets"]]
        out.append({**found, "targets": targets, "raters": sorted(raters, key=lambda r: r["name"])})
    return out
