"""Best-worst scaling with tuples, for many items (design ``bws_tuples``; Kiritchenko & Mohammad
2016, 2017; STATISTICS.md §2).

The unit judged is a single response in its own context. At item build the chosen responses are
put into about factor·N tuples of ``tuple_size`` (3-5, default 4) by
``studies.analysis.bws.balanced_tuples``: every response in exactly factor·tuple_size tuples, pair
co-occurrence as even as possible (best of ``tries`` seeded draws by the SD of pair counts).

Storage, and why:
- a tuple is a ``StudyItem`` with no conversation (``conversation`` is empty): its members come from
  different conversations; the members are its ``StudyItemResponse`` rows (``position`` = order in
  the tuple), and each member is shown with ``member.conversation.turns`` as its context. The
  rater's shuffle of the members is ``AssignmentItem.response_order`` as in every design. A
  dialogue-level unit (``Study.unit``) plugs in at ``tuple_items_create``: tuples of conversation
  ids stored the same way once items can list conversations; the analysis below only sees ids.
- a judgment is a ``BestWorstChoice`` (assignment, tuple, criterion, best, worst), unique per
  (assignment, item, criterion): a double submit upserts the same row. Not Rating rows: one
  response is in several tuples and one rater may meet it twice, which Rating's unique
  (assignment, response, criterion) forbids.

Scores (counting): (#best − #worst) / #appearances per response over all annotations, in [−1, 1];
per system the mean of its responses' scores with a t 95% CI over responses. Reliability: split-half
(annotations of each tuple split at random into halves, each half scored by counting, Spearman and
Pearson between halves; mean and SD over 100 seeded trials; Spearman-Brown 2r/(1+r) of the mean
Spearman). For the seed report's tables (ICCs, Table 9, ANOVA), a rater's score of a response is
the mean over that rater's appearances of it of +1 (best), −1 (worst), 0 (neither).
"""
from __future__ import annotations

import string
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Max, QuerySet, Sum
from django.utils import timezone

from studies.analysis import bws
from studies.models import (
    Assignment,
    AssignmentItem,
    BestWorstChoice,
    Criterion,
    Design,
    Response,
    Study,
    StudyItem,
    StudyItemResponse,
)

SPLIT_HALF_TRIALS = 100
SPLIT_HALF_SEED = 0
NORMALISATION = "best=+1, worst=-1, other=0 (counting)"
KINDS = ("best", "worst")


def tuple_field(kind: str, criterion: str) -> str:
    """The form field of a tuple's best or worst pick for a criterion. The ``r0-`` prefix puts it
    among the fields the shared item page autosaves and re-displays (``r<digits>-…``); response
    ids start at 1, so it never clashes with a response's field."""
    return f"r0-{kind}-{criterion}"


# --- building the tuples (a write, called from services.study_items_build) -------------------------

def tuple_items_create(*, study: Study, units: Sequence[int]) -> int:
    """Replace the study's (non-check) items by balanced tuples of the responses ``units``; the
    caller holds the study row lock inside its transaction and has checked the study is a draft
    without raters. Deterministic for the same responses and ``design_config`` (its ``seed``).
    Returns the number of tuples."""
    config = study.design_config
    size = config["tuple_size"]
    responses = sorted(set(units))
    if len(responses) < size:
        raise ValidationError({"systems": f"tuples of {size} need at least {size} responses; "
                                          f"these choices give {len(responses)}"})
    tuples = bws.balanced_tuples(len(responses), size=size, factor=config["factor"], tries=config["tries"],
                                 seed=config["seed"])
    study.items.filter(check_kind="").delete()  # check items (studies.rating.checks) stay
    items = StudyItem.objects.bulk_create([StudyItem(study=study, conversation=None, position=i)
                                           for i in range(len(tuples))])
    StudyItemResponse.objects.bulk_create(
        [StudyItemResponse(item=item, response_id=responses[m], position=p)
         for item, members in zip(items, tuples.tolist(), strict=True) for p, m in enumerate(members)],
        batch_size=2000)
    return len(items)


