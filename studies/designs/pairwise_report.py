"""Reads of the pairwise (A/B) design (``studies.designs.pairwise``): the comparisons as a frame, the
cached report (``studies.analysis.pairwise``: win rates, Bradley–Terry strengths, position bias,
Krippendorff's alpha), the export rows, the report's sheets and the live panel's agreement."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max, Q, QuerySet, Sum

from studies.designs.common import DONE
from studies.models import Assignment, Comparison, Study
from studies.pseudonyms import rater_pseudonym
from studies.reads import once, queryset_frame

if TYPE_CHECKING:
    import pandas as pd

KEY = "pairwise"

FRAME_COLUMNS = {
    "study": "assignment__study__slug", "criterion": "criterion__name", "item": "item_id",
    "conversation": "item__conversation__external_id", "rater": "assignment__rater_id",
    "experiment": "assignment__study__experiment_id", "assignment": "assignment_id",
    "left": "left_id", "right": "right_id", "left_system": "left__system__name",
    "right_system": "right__system__name", "choice": "choice", "seconds": "seconds",
    "failed_checks": "assignment__checks_failed",
}
EXPORT_FIELDS = (
    "experiment", "study", "criterion", "conversation", "item", "rater", "platform", "left_response",
    "right_response", "left_system", "right_system", "choice", "winner_system", "reason", "seconds",
    "assignment_status", "submitted_at", "excluded", "excluded_reason",
)


def pairwise_studies(studies: QuerySet[Study]) -> QuerySet[Study]:
    return studies.filter(design=KEY)


def comparisons(studies: QuerySet[Study], *, with_excluded: bool = False) -> QuerySet[Comparison]:
    """Judgments of submitted or approved assignments, check items left out, and raters a reviewer
    excluded (``Assignment.excluded``) unless ``with_excluded`` (the export keeps them and says so)."""
    found = Comparison.objects.filter(assignment__study__in=studies, assignment__status__in=DONE, item__check_kind="")
    return found if with_excluded else found.filter(assignment__excluded=False)


def comparisons_frame(studies: QuerySet[Study]) -> pd.DataFrame:
    """One row per judgment (the input of studies.analysis.pairwise), in one query, read once per
    ``one_read`` block."""
    return once("comparisons", studies,
                lambda: queryset_frame(comparisons(studies).values_list(*FRAME_COLUMNS.values()), list(FRAME_COLUMNS)))


def comparisons_version(studies: QuerySet[Study]) -> str:
    """Changes whenever a judgment, or an assignment status or check result the report reads, changes."""
    ids = sorted(studies.values_list("pk", flat=True))
    stamp = Comparison.objects.filter(assignment__study_id__in=ids).aggregate(n=Count("id"), last=Max("updated_at"))
    done = Assignment.objects.filter(study_id__in=ids).aggregate(
        done=Count("id", filter=Q(status__in=DONE)), failed=Count("id", filter=Q(checks_failed=True)),
        last=Max("submitted_at"), excluded=Sum("id", filter=Q(excluded=True)))
    return ":".join(str(v) for v in (ids, *stamp.values(), *done.values()))


def pairwise_report(studies: QuerySet[Study], *, exclude_flagged: bool = False, resamples: int = 1000,
                    seed: int = 0) -> list[dict[str, Any]]:
    """Per pairwise study: {pk, slug, title, n, excluded_raters, criteria: studies.analysis.pairwise.pairwise_report(...)},
    cached per version of its comparisons. Bootstrap over raters (items where a study has a single
    rater), seeded. ``exclude_flagged`` leaves out raters who failed the study's attention checks."""
    from studies.analysis.pairwise import pairwise_report as analyse
    out = []
    for study in pairwise_studies(studies).order_by("id"):
        one = Study.objects.filter(pk=study.pk)
        side_level = settings.RATER_FLAGS["position_p"]  # the review queue's threshold: one test on both pages
        version = f"{comparisons_version(one)}:{exclude_flagged}:{resamples}:{seed}:{side_level}"
        key = "pairwise-report:" + hashlib.sha256(version.encode()).hexdigest()
        entry = cache.get(key)
        if entry is None:
            frame = comparisons_frame(one)
            excluded = 0
            if exclude_flagged and len(frame):
                flagged = frame["failed_checks"].fillna(False).astype(bool)
                excluded = int(frame.loc[flagged, "rater"].nunique())
                frame = frame[~flagged]
            entry = {"pk": study.pk, "slug": study.slug, "title": study.title, "n": len(frame), "excluded_raters": excluded,
                     "criteria": analyse(frame, resamples=resamples, seed=seed, side_level=side_level)}
            for criterion in entry["criteria"]:  # raters by their per-experiment pseudonym, as in every report
                for row in criterion["rater_sides"]:
                    row["rater"] = rater_pseudonym(study.experiment_id, row["rater"])
            cache.set(key, entry, timeout=3600)
        out.append(entry)
    return out


