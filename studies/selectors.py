"""Every read that is more than a ``.get()``: visibility, progress, export rows.

Sized for 10^6 ratings: aggregation happens in the database; Python sees one row per item at most.
"""
from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from statistics import median
from typing import Any

import numpy as np
import pandas as pd
from django.conf import settings
from django.core.cache import cache
from django.db.models import Case, Count, F, FloatField, Max, OuterRef, Q, QuerySet, Subquery, Sum, Value, When
from django.db.models.functions import Coalesce, Greatest, Log

from studies import bws_tuples
from studies.models import (
    MAGNITUDE_DESIGNS,
    Assignment,
    AssignmentItem,
    Comparison,
    Corpus,
    Criterion,
    Design,
    Experiment,
    Invite,
    Rating,
    Response,
    Study,
    StudyItemResponse,
)
from studies.reports import targets

DONE_STATUSES = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)


def experiments_visible_to(user) -> QuerySet[Experiment]:
    """Experiments the user owns or was given access to; staff see all."""
    if not user.is_authenticated:
        return Experiment.objects.none()
    if user.is_staff:
        return Experiment.objects.all()
    return Experiment.objects.filter(Q(owner=user) | Q(collaborators=user)).distinct()


def studies_visible_to(user) -> QuerySet[Study]:
    return Study.objects.filter(experiment__in=experiments_visible_to(user)).select_related("experiment")


def raw_ids_allowed(user, experiment_ids: Iterable[int]) -> bool:
    """Whether the user may see raters' platform ids for these experiments: staff, or an owner or
    collaborator of every one of them (exports and reports show pseudonyms otherwise)."""
    if not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    wanted = set(experiment_ids)
    mine = Experiment.objects.filter(Q(owner=user) | Q(collaborators=user), pk__in=wanted).values_list("pk", flat=True)
    return set(mine) == wanted


def rater_pseudonym(experiment_id: int, rater_id: int) -> str:
    """A stable per-experiment pseudonym for a rater, e.g. ``R-3f9a2c1b``: an HMAC-SHA256 (keyed by the
    site's secret key) of the experiment and rater ids, so the same worker gets unrelated names in two
    experiments and nobody without the key can map a pseudonym back to a platform id. Eight hex digits
    keep collisions unlikely (about 1 in 10,000 for 1,000 raters in one experiment)."""
    message = f"concord-rater:{experiment_id}:{rater_id}".encode()
    return "R-" + hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()[:8]


def corpora_visible_to(user) -> QuerySet[Corpus]:
    if not user.is_authenticated:
        return Corpus.objects.none()
    if user.is_staff:
        return Corpus.objects.all()
    return Corpus.objects.filter(Q(owner=user) | Q(owner__isnull=True))


def corpus_systems(corpus: Corpus) -> list[tuple[str, int]]:
    """(system name, responses) in a corpus, most frequent first."""
    return list(
        corpus.conversations.values_list("responses__system__name").annotate(n=Count("responses"))
        .order_by("-n", "responses__system__name")
    )


def studies_progress(studies: QuerySet[Study] | list[Study]) -> dict[int, dict[str, Any]]:
    """Per study: items, target raters per item, item-ratings done vs needed (capped per item at the
    target), assignments by status, ratings stored, and completion time (mean, median seconds)."""
    ids = [s.pk for s in studies]
    targets = {s.pk: s.raters_per_item for s in studies}
    progress: dict[int, dict[str, Any]] = {
        pk: {"items": 0, "raters_per_item": targets[pk], "done": 0, "needed": 0, "percent": 0.0,
             "assignments": {status: 0 for status in Assignment.Status.values}, "ratings": 0,
             "mean_seconds": None, "median_seconds": None}
        for pk in ids
    }
    for pk, n in Study.objects.filter(pk__in=ids).annotate(n=Count("items", filter=Q(items__check_kind=""))).values_list("pk", "n"):
        progress[pk]["items"] = n
        progress[pk]["needed"] = n * targets[pk]
    rows = np.array(
        list(AssignmentItem.objects.filter(assignment__study_id__in=ids, answered_at__isnull=False,
                                           assignment__status__in=DONE_STATUSES, item__check_kind="")
             .values("assignment__study_id", "item_id").annotate(n=Count("id"))
             .values_list("assignment__study_id", "n")),
        dtype=np.int64,
    ).reshape(-1, 2)
    for pk in ids:
        counts = rows[rows[:, 0] == pk, 1]
        progress[pk]["done"] = int(np.minimum(counts, targets[pk]).sum())
    for pk, status, n in (Assignment.objects.filter(study_id__in=ids).values("study_id", "status")
                          .annotate(n=Count("id")).values_list("study_id", "status", "n")):
        progress[pk]["assignments"][status] = n
    for pk, n in (Rating.objects.filter(assignment__study_id__in=ids).values("assignment__study_id")
                  .annotate(n=Count("id")).values_list("assignment__study_id", "n")):
        progress[pk]["ratings"] = n
    if tuple_ids := [s.pk for s in studies if s.design == Design.BWS_TUPLES]:  # best-worst picks count as ratings
        for pk, n in bws_tuples.choices_per_study(tuple_ids).items():
            progress[pk]["ratings"] += n
    times: dict[int, list[float]] = {}
    for pk, seconds in Assignment.objects.filter(study_id__in=ids, status__in=DONE_STATUSES,
                                                 total_seconds__isnull=False).values_list("study_id", "total_seconds"):
        times.setdefault(pk, []).append(seconds)
    for pk, entry in progress.items():
        if entry["needed"]:
            entry["percent"] = round(100.0 * entry["done"] / entry["needed"], 1)
        if times.get(pk):
            entry["mean_seconds"] = sum(times[pk]) / len(times[pk])
            entry["median_seconds"] = median(times[pk])
    return progress