def publish_problems(study: Study) -> list[str]:
    """Why a bws_tuples study cannot be published yet (empty when it can)."""
    size = study.design_config["tuple_size"]
    problems = []
    wrong = study.items.filter(check_kind="").annotate(n=Count("item_responses")).exclude(n=size).count()
    if wrong:
        problems.append(f"{wrong} tuple(s) do not show exactly {size} responses")
    if study.items.exclude(check_kind="").exists():
        problems.append("attention-check items are not available for best-worst tuples yet (remove them)")
    return problems


# --- the rater's answer ------------------------------------------------------------------------------

def answers_parse(post: Mapping[str, Any], criteria: Iterable[Criterion], order: Sequence[int]
                  ) -> tuple[dict[str, dict[str, int]], dict[str, str]]:
    """The best and worst picks in a submitted tuple form ({criterion: {"best": id, "worst": id}})
    and, per field, what is wrong (missing, not a shown response, the same response twice)."""
    answers: dict[str, dict[str, int]] = {}
    errors: dict[str, str] = {}
    for name in (c.name for c in criteria):
        picks: dict[str, int] = {}
        for kind in KINDS:
            field = tuple_field(kind, name)
            raw = str(post.get(field) or "").strip()
            if not raw:
                errors[field] = f"pick the {kind} response"
            elif not raw.isdigit() or int(raw) not in order:
                errors[field] = f"“{raw[:12]}” is not one of the responses shown"
            else:
                picks[kind] = int(raw)
        if len(picks) == 2 and picks["best"] == picks["worst"]:
            errors[name] = "the best and the worst response must be different"
        answers[name] = picks
    return answers, errors


@transaction.atomic
def choices_record(*, assignment: Assignment, item_id: int, answers: Mapping[str, Mapping[str, int]],
                   seconds: float | None = None, active_seconds: float | None = None) -> int:
    """Store one tuple's best and worst picks per criterion (``{criterion: {"best": response id,
    "worst": response id}}``). Every criterion needs both, each a member shown on this slot, best ≠
    worst; any problem raises ValidationError keyed by the form field (``tuple_field``) or the
    criterion, and nothing is stored. The assignment row is locked (concurrent submits run one after
    the other) and the write is an upsert on the unique (assignment, item, criterion): a double
    submit stores once, a changed answer replaces the earlier one. Returns the picks stored."""
    from studies.rating import selectors as rater_selectors
    from studies.rating.answers import answer_slot_lock

    slot = answer_slot_lock(assignment=assignment, item_id=item_id, seconds=seconds, active_seconds=active_seconds)
    current, study = slot.assignment, slot.assignment.study
    if study.design != Design.BWS_TUPLES:
        raise ValidationError({"design": f"best-worst picks are for bws_tuples studies, not {study.design}"})
    criteria = {c.name: c for c in rater_selectors.study_criteria(study)}
    shown = set(slot.response_order)
    errors: dict[str, str] = {}
    for name in criteria:
        if name not in answers:
            errors[name] = "pick the best and the worst response for this question"
    for name, picks in answers.items():
        if name not in criteria:
            errors[name] = "unknown criterion"
            continue
        if not isinstance(picks, Mapping):
            errors[name] = "give the best and the worst response id"
            continue
        for kind in KINDS:
            value = picks.get(kind)
            if isinstance(value, bool) or not isinstance(value, int) or value not in shown:
                errors[tuple_field(kind, name)] = f"pick the {kind} among the responses shown, got {value!r}"
        if picks.get("best") is not None and picks.get("best") == picks.get("worst"):
            errors[name] = "the best and the worst response must be different"
    if errors:
        raise ValidationError(errors)
    BestWorstChoice.objects.bulk_create(
        [BestWorstChoice(assignment=current, item_id=item_id, criterion=criteria[name], best_id=picks["best"],
                         worst_id=picks["worst"], seconds=seconds) for name, picks in answers.items()],
        update_conflicts=True, unique_fields=["assignment", "item", "criterion"],
        update_fields=["best", "worst", "seconds", "updated_at"])
    slot.answered_at = timezone.now()
    slot.active_seconds = active_seconds if active_seconds is not None else slot.active_seconds
    slot.draft = {}
    slot.save(update_fields=["answered_at", "active_seconds", "draft"])
    return len(answers)