def comparisons_export_rows(studies: QuerySet[Study], *, raw_ids: bool = False) -> Iterator[dict[str, Any]]:
    """One tidy row per judgment, streamed; raters by per-experiment pseudonym unless ``raw_ids``."""
    queryset = comparisons(studies, with_excluded=True).order_by("assignment__study_id", "assignment_id", "item__position",
                                             "criterion__position").values_list(
        "assignment__study__experiment__slug", "assignment__study__slug", "criterion__name",
        "item__conversation__external_id", "item_id", "assignment__rater__external_id", "assignment__rater__platform",
        "left_id", "right_id", "left__system__name", "right__system__name", "choice", "reason", "seconds",
        "assignment__status", "assignment__submitted_at", "assignment__study__experiment_id", "assignment__rater_id",
        "assignment__excluded", "assignment__exclusion_reason")
    for row in queryset.iterator(chunk_size=5000):
        (experiment, study, criterion, conversation, item, rater, platform, left, right, left_system, right_system,
         choice, reason, seconds, status, submitted, experiment_id, rater_id, excluded, why) = row
        winner = {"left": left_system, "right": right_system}.get(choice, "")
        yield dict(zip(EXPORT_FIELDS, (
            experiment, study, criterion, conversation, item,
            rater if raw_ids else rater_pseudonym(experiment_id, rater_id), platform, left, right, left_system,
            right_system, choice, winner, reason, seconds, status, submitted, excluded, why if excluded else ""),
            strict=True))


def pairwise_sheets(studies: QuerySet[Study], *, exclude_flagged: bool = False) -> dict[str, pd.DataFrame]:
    """The pairwise report as spreadsheet tables (none when no study is pairwise): win rates,
    Bradley–Terry strengths with CIs, position bias and alpha, one row per study × criterion (× pair or system)."""
    return pairwise_sheets_of(pairwise_report(studies, exclude_flagged=exclude_flagged))


def pairwise_sheets_of(entries: list[dict[str, Any]]) -> dict[str, pd.DataFrame]:
    """``pairwise_report`` entries as the report's spreadsheet tables (none without entries)."""
    import pandas as pd

    if not entries:
        return {}
    wins, strengths, checks = [], [], []
    for study in entries:
        for c in study["criteria"]:
            wins += [{"study": study["slug"], **r} for r in c["win_rates"]]
            bt = c["bt"] or {}
            strengths += [{"study": study["slug"], "criterion": c["criterion"], **s, "resampled_over": bt.get("over"),
                           "resamples": bt.get("resamples"), "dropped": bt.get("dropped"),
                           "degenerate": bt.get("degenerate"), "estimator": bt.get("estimator")} for s in bt.get("strengths", [])]
            bias, alpha = c["position_bias"], c["agreement"]
            checks.append({"study": study["slug"], "criterion": c["criterion"], "judgments": c["n"], "raters": c["raters"],
                           **{f"left_{k}" if k in ("ci_low", "ci_high", "p") else k: v for k, v in bias.items() if k != "n"},
                           "alpha_nominal": alpha["alpha"], "alpha_units": alpha["units"],
                           "bradley_terry_note": c["bt_error"] or ""})
    return {"Pairwise win rates": pd.DataFrame(wins), "Bradley-Terry": pd.DataFrame(strengths),
            "Position bias, alpha": pd.DataFrame(checks)}


def live_agreement(study: Study) -> list[dict[str, Any]]:
    """The study page's live panel for a pairwise study: per criterion, the submitted judgments,
    raters and Krippendorff's alpha (nominal, A/B/tie by system) — the report's agreement section,
    without its Bradley–Terry bootstrap (a thousand resamples the panel does not show; the caller
    caches per version). The ICC panel does not apply: a choice is not a score."""
    from studies.analysis.pairwise import agreement

    frame = comparisons_frame(Study.objects.filter(pk=study.pk))
    out = []
    for criterion, part in frame.groupby("criterion", sort=False):
        alpha = agreement(part.reset_index(drop=True))
        out.append({"criterion": criterion, "n": len(part), "raters": int(part["rater"].nunique()),
                    "alpha": alpha["alpha"], "units": alpha["units"], "note": alpha.get("note", "")})
    return out
