"""The reads and the report of the best-worst tuples design (``studies.designs.bws_tuples``;
Kiritchenko & Mohammad 2016, 2017; STATISTICS.md §2).

Scores (counting): (#best − #worst) / #appearances per response over all annotations, in [−1, 1];
per system the mean of its responses' scores with a t 95% CI over responses. Reliability: split-half
(annotations of each tuple split at random into halves, each half scored by counting, Spearman and
Pearson between halves; mean and SD over 100 seeded trials; Spearman-Brown 2r/(1+r) of the mean
Spearman). For the seed report's tables (ICCs, Table 9, ANOVA), a rater's score of a response is
the mean over that rater's appearances of it of +1 (best), −1 (worst), 0 (neither).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from django.db.models import Count, Max, Q, QuerySet, Sum

from studies.designs.common import DONE
from studies.models import BestWorstChoice, Study, StudyItem, StudyItemResponse
from studies.pseudonyms import rater_pseudonym
from studies.reads import once, queryset_frame

if TYPE_CHECKING:
    import pandas as pd

KEY = "bws_tuples"
SPLIT_HALF_TRIALS = 100
SPLIT_HALF_SEED = 0
NORMALISATION = "best=+1, worst=-1, other=0 (counting)"

ANNOTATION_COLUMNS = {
    "choice": "id", "study": "assignment__study__slug", "criterion": "criterion__name", "item": "item_id",
    "assignment": "assignment_id", "rater": "assignment__rater_id", "rater_name": "assignment__rater__external_id",
    "platform": "assignment__rater__platform", "experiment": "assignment__study__experiment_id",
    "experiment_slug": "assignment__study__experiment__slug", "best": "best_id", "worst": "worst_id",
    "seconds": "seconds", "total_seconds": "assignment__total_seconds",
    "prior_rating_experience": "assignment__rater__prior_rating_experience",
    "prior_agent_experience": "assignment__rater__prior_agent_experience",
    "questionnaire": "assignment__rater__questionnaire", "assignment_status": "assignment__status",
    "submitted_at": "assignment__submitted_at", "failed_checks": "assignment__checks_failed",
}
# read for the export only (``done_only=False``): each goes through a converter per row (a JSON parse, an
# aware datetime), which the report's reads do not need
EXPORT_ONLY = ("questionnaire", "submitted_at")
MEMBER_COLUMNS = {"item": "item_id", "unit": "response_id", "system": "response__system__name",
                  "conversation": "response__conversation__external_id"}


def annotation_rows(studies: QuerySet[Study], *, done_only: bool = True, keep: int | None = None) -> pd.DataFrame:
    """One row per member of every annotated tuple (choice × member, two queries): the choice's
    columns (``ANNOTATION_COLUMNS``; ``EXPORT_ONLY`` ones only with ``done_only=False``), the member (unit = response id, its system and conversation),
    ``rank`` (1 best, tuple size worst, 2 otherwise: counting needs only best and worst) and
    ``score`` (+1 best, −1 worst, 0 otherwise). ``done_only``: submitted, not excluded (but ``keep``,
    one excluded rater's id put back for their own page). Read once per ``one_read`` block (the
    report's frame and the tuples section share it)."""
    return once("bws-annotations", studies, lambda: _annotation_rows(studies, done_only=done_only, keep=keep),
                done_only, keep)


def _annotation_rows(studies: QuerySet[Study], *, done_only: bool, keep: int | None) -> pd.DataFrame:
    import pandas as pd

    choices = BestWorstChoice.objects.filter(assignment__study__in=studies, assignment__study__design=KEY)
    if done_only:
        choices = choices.filter(Q(assignment__excluded=False) | Q(assignment__rater_id=keep),
                                 assignment__status__in=DONE)
    columns = {k: v for k, v in ANNOTATION_COLUMNS.items() if not done_only or k not in EXPORT_ONLY}
    frame = queryset_frame(choices.values_list(*columns.values()), list(columns))
    if frame.empty:
        return frame.assign(**{k: pd.Series(dtype=object) for k in (*MEMBER_COLUMNS, "rank", "score", "size")})
    members = queryset_frame(StudyItemResponse.objects.filter(item_id__in=frame["item"].unique().tolist())
                             .values_list(*MEMBER_COLUMNS.values()), list(MEMBER_COLUMNS))
    members["size"] = members.groupby("item")["unit"].transform("size")
    frame = frame.merge(members, on="item", how="inner")
    is_best, is_worst = frame["unit"] == frame["best"], frame["unit"] == frame["worst"]
    frame["rank"] = np.where(is_best, 1, np.where(is_worst, frame["size"], 2))
    frame["score"] = is_best.astype(float) - is_worst.astype(float)
    for column in ("seconds", "total_seconds"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return frame


def report_frame(studies: QuerySet[Study], *, keep: int | None = None) -> pd.DataFrame:
    """Rows for the seed report's frame (``selectors.RATINGS_FRAME_COLUMNS``): one per rater ×
    response × criterion, ``score`` = that rater's mean of +1/−1/0 over their appearances of the
    response (a rater may meet one response in two tuples)."""
    import pandas as pd

    frame = annotation_rows(studies, keep=keep)
    columns = ["study", "design", "criterion", "unit", "system", "item", "rater", "rater_name", "assignment",
               "experiment", "value", "rank", "score", "seconds", "total_seconds", "prior_rating_experience",
               "prior_agent_experience", "failed_checks"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    keys = ["study", "criterion", "assignment", "unit"]
    first = ["system", "item", "rater", "rater_name", "experiment", "seconds", "total_seconds",
             "prior_rating_experience", "prior_agent_experience", "failed_checks"]
    grouped = frame.groupby(keys, sort=False).agg(score=("score", "mean"), **{c: (c, "first") for c in first})
    grouped = grouped.reset_index()
    grouped["design"], grouped["value"], grouped["rank"] = KEY, grouped["score"], np.nan
    return grouped[columns]


def export_rows(studies: QuerySet[Study], *, raw_ids: bool = False) -> Iterator[dict[str, Any]]:
    """Export rows (``selectors.EXPORT_FIELDS``): one per member of each annotated tuple, all
    assignments as the ratings export does; ``tuple`` is the tuple's position, ``value`` +1 best,
    −1 worst, 0 otherwise, ``rank`` 1 best, tuple size worst (empty otherwise); ``assignment`` (its id)
    is for the export's check columns and is not a column itself. Plain rows from two queries, no
    DataFrame: the export is streamed by the web process, which never loads pandas."""
    columns = list(ANNOTATION_COLUMNS)
    choices = [dict(zip(columns, row, strict=True)) for row in BestWorstChoice.objects.filter(
        assignment__study__in=studies, assignment__study__design=KEY).values_list(*ANNOTATION_COLUMNS.values())]
    if not choices:
        return
    items = {c["item"] for c in choices}
    members: dict[int, list[tuple]] = {}
    for item, unit, system, conversation in StudyItemResponse.objects.filter(item_id__in=list(items)) \
            .values_list(*MEMBER_COLUMNS.values()):
        members.setdefault(item, []).append((unit, system, conversation))
    positions = dict(StudyItem.objects.filter(pk__in=list(items)).values_list("pk", "position"))
    rows = [(c, member) for c in choices for member in members.get(c["item"], ())]
    rows.sort(key=lambda r: (r[0]["study"], r[0]["assignment"], r[0]["item"], r[0]["criterion"], r[1][0]))
    names: dict[tuple[int, int], str] = {}
    for c, (unit, system, conversation) in rows:
        key = (c["experiment"], c["rater"])
        rater = c["rater_name"] if raw_ids else names.get(key) or names.setdefault(key, rater_pseudonym(*key))
        score = 1.0 if unit == c["best"] else -1.0 if unit == c["worst"] else 0.0
        yield {"experiment": c["experiment_slug"], "study": c["study"], "design": KEY,
               "criterion": c["criterion"], "conversation": conversation, "system": system,
               "response": int(unit), "rater": rater, "platform": c["platform"], "value": score,
               "normalised_value": score, "normalisation": NORMALISATION,
               "rank": (1 if score > 0 else len(members[c["item"]])) if score != 0 else None,
               "seconds": None if c["seconds"] is None else float(c["seconds"]), "reference_value": None,
               "prior_rating_experience": c["prior_rating_experience"],
               "prior_agent_experience": c["prior_agent_experience"], "questionnaire": c["questionnaire"],
               "assignment_status": c["assignment_status"], "submitted_at": c["submitted_at"],
               "tuple": positions.get(c["item"]), "assignment": int(c["assignment"])}


def choices_per_study(study_ids: Iterable[int]) -> dict[int, int]:
    """Study id -> best-worst picks stored (one per tuple × criterion × rater), for progress."""
    return dict(BestWorstChoice.objects.filter(assignment__study_id__in=list(study_ids)).values("assignment__study_id")
                .annotate(n=Count("id")).values_list("assignment__study_id", "n"))


def choices_stamp(study_ids: Iterable[int]) -> tuple:
    """Changes whenever a best-worst pick of these studies changes (part of the report's and the
    live panel's cache key, ``selectors.ratings_version``): count, latest change, sums of the picks."""
    stamp = BestWorstChoice.objects.filter(assignment__study_id__in=list(study_ids)).aggregate(
        n=Count("id"), last=Max("updated_at"), best=Sum("best_id"), worst=Sum("worst_id"))
    return tuple(stamp.values())


def _finite(value: Any) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def design_summary(studies: QuerySet[Study]) -> dict[str, dict[str, Any]]:
    """Per bws_tuples study: responses, tuples, appearances per response, pair co-occurrence."""
    import pandas as pd

    from studies.analysis import bws

    out: dict[str, dict[str, Any]] = {}
    for study in studies.filter(design=KEY).order_by("id"):
        rows = list(StudyItemResponse.objects.filter(item__study=study, item__check_kind="")
                    .values_list("item_id", "response_id").order_by("item_id", "position"))
        if not rows:
            out[study.slug] = {"responses": 0, "tuples": 0}
            continue
        frame = pd.DataFrame(rows, columns=["item", "unit"])
        codes, units = pd.factorize(frame["unit"])
        frame["code"] = codes
        size = study.design_config["tuple_size"]
        tuples = frame.groupby("item")["code"].apply(list)
        tuples = np.array([t for t in tuples if len(t) == size])
        appearances = np.bincount(codes, minlength=len(units))
        sd = bws.pair_count_sd(tuples, len(units)) if len(tuples) and len(units) > 1 else None
        out[study.slug] = {"responses": len(units), "tuples": int(frame["item"].nunique()), "tuple_size": size,
                           "appearances_min": int(appearances.min()), "appearances_max": int(appearances.max()),
                           "pair_mean": (len(tuples) * size * (size - 1) / 2) / (len(units) * (len(units) - 1) / 2),
                           "pair_sd": sd}
    return out


def section(frame: pd.DataFrame, *, trials: int = SPLIT_HALF_TRIALS, seed: int = SPLIT_HALF_SEED) -> dict[str, Any]:
    """Counting scores per response and per system, and split-half reliability, of one condition ×
    criterion's annotation rows (``annotations``)."""
    from studies.analysis import bws

    table = bws.counting_scores(frame["unit"], frame["rank"], frame["choice"])
    system_of = frame.drop_duplicates("unit").set_index("unit")["system"]
    table = table.assign(system=system_of.reindex(table.index).to_numpy()).sort_values("score", ascending=False)
    columns = ("system", "appearances", "best", "worst", "score")  # columns, not iterrows: a Series per row is slow
    responses = [{"response": int(unit), "system": system, "appearances": int(appearances), "best": int(best),
                  "worst": int(worst), "score": float(score)}
                 for unit, system, appearances, best, worst, score in zip(table.index, *(table[c] for c in columns),
                                                                          strict=True)]
    systems = bws.group_means_ci(table["score"], table["system"]).sort_values("mean", ascending=False)
    system_rows = [{"system": name, "n": int(n), "mean": float(mean), "sd": _finite(sd), "low": _finite(low),
                    "high": _finite(high)}
                   for name, n, mean, sd, low, high in zip(systems.index, *(systems[c] for c in ("n", "mean", "sd", "low", "high")),
                                                            strict=True)]
    per_tuple = frame.drop_duplicates("choice").groupby("item").size()
    out = {"annotations": int(frame["choice"].nunique()), "raters": int(frame["rater"].nunique()),
           "annotations_per_tuple": {"mean": float(per_tuple.mean()), "min": int(per_tuple.min()),
                                     "max": int(per_tuple.max())},
           "responses": responses, "systems": system_rows, "split_half": None, "note": ""}
    if not (per_tuple >= 2).any():
        out["note"] = "split-half needs a tuple annotated at least twice"
        return out
    try:
        result = bws.split_half_reliability(frame["unit"], frame["rank"], frame["item"], frame["choice"],
                                            trials=trials, seed=seed)
    except ValueError as error:  # e.g. fewer than two responses scored in both halves
        out["note"] = f"split-half cannot be computed yet: {error}"
        return out
    values = {k: _finite(v) if isinstance(v, float) else v for k, v in result.__dict__.items()}
    if values["spearman_mean"] is None:
        out["note"] = "split-half is undefined for these annotations (no variation within a half)"
    out["split_half"] = values
    return out


def tuples_report(studies: QuerySet[Study], *, exclude_raters: Iterable[Any] = (),
                  trials: int = SPLIT_HALF_TRIALS, seed: int = SPLIT_HALF_SEED) -> list[dict[str, Any]]:
    """One entry per bws_tuples condition × criterion: the tuple design's properties, counting
    scores per response and per system (mean with a t 95% CI), split-half reliability."""
    studies = studies.filter(design=KEY)
    if not studies.exists():
        return []
    frame = annotation_rows(studies)
    if len(frame):
        frame = frame[~frame["rater"].isin(list(exclude_raters))]
    designs = design_summary(studies)
    out = []
    for study in studies.order_by("id").prefetch_related("criteria"):
        for criterion in (c.name for c in study.criteria.all()):
            part = frame[(frame["study"] == study.slug) & (frame["criterion"] == criterion)] if len(frame) else frame
            entry = {"condition": study.slug, "criterion": criterion, "design": designs.get(study.slug, {}),
                     "trials": trials, "seed": seed}
            entry.update(section(part, trials=trials, seed=seed) if len(part) else
                         {"annotations": 0, "responses": [], "systems": [], "split_half": None,
                          "note": "no submitted annotations yet"})
            out.append(entry)
    return out


def live_split_half(study: Study) -> list[dict[str, Any]]:
    """The live panel's split-half per criterion (submitted annotations so far)."""
    return [{"criterion": e["criterion"], "annotations": e["annotations"], "split_half": e["split_half"],
             "note": e["note"], "annotations_per_tuple": e.get("annotations_per_tuple")}
            for e in tuples_report(Study.objects.filter(pk=study.pk))]


def report_sheets(entries: Sequence[Mapping[str, Any]]) -> dict[str, pd.DataFrame]:
    """The tuple section as spreadsheet sheets (split-half, systems, responses); none when the
    report has no bws_tuples condition."""
    import pandas as pd

    if not entries:
        return {}
    keys = [{"condition": e["condition"], "criterion": e["criterion"]} for e in entries]
    split = [{**k, "annotations": e["annotations"], **(e["split_half"] or {}), "note": e["note"]}
             for k, e in zip(keys, entries, strict=True)]
    return {
        "BWS tuples split-half": pd.DataFrame(split),
        "BWS tuples systems": pd.DataFrame([{**k, **s} for k, e in zip(keys, entries, strict=True) for s in e["systems"]]),
        "BWS tuples responses": pd.DataFrame([{**k, **r} for k, e in zip(keys, entries, strict=True)
                                              for r in e["responses"]]),
    }