def stored_values(slot: AssignmentItem) -> dict[str, str]:
    """The slot's stored picks as form values ({field: response id})."""
    if slot.answered_at is None:
        return {}
    values = {}
    for name, best, worst in BestWorstChoice.objects.filter(assignment_id=slot.assignment_id, item_id=slot.item_id) \
            .values_list("criterion__name", "best_id", "worst_id"):
        values[tuple_field("best", name)], values[tuple_field("worst", name)] = str(best), str(worst)
    return values


def item_context(study: Study, order: Sequence[int], values: Mapping[str, Any], errors: Mapping[str, str],
                 criteria: Iterable[Criterion]) -> dict[str, Any]:
    """What raters/_bws_tuple.html needs: the members (letter, text, own context) in the rater's
    order and, per criterion, the best and worst fields with the current picks."""
    members = {r.pk: r for r in Response.objects.filter(pk__in=list(order)).select_related("conversation")}
    shown = [{"id": rid, "letter": string.ascii_uppercase[i], "number": i + 1, "text": members[rid].text,
              "turns": members[rid].conversation.turns} for i, rid in enumerate(order)]
    rows = []
    for criterion in criteria:
        best_field, worst_field = tuple_field("best", criterion.name), tuple_field("worst", criterion.name)
        best, worst = str(values.get(best_field, "")), str(values.get(worst_field, ""))
        rows.append({"name": criterion.name, "question": criterion.question, "help": criterion.help_text,
                     "error": errors.get(criterion.name), "best_field": best_field, "worst_field": worst_field,
                     "best_error": errors.get(best_field), "worst_error": errors.get(worst_field),
                     "options": [{**m, "best": best == str(m["id"]), "worst": worst == str(m["id"])} for m in shown]})
    return {"tuple_members": shown, "tuple_criteria": rows}


# --- reads for the analysis ---------------------------------------------------------------------------

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
MEMBER_COLUMNS = {"item": "item_id", "unit": "response_id", "system": "response__system__name",
                  "conversation": "response__conversation__external_id"}


