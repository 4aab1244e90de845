"""Reads for reports and exports: ratings normalised per design, as a frame, per condition, a version of them for caches, and the reliability report."""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import Case, Count, F, FloatField, Max, Q, QuerySet, Sum, Value, When

from studies.designs import DESIGNS, NUMERIC_KINDS, design_for, designs_of, kind_for
from studies.designs.common import DONE as DONE_STATUSES
from studies.designs.common import Section
from studies.models import (
    Assignment,
    Criterion,
    Rater,
    Rating,
    Study,
)
from studies.pseudonyms import rater_pseudonym
from studies.reads import once, queryset_frame
from studies.reports import targets

if TYPE_CHECKING:
    import pandas as pd


EXPORT_FIELDS = (
    "experiment", "study", "design", "criterion", "conversation", "system", "response", "rater", "platform",
    "value", "normalised_value", "normalisation", "rank", "seconds", "reference_value",
    "prior_rating_experience", "prior_agent_experience", "questionnaire", "assignment_status", "submitted_at",
    "tuple",  # a best-worst tuple's position (studies.designs.bws_tuples), empty for other designs
)


def normalised_ratings(studies: QuerySet[Study], *, numeric_only: bool = True,
                       with_excluded: bool = False, keep: int | None = None) -> QuerySet[Rating]:
    """Ratings of the studies with ``normalised_value`` computed in the database as each design says
    (``StudyDesign.normalised_value``: magnitude designs log10(max(value, 1) / reference value), Bard
    et al. 1996; BWS m + 1 − rank, m targets ranked; the value itself otherwise); ``normalisation``
    names which. ``numeric_only``: only the criteria answered by a number (the scale analyses); the
    export asks for every kind (labels and texts have ``value`` None). Raters a reviewer excluded
    (``Assignment.excluded``, studies.rating.decisions) are left out unless ``with_excluded`` (the
    export keeps them and says so); ``keep``: one excluded rater (an id) put back, the others left out
    (that rater's own page shows the figures that justified the exclusion)."""
    shown = targets.SHOWN  # m of an item: the responses, dialogues or chats it shows
    # Labels and free text (studies.designs.kinds) are never read as numbers: their own sections count them.
    ratings = Rating.objects.filter(assignment__study__in=studies, item__check_kind="")
    ratings = ratings if with_excluded else ratings.filter(Q(assignment__excluded=False) | Q(assignment__rater_id=keep))
    ratings = targets.with_targets(ratings.filter(criterion__kind__in=NUMERIC_KINDS) if numeric_only else ratings)
    normalised = [(design.key, design.normalisation, rule) for design in DESIGNS.values()
                  if (rule := design.normalised_value(shown)) is not None]
    return ratings.annotate(  # no check items
        normalised_value=Case(
            *[When(Q(assignment__study__design=key) & condition, then=expression)
              for key, _, (condition, expression) in normalised],
            default=F("value"), output_field=FloatField(),
        ),
        normalisation=Case(
            *[When(assignment__study__design=key, then=Value(label)) for key, label, _ in normalised],
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


FLOAT_COLUMNS = ("value", "score", "seconds", "total_seconds")


def ratings_frame(studies: QuerySet[Study], *, raw_ids: bool = False, keep: int | None = None) -> pd.DataFrame:
    """Every rating of submitted assignments as one DataFrame (one query, no per-row Python), with
    the normalised score in ``score``; the input of the reliability report. ``rater_name`` is the
    rater's pseudonym (``rater_pseudonym``) unless ``raw_ids``. ``keep``: an excluded rater put back
    (``normalised_ratings``). Shared inside a ``one_read`` block: callers copy before changing it."""
    return once("frame", studies, lambda: _ratings_frame(studies, raw_ids=raw_ids, keep=keep), raw_ids, keep)


def _ratings_frame(studies: QuerySet[Study], *, raw_ids: bool, keep: int | None) -> pd.DataFrame:
    import pandas as pd

    frame = rating_rows(studies, keep=keep).drop(columns="response")  # a copy: the rows are shared
    for design in designs_of(studies):  # judgments that are not Ratings, as ratings (a rater's best-worst scores)
        extra = design.report_frame(design.studies_of(studies), keep=keep)
        if extra is not None and len(extra):
            frame = pd.concat([frame, extra], ignore_index=True) if len(frame) else extra
    if not raw_ids and len(frame):  # one HMAC per rater, joined back without a per-row loop
        pairs = frame[["experiment", "rater"]].drop_duplicates()
        pairs = pairs.assign(rater_name=[rater_pseudonym(e, r) for e, r in pairs.itertuples(index=False)])
        frame = frame.drop(columns="rater_name").merge(pairs, on=["experiment", "rater"], how="left")
    for column in FLOAT_COLUMNS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return frame


def rating_rows(studies: QuerySet[Study], *, keep: int | None = None) -> pd.DataFrame:
    """The Ratings of submitted assignments (``RATINGS_FRAME_COLUMNS`` with the raters' own ids in
    ``rater_name``, and ``response``: the rated response's id, None for a dialogue), floats cast; one
    query, read once per ``one_read`` block and shared by the report's frame and the position effects
    (read-only: copy to change)."""
    return once("rating-rows", studies, lambda: _rating_rows(studies, keep=keep), keep)


# Texts every row repeats (a study's slug, design and unit, a criterion's name, a rater's own id): read by
# id and named from their own few rows, so the query returns and the frame builds numbers, not 70,000 texts
_NAMED = {"study": ("study_id", "slug"), "design": ("study_id", "design"), "target": ("study_id", "unit"),
          "criterion": ("criterion_id", "name"), "rater_name": ("rater", "external_id")}


def _rating_rows(studies: QuerySet[Study], *, keep: int | None) -> pd.DataFrame:
    import pandas as pd

    columns = {**RATINGS_FRAME_COLUMNS, "response": "response_id"}
    read = {"study_id": "assignment__study_id", "criterion_id": "criterion_id",
            **{k: v for k, v in columns.items() if k not in _NAMED}}
    rows = (normalised_ratings(studies, keep=keep).filter(assignment__status__in=DONE_STATUSES)
            .values_list(*read.values()))
    frame = queryset_frame(rows, list(read), floats=FLOAT_COLUMNS)
    if frame.empty:
        frame = pd.DataFrame.from_records([], columns=list(columns))
    else:
        owners = {"study_id": Study.objects.filter(pk__in=studies.values("pk")),
                  "criterion_id": Criterion.objects.filter(study__in=studies.values("pk")),
                  "rater": Rater.objects.filter(assignments__study__in=studies.values("pk")).distinct()}
        for key, owned in owners.items():
            fields = [field for by, field in _NAMED.values() if by == key]
            texts = {row[0]: row[1:] for row in owned.order_by().values_list("pk", *fields)}
            code, pks = pd.factorize(frame[key])
            for name, (by, field) in _NAMED.items():
                if by == key:
                    column = pd.Series([texts[pk][fields.index(field)] for pk in pks])
                    frame[name] = column.take(code).set_axis(frame.index)
        frame = frame[list(columns)]
    for column in FLOAT_COLUMNS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return frame


def report_conditions(studies: QuerySet[Study]) -> list[dict[str, Any]]:
    """One entry per study, with its configured criteria (so an empty report still has its table cells)
    and what its design says about its scores (``report_facts``: Krippendorff's alpha level, ...)."""
    return [{"slug": s.slug, "title": s.title, "design": s.design, "benchmark": s.platform == Study.Platform.BENCHMARK,
             "criteria": [c.name for c in s.criteria.all() if kind_for(c).numeric], **design_for(s).report_facts(),
             # a choice design's judgments are not scores: its ICC cells say so, not "no submitted ratings"
             "icc_reason": CHOICES_NOT_SCORES.format(design=s.design) if design_for(s).report_replaces_icc() else ""}
            for s in studies.order_by("id").prefetch_related("criteria")]


CHOICES_NOT_SCORES = ("{design} judgments are choices, not scores: no ICC; see the system scores and the design's "
                      "own section (win rates, Bradley–Terry)")


def scale_criteria_exist(studies: QuerySet[Study]) -> bool:
    """Whether some criterion of these studies is answered on a scale (the ICC tables, rater quality and
    human-vs-metric correlations read only those; label and free-text criteria have their own tables)."""
    return any(kind_for(c).numeric for s in studies.prefetch_related("criteria") for c in s.criteria.all())


def scale_absent_reason(studies: QuerySet[Study], *, short: bool = False) -> str:
    """Why the scale analyses have no data: no criterion on a scale, or nothing submitted yet
    (``short``: the clause alone, for a line that says what was not estimated)."""
    if not scale_criteria_exist(studies):
        if short:
            return "no criterion is answered on a scale (labels and free text only)"
        return ("No criterion is answered on a scale (labels and free text only): there are no scores for "
                "ICCs, rater agreement or correlations; the label tables show the answers.")
    return "no submitted ratings yet" if short else "No submitted ratings yet."


def ratings_version(studies: QuerySet[Study]) -> str:
    """Changes whenever the ratings or the assignments that reports read change: counts, latest
    change, the sums of values and ranks (bulk updates leave updated_at alone), and how many
    assignments are in a status reports count (approving or rejecting one changes the report), which
    are excluded by a reviewer; and
    the designs' own judgments that are not Ratings (best-worst picks, A/B choices)."""
    return once("version", studies, lambda: _ratings_version(studies))


def _ratings_version(studies: QuerySet[Study]) -> str:
    rows = sorted(studies.values_list("pk", "design"))
    ids = [pk for pk, _ in rows]
    stamp = Rating.objects.filter(assignment__study_id__in=ids).aggregate(
        n=Count("id"), last=Max("updated_at"), values=Sum("value"), ranks=Sum("rank"))
    done = Assignment.objects.filter(study_id__in=ids).aggregate(
        n=Count("id"), done=Count("id", filter=Q(status__in=DONE_STATUSES)), last=Max("submitted_at"),
        excluded=Sum("id", filter=Q(excluded=True)))  # a reviewer's exclusion changes every report
    own = [v for design in designs_of({key for _, key in rows})
           for v in design.judgments_stamp(ids)]
    # what reports name besides the ratings: a renamed condition or question must not keep its old name
    names = hashlib.sha256(repr((
        sorted(Study.objects.filter(pk__in=ids).values_list("pk", "title", "experiment__title")),
        sorted(Criterion.objects.filter(study_id__in=ids).values_list("study_id", "name", "question", "options")),
    )).encode()).hexdigest()[:16]
    return ":".join(str(v) for v in (ids, *stamp.values(), *done.values(), *own, names))


def reliability_report(studies: QuerySet[Study], *, exclude_flagged: bool = False, raw_ids: bool = False,
                       keep: int | None = None):
    """The reliability report (studies.analysis.report) of these studies, computed once per version
    of their ratings and kept in the cache (the page and its figures share it). Raters are named by
    pseudonym unless ``raw_ids``. Its flag thresholds are the rater pages' (``settings.RATER_FLAGS``).
    ``keep``: one excluded rater put back (for that rater's own page only; reports never pass it)."""
    from studies.analysis.report import ReportOptions, build_report

    limits = settings.RATER_FLAGS
    options = ReportOptions(exclude_flagged=exclude_flagged, min_loo=limits["min_loo_r"],
                            max_straight=limits["max_straight_lining"])
    version = f"{ratings_version(studies)}:{exclude_flagged}:{raw_ids}:{options.min_loo}:{options.max_straight}:{keep}"
    key = "report:" + hashlib.sha256(version.encode()).hexdigest()
    report = cache.get(key)
    if report is None:
        report = build_report(ratings_frame(studies, raw_ids=raw_ids, keep=keep), report_conditions(studies), options)
        cache.set(key, report, timeout=3600)
    return report


def design_sections(studies: QuerySet[Study], report, *, exclude_flagged: bool = False) -> list[Section]:
    """Every registered design's own report sections for these studies (``StudyDesign.report_sections``:
    best-worst counting scores and split-half, pairwise win rates and Bradley–Terry strengths; empty
    data where no study is of the design), without the raters ``report`` excluded, computed once per
    version of the ratings and kept in the cache like the report."""
    version = f"{ratings_version(studies)}:{exclude_flagged}:{sorted(map(str, report.excluded_raters))}"
    key = "design-sections:" + hashlib.sha256(version.encode()).hexdigest()
    sections = cache.get(key)
    if sections is None:
        sections = [section for design in DESIGNS.values()
                    for section in design.report_sections(studies, exclude_flagged=exclude_flagged,
                                                          excluded_raters=report.excluded_raters)]
        cache.set(key, sections, timeout=3600)
    return sections
