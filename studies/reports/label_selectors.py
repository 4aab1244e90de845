"""The report's section for criteria that are not numbers (``studies.designs.kinds``): per criterion, label
counts and shares per system with Wilson intervals, agreement (categorical: nominal α and Fleiss' κ;
multi-label: one binary agreement per label), the chi-square (or Fisher) test of system and label, and
examples of free text and of the raters' reasons. Statistics are ``studies.analysis.labels``; this module
reads the ratings (one query per study set) and hands in plain frames."""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.db.models import QuerySet

from studies.designs import KINDS, NUMERIC_KINDS
from studies.designs.common import DONE as DONE_STATUSES
from studies.models import Criterion, Rating, Study
from studies.reports import targets

EXAMPLES_PER_SYSTEM = 3
OWN_REPORT_KINDS = tuple(key for key, kind in KINDS.items() if kind.own_report)  # e.g. spans: their own section


def label_report(studies: QuerySet[Study], *, exclude_flagged: bool = False,
                 excluded_raters: Collection[Any] = ()) -> list[dict[str, Any]]:
    """One entry per study and criterion whose kind is not a number (see the module); [] when none."""
    import pandas as pd

    from studies.analysis import labels as stats

    criteria = list(Criterion.objects.filter(study__in=studies).exclude(kind__in=(*NUMERIC_KINDS, *OWN_REPORT_KINDS))
                    .select_related("study").order_by("study_id", "position"))
    if not criteria:
        return []
    frame = answers_frame(criteria, exclude_flagged=exclude_flagged)
    if excluded_raters:
        frame = frame[~frame["rater"].isin(list(excluded_raters))]
    out = []
    for criterion in criteria:
        part = frame[frame["criterion"] == criterion.pk]
        labels = list((criterion.options or {}).get("labels") or [])
        entry: dict[str, Any] = {"study": criterion.study.title, "criterion": criterion.name, "kind": criterion.kind,
                                 "question": criterion.question, "n": len(part), "labels": labels,
                                 "raters": int(part["rater"].nunique())}
        if criterion.kind == "categorical":
            entry["shares"] = stats.label_shares(part, labels)
            entry["agreement"] = stats.categorical_agreement(part[["unit", "rater", "label"]], labels)
            table = pd.crosstab(part["system"], part["label"]).reindex(columns=labels, fill_value=0)
            entry["association"] = stats.system_association(table.to_numpy()) if len(part) else None
        elif criterion.kind == "multilabel":
            chosen, long = multilabel_rows(part)
            entry["shares"] = stats.label_shares(long[["system", "answer", "label"]], labels)
            entry["per_label"] = []  # one binary agreement and one system test per label
            for agreement in stats.multilabel_agreement(chosen[["unit", "rater", "labels"]], labels):
                present = chosen["labels"].map(lambda given, label=agreement["label"]: label in given)
                table = pd.crosstab(chosen["system"], present).reindex(columns=[True, False], fill_value=0)
                entry["per_label"].append({**agreement, "association": stats.system_association(table.to_numpy())})
        else:  # free text: examples, never a number
            entry["examples"] = _examples(part, "text")
        if (part["rationale"] != "").any():
            entry["reasons"] = _examples(part[part["rationale"] != ""], "rationale")
        out.append(entry)
    return out


def answers_frame(criteria: list[Criterion], *, exclude_flagged: bool = False):
    """The answers to these criteria of submitted and approved assignments (check items left out), one
    row per rating: ``criterion`` (id), ``answer`` (the rating's id), ``unit`` (the rated target),
    ``system`` ("(unknown)" where none), ``rater``, ``label``, ``labels``, ``text``, ``rationale``. The
    report's section and the live panel read the same rows."""
    import pandas as pd

    ratings = Rating.objects.filter(criterion__in=criteria, item__check_kind="", assignment__status__in=DONE_STATUSES,
                                    assignment__excluded=False)
    if exclude_flagged:
        ratings = ratings.exclude(assignment__checks_failed=True)
    rows = list(targets.with_targets(ratings).order_by("id").values_list(
        "criterion_id", "id", "target_id", "target_system", "assignment__rater_id", "label", "labels", "text",
        "rationale"))
    frame = pd.DataFrame(rows, columns=["criterion", "answer", "unit", "system", "rater", "label", "labels", "text",
                                        "rationale"])
    frame["system"] = frame["system"].fillna("(unknown)")
    return frame


def multilabel_rows(part):
    """A multi-label criterion's answers twice: ``chosen`` (one row per answer, ``labels`` a list) and
    ``long`` (one row per answer and chosen label in ``label``; an answer with none, "none of these",
    keeps one empty row)."""
    chosen = part.assign(labels=part["labels"].map(lambda given: list(given or [])))
    long = chosen.drop(columns="label").explode("labels").rename(columns={"labels": "label"})
    return chosen, long


def _examples(part, column: str) -> list[dict[str, Any]]:
    """The first few texts of each system (in the order they were given)."""
    return [{"system": system, "texts": list(group[column].head(EXAMPLES_PER_SYSTEM)), "n": len(group)}
            for system, group in part.groupby("system", sort=True)]


def label_frame(studies: QuerySet[Study]):
    """Every label answer of submitted assignments (no check items) as a DataFrame, one row per rating:
    ``study`` (slug), ``criterion``, ``kind``, ``labels`` (the chosen labels: one for a categorical
    answer), ``all_labels`` (the criterion's), ``unit`` (the rated target's id), ``target`` (the study's
    unit, as in ``selectors.ratings_frame``), ``system``, ``rater``. What the metrics app correlates
    with a metric's scores (point-biserial, AUC)."""
    import pandas as pd

    ratings = Rating.objects.filter(assignment__study__in=studies, item__check_kind="",
                                    assignment__status__in=DONE_STATUSES, assignment__excluded=False,
                                    criterion__kind__in=["categorical", "multilabel"])
    rows = list(targets.with_targets(ratings).order_by("id").values_list(
        "assignment__study__slug", "criterion__name", "criterion__kind", "label", "labels", "criterion__options",
        "target_id", "assignment__study__unit", "target_system", "assignment__rater_id"))
    frame = pd.DataFrame([(study, name, kind, [label] if kind == "categorical" else list(labels or []),
                           list((options or {}).get("labels") or []), unit, target, system, rater)
                          for study, name, kind, label, labels, options, unit, target, system, rater in rows],
                         columns=["study", "criterion", "kind", "labels", "all_labels", "unit", "target", "system",
                                  "rater"])
    return frame