def annotations(studies: QuerySet[Study], *, done_only: bool = True) -> pd.DataFrame:
    """One row per member of every annotated tuple (choice × member, two queries): the choice's
    columns (``ANNOTATION_COLUMNS``), the member (unit = response id, its system and conversation),
    ``rank`` (1 best, tuple size worst, 2 otherwise: counting needs only best and worst) and
    ``score`` (+1 best, −1 worst, 0 otherwise)."""
    choices = BestWorstChoice.objects.filter(assignment__study__in=studies, assignment__study__design=Design.BWS_TUPLES)
    if done_only:
        from studies.authoring.selectors import DONE_STATUSES

        choices = choices.filter(assignment__status__in=DONE_STATUSES)
    frame = pd.DataFrame.from_records(list(choices.values_list(*ANNOTATION_COLUMNS.values())),
                                      columns=list(ANNOTATION_COLUMNS))
    if frame.empty:
        return frame.assign(**{k: pd.Series(dtype=object) for k in (*MEMBER_COLUMNS, "rank", "score", "size")})
    members = pd.DataFrame.from_records(
        list(StudyItemResponse.objects.filter(item_id__in=frame["item"].unique().tolist())
             .values_list(*MEMBER_COLUMNS.values())), columns=list(MEMBER_COLUMNS))
    members["size"] = members.groupby("item")["unit"].transform("size")
    frame = frame.merge(members, on="item", how="inner")
    is_best, is_worst = frame["unit"] == frame["best"], frame["unit"] == frame["worst"]
    frame["rank"] = np.where(is_best, 1, np.where(is_worst, frame["size"], 2))
    frame["score"] = is_best.astype(float) - is_worst.astype(float)
    for column in ("seconds", "total_seconds"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return frame


def report_frame(studies: QuerySet[Study]) -> pd.DataFrame:
    """Rows for the seed report's frame (``report_selectors.RATINGS_FRAME_COLUMNS``): one per rater ×
    response × criterion, ``score`` = that rater's mean of +1/−1/0 over their appearances of the
    response (a rater may meet one response in two tuples)."""
    frame = annotations(studies)
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
    grouped["design"], grouped["value"], grouped["rank"] = Design.BWS_TUPLES.value, grouped["score"], np.nan
    return grouped[columns]


def export_rows(studies: QuerySet[Study], *, raw_ids: bool = False) -> Iterator[dict[str, Any]]:
    """Export rows (``report_selectors.EXPORT_FIELDS``): one per member of each annotated tuple, all
    assignments as the ratings export does; ``tuple`` is the tuple's position, ``value`` +1 best,
    −1 worst, 0 otherwise, ``rank`` 1 best, tuple size worst (empty otherwise)."""
    from studies.reports.selectors import rater_pseudonym

    frame = annotations(studies, done_only=False)
    if frame.empty:
        return
    positions = dict(StudyItem.objects.filter(pk__in=frame["item"].unique().tolist()).values_list("pk", "position"))
    frame = frame.sort_values(["study", "assignment", "item", "criterion", "unit"], kind="stable")
    names: dict[tuple[int, int], str] = {}
    for row in frame.itertuples(index=False):
        key = (row.experiment, row.rater)
        rater = row.rater_name if raw_ids else names.get(key) or names.setdefault(key, rater_pseudonym(*key))
        yield {"experiment": row.experiment_slug, "study": row.study, "design": Design.BWS_TUPLES.value,
               "criterion": row.criterion, "conversation": row.conversation, "system": row.system,
               "response": int(row.unit), "rater": rater, "platform": row.platform, "value": float(row.score),
               "normalised_value": float(row.score), "normalisation": NORMALISATION,
               "rank": int(row.rank) if row.score != 0 else None,
               "seconds": None if pd.isna(row.seconds) else float(row.seconds), "reference_value": None,
               "prior_rating_experience": row.prior_rating_experience,
               "prior_agent_experience": row.prior_agent_experience, "questionnaire": row.questionnaire,
               "assignment_status": row.assignment_status, "submitted_at": row.submitted_at,
               "tuple": positions.get(row.item)}


def choices_per_study(study_ids: Iterable[int]) -> dict[int, int]:
    """Study id -> best-worst picks stored (one per tuple × criterion × rater), for progress."""
    return dict(BestWorstChoice.objects.filter(assignment__study_id__in=list(study_ids)).values("assignment__study_id")
                .annotate(n=Count("id")).values_list("assignment__study_id", "n"))


def choices_stamp(study_ids: Iterable[int]) -> tuple:
    """Changes whenever a best-worst pick of these studies changes (part of the report's and the
    live panel's cache key, ``report_selectors.ratings_version``): count, latest change, sums of the picks."""
    stamp = BestWorstChoice.objects.filter(assignment__study_id__in=list(study_ids)).aggregate(
        n=Count("id"), last=Max("updated_at"), best=Sum("best_id"), worst=Sum("worst_id"))
    return tuple(stamp.values())


# --- the report section --------------------------------------------------------------------------------

def _finite(value: Any) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def design_summary(studies: QuerySet[Study]) -> dict[str, dict[str, Any]]:
    """Per bws_tuples study: responses, tuples, appearances per response, pair co-occurrence."""
    out = {}
    for study in studies.filter(design=Design.BWS_TUPLES).order_by("id"):
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
    table = bws.counting_scores(frame["unit"], frame["rank"], frame["choice"])
    system_of = frame.drop_duplicates("unit").set_index("unit")["system"]
    table = table.assign(system=system_of.reindex(table.index).to_numpy()).sort_values("score", ascending=False)
    responses = [{"response": int(unit), "system": r.system, "appearances": int(r.appearances), "best": int(r.best),
                  "worst": int(r.worst), "score": float(r.score)} for unit, r in table.iterrows()]
    systems = bws.group_means_ci(table["score"], table["system"]).sort_values("mean", ascending=False)
    system_rows = [{"system": name, "n": int(r.n), "mean": float(r["mean"]), "sd": _finite(r.sd), "low": _finite(r.low),
                    "high": _finite(r.high)} for name, r in systems.iterrows()]
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
    studies = studies.filter(design=Design.BWS_TUPLES)
    if not studies.exists():
        return []
    frame = annotations(studies)
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