def study_progress(study: Study) -> dict[str, Any]:
    return studies_progress([study])[study.pk]


EXPORT_FIELDS = (
    "experiment", "study", "design", "criterion", "conversation", "system", "response", "rater", "platform",
    "value", "normalised_value", "normalisation", "rank", "seconds", "reference_value",
    "prior_rating_experience", "prior_agent_experience", "questionnaire", "assignment_status", "submitted_at",
    "tuple",  # a best-worst tuple's position (studies.bws_tuples), empty for other designs
)


def normalised_ratings(studies: QuerySet[Study]) -> QuerySet[Rating]:
    """Ratings of the studies with ``normalised_value`` computed in the database: magnitude designs
    log10(max(value, 1) / reference value) (Bard et al. 1996), BWS m + 1 − rank (m responses
    ranked), Likert the value itself; ``normalisation`` names which."""
    shown = Subquery(
        StudyItemResponse.objects.filter(item=OuterRef("item")).values("item").annotate(n=Count("id")).values("n")[:1]
    )
    shown = Coalesce(shown, targets.DIALOGUES_SHOWN)  # m of a dialogue-unit BWS item: the dialogues it ranks
    ratings = targets.with_targets(Rating.objects.filter(assignment__study__in=studies, item__check_kind=""))
    return ratings.annotate(  # no check items
        normalised_value=Case(
            When(assignment__study__design__in=MAGNITUDE_DESIGNS, item__reference_value__isnull=False,
                 then=Log(Value(10.0), Greatest(F("value"), Value(1.0))) - Log(Value(10.0), F("item__reference_value"))),
            When(assignment__study__design=Design.BWS, then=shown + Value(1.0) - F("rank")),
            default=F("value"), output_field=FloatField(),
        ),
        normalisation=Case(
            When(assignment__study__design__in=MAGNITUDE_DESIGNS, then=Value("log10(max(value,1)/reference)")),
            When(assignment__study__design=Design.BWS, then=Value("m+1-rank")),
            default=Value("none"),
        ),
    )


RATINGS_FRAME_COLUMNS = {
    "study": "assignment__study__slug", "design": "assignment__study__design", "criterion": "criterion__name",
    "unit": "target_id", "system": "target_system", "item": "item_id", "rater": "assignment__rater_id",
    "rater_name": "assignment__rater__external_id",
    "assignment": "assignment_id", "experiment": "assignment__study__experiment_id", "value": "value", "rank": "rank", "score": "normalised_value",
    "seconds": "seconds", "total_seconds": "assignment__total_seconds",
    "prior_rating_experience": "assignment__rater__prior_rating_experience",
    "prior_agent_experience": "assignment__rater__prior_agent_experience",
    "failed_checks": "assignment__checks_failed",
    "target": "assignment__study__unit",  # what ``unit`` holds: a response id, or a conversation id (dialogue)
}


