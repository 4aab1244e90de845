"""The study page's live panel for label criteria (categorical and multi-label, ``studies.designs.kinds``):
per criterion, the label counts and shares per system so far, and Krippendorff's α at the nominal level
once enough targets have two or more answers (multi-label: one binary α per label). The ICC panel does not
apply: a label is not a score. Statistics are ``studies.analysis.labels`` (shares p = k / n with Wilson
intervals; α as Krippendorff 2011, the report's), on the ratings of submitted and approved assignments,
check items left out, as in the report. The caller (``live_selectors``) caches per ratings version."""
from __future__ import annotations

from typing import Any

from studies.models import Criterion, Study
from studies.reports.label_selectors import answers_frame, multilabel_rows

LABEL_KINDS = ("categorical", "multilabel")
# α from a handful of doubly rated targets swings from one answer to the next; the panel waits for this many.
MIN_DOUBLE_RATED = 5


def live_labels(study: Study) -> list[dict[str, Any]]:
    """One entry per label criterion that has answers: ``shares`` (per system: n and, per label, count,
    share, ci95), ``units`` (targets with two or more answers), ``alpha`` (categorical; None until
    ``MIN_DOUBLE_RATED`` units) or ``per_label`` α (multi-label), and the shares ``figure`` (inline
    SVG). [] when the study has no label criterion or no answer to one yet."""
    criteria = list(Criterion.objects.filter(study=study, kind__in=LABEL_KINDS).order_by("position"))
    if not criteria:
        return []
    from studies.analysis import labels as stats
    from studies.reports.live_plots import label_shares_figure  # matplotlib only when something is drawn

    frame = answers_frame(criteria)
    out = []
    for criterion in criteria:
        part = frame[frame["criterion"] == criterion.pk]
        if part.empty:
            continue
        labels = list((criterion.options or {}).get("labels") or [])
        units = int((part.groupby("unit")["rater"].nunique() >= 2).sum())
        entry: dict[str, Any] = {"criterion": criterion.name, "question": criterion.question, "kind": criterion.kind,
                                 "labels": labels, "n": len(part), "raters": int(part["rater"].nunique()),
                                 "units": units, "min_units": MIN_DOUBLE_RATED, "enough": units >= MIN_DOUBLE_RATED}
        if criterion.kind == "categorical":
            entry["shares"] = stats.label_shares(part[["system", "label"]], labels)
            entry["alpha"] = (stats.categorical_agreement(part[["unit", "rater", "label"]], labels)["alpha"]
                              if entry["enough"] else None)
        else:
            chosen, long = multilabel_rows(part)
            entry["shares"] = stats.label_shares(long[["system", "answer", "label"]], labels)
            entry["per_label"] = ([{"label": r["label"], "alpha": r["alpha"]} for r in
                                   stats.multilabel_agreement(chosen[["unit", "rater", "labels"]], labels)]
                                  if entry["enough"] else [])
        entry["figure"] = label_shares_figure(entry)
        out.append(entry)
    return out