def ratings_frame(studies: QuerySet[Study], *, raw_ids: bool = False) -> pd.DataFrame:
    """Every rating of submitted assignments as one DataFrame (one query, no per-row Python), with
    the normalised score in ``score``; the input of the reliability report. ``rater_name`` is the
    rater's pseudonym (``rater_pseudonym``) unless ``raw_ids``."""
    rows = (normalised_ratings(studies).filter(assignment__status__in=DONE_STATUSES)
            .values_list(*RATINGS_FRAME_COLUMNS.values()))
    frame = pd.DataFrame.from_records(list(rows), columns=list(RATINGS_FRAME_COLUMNS))
    if len(tuple_rows := bws_tuples.report_frame(studies)):  # per-rater best/worst scores (studies.bws_tuples)
        frame = pd.concat([frame, tuple_rows], ignore_index=True) if len(frame) else tuple_rows
    if not raw_ids and len(frame):  # one HMAC per rater, joined back without a per-row loop
        pairs = frame[["experiment", "rater"]].drop_duplicates()
        pairs = pairs.assign(rater_name=[rater_pseudonym(e, r) for e, r in pairs.itertuples(index=False)])
        frame = frame.drop(columns="rater_name").merge(pairs, on=["experiment", "rater"], how="left")
    for column in ("value", "score", "seconds", "total_seconds"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return frame


def report_conditions(studies: QuerySet[Study]) -> list[dict[str, Any]]:
    """One entry per study, with its configured criteria (so an empty report still has its table cells)."""
    return [{"slug": s.slug, "title": s.title, "design": s.design, "benchmark": s.platform == Study.Platform.BENCHMARK,
             "criteria": [c.name for c in s.criteria.all()]}
            for s in studies.order_by("id").prefetch_related("criteria")]


def ratings_version(studies: QuerySet[Study]) -> str:
    """Changes whenever the ratings or the assignments that reports read change: counts, latest
    change, the sums of values and ranks (bulk updates leave updated_at alone), and how many
    assignments are in a status reports count (approving or rejecting one changes the report); for
    bws_tuples and pairwise studies, also their picks and A/B choices, which are not Ratings."""
    rows = sorted(studies.values_list("pk", "design"))
    ids, designs = [pk for pk, _ in rows], {design for _, design in rows}
    stamp = Rating.objects.filter(assignment__study_id__in=ids).aggregate(
        n=Count("id"), last=Max("updated_at"), values=Sum("value"), ranks=Sum("rank"))
    done = Assignment.objects.filter(study_id__in=ids).aggregate(
        n=Count("id"), done=Count("id", filter=Q(status__in=DONE_STATUSES)), last=Max("submitted_at"))
    tuples = bws_tuples.choices_stamp(ids) if Design.BWS_TUPLES in designs else ()
    choices = (tuple(Comparison.objects.filter(assignment__study_id__in=ids).aggregate(
        n=Count("id"), last=Max("updated_at")).values()) if Design.PAIRWISE in designs else ())
    return ":".join(str(v) for v in (ids, *stamp.values(), *done.values(), *tuples, *choices))


def reliability_report(studies: QuerySet[Study], *, exclude_flagged: bool = False, raw_ids: bool = False):
    """The reliability report (studies.analysis.report) of these studies, computed once per version
    of their ratings and kept in the cache (the page and its figures share it). Raters are named by
    pseudonym unless ``raw_ids``."""
    from studies.analysis.report import ReportOptions, build_report

    version = f"{ratings_version(studies)}:{exclude_flagged}:{raw_ids}"
    key = "report:" + hashlib.sha256(version.encode()).hexdigest()
    report = cache.get(key)
    if report is None:
        report = build_report(ratings_frame(studies, raw_ids=raw_ids), report_conditions(studies),
                              ReportOptions(exclude_flagged=exclude_flagged))
        report.bws_tuples = bws_tuples.tuples_report(studies, exclude_raters=report.excluded_raters)
        cache.set(key, report, timeout=3600)
    return report


def study_item_takes(study: Study) -> dict[int, int]:
    """item id -> assignments holding it that still count towards its target (not abandoned or rejected)."""
    return dict(
        AssignmentItem.objects.filter(assignment__study=study)
        .exclude(assignment__status__in=[Assignment.Status.ABANDONED, Assignment.Status.REJECTED])
        .values("item").annotate(n=Count("id")).values_list("item", "n")
    )


RATER_CACHE_SECONDS = 300


def study_criteria(study: Study) -> list[Criterion]:
    """The study's criteria in order, cached per published study: the rater pages need them on every
    item GET and POST, and they are fixed when the study is created (the key carries published_at,
    and the timeout bounds how long an admin's edit takes to show). Drafts are read each time."""
    if study.published_at is None:
        return list(study.criteria.all())
    key = f"concord:criteria:{study.pk}:{study.published_at.timestamp()}"
    criteria = cache.get(key)
    if criteria is None:
        criteria = list(study.criteria.all())
        cache.set(key, criteria, timeout=RATER_CACHE_SECONDS)
    return criteria


def item_response_texts(item_id: int, response_ids: Iterable[int]) -> dict[int, str]:
    """Response id -> text for one study item's responses, cached per item (responses are never
    edited after import; every rater of the item reads the same texts)."""
    wanted = list(response_ids)
    key = f"concord:item-texts:{item_id}"
    texts = cache.get(key)
    if texts is None or any(rid not in texts for rid in wanted):
        texts = dict(Response.objects.filter(pk__in=wanted).order_by().values_list("pk", "text"))
        cache.set(key, texts, timeout=RATER_CACHE_SECONDS)
    return texts


def study_has_room(study: Study) -> bool:
    """True while some item of the study is below its target number of raters."""
    takes = study_item_takes(study)
    return any(takes.get(pk, 0) < study.raters_per_item
               for pk in study.items.filter(check_kind="").values_list("pk", flat=True))


def study_invites(study: Study, limit: int = 20) -> list[Invite]:
    """The study's most recent invitations, newest first (the study page lists them)."""
    return list(study.invites.order_by("-created_at", "-pk")[:limit])
