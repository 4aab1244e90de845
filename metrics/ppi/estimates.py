"""Human + metric estimates: per study (condition) and criterion, each system's mean human score estimated
by prediction-powered inference (PPI++, studies.analysis.ppi) from the humans' scores of the rated units and
a metric's scores of every unit of the study's frame, beside the human-only estimate; differences between
systems, rank places, a planner; pairwise studies: win rates and Bradley-Terry strengths.

The labelled sample is the units humans rated in a study whose items were drawn at random from its frame
(studies.authoring.item_draws, which refuses other studies with the reason); a unit's human score is the mean of its
normalised ratings (studies' ratings frame), so rater noise is part of the spread the interval uses. The
unlabelled units are the rest of the frame: the corpus conversations the items were drawn from. The metric
must have scored every unit of the frame (a study's scoring run scores its items; score the corpus for the
rest): missing scores are refused, not skipped, since the scored part need not be a random part.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db.models import Count, Max, QuerySet, Sum

from metrics.models import MetricModel, MetricScore
from metrics.scoring.selectors import conversation_scores, response_scores
from studies.analysis.ppi_small_n import COVERAGE_MEASURED_FROM_N
from studies.authoring.item_draws import draw_problem
from studies.designs import design_for, unit_for
from studies.models import Conversation, Response, Study

ALPHA = 0.05
COIN_SEED = 0  # Bradley-Terry: an item the humans tie on counts as a win for a or b by a seeded coin


def frame_units(study: Study) -> list[tuple[int, int, str]]:
    """(unit id, conversation id, system) for every unit of the study's frame: the first responses of the
    study's systems in the frame's conversations, or (dialogue units) the conversations themselves."""
    record = study.item_draw
    if unit_for(study).target_field == "conversation":  # a dialogue unit rates the conversations themselves
        rows = Conversation.objects.filter(pk__in=record["frame"]).values_list("pk", "metadata__system")
        return [(pk, pk, system or "") for pk, system in rows]
    return list(Response.objects.filter(conversation_id__in=record["frame"], position=0,
                                        system__name__in=record["systems"])
                .values_list("pk", "conversation_id", "system__name").order_by("pk"))


def _scores(study: Study, metric_model: MetricModel, units: list[int]) -> dict[int, float]:
    if unit_for(study).target_field == "conversation":
        return conversation_scores(metric_model, units)
    return response_scores(metric_model, units)


def _human_units(study: Study):
    """Per criterion × unit: mean normalised score, number of ratings; and the single ratings (rater noise)."""
    from studies.reports.selectors import ratings_frame

    frame = ratings_frame(Study.objects.filter(pk=study.pk), raw_ids=True)
    if frame.empty:
        return frame, frame
    frame = frame.dropna(subset=["score"])
    means = frame.groupby(["criterion", "unit"], sort=False)["score"].agg(["mean", "count"]).reset_index()
    return means, frame


def _arrays(units, labelled: dict[int, float], scores: dict[int, float]):
    y = np.array([labelled[u] for u in units if u in labelled])
    f = np.array([scores[u] for u in units if u in labelled])
    fu = np.array([scores[u] for u in units if u not in labelled])
    return y, f, fu


def _differences(systems, by_system, conversation_of, labelled, scores, alpha):
    """(rows, p-values) for every pair a < b in the order of ``systems``."""
    from studies.analysis.ppi import paired_difference, unpaired_difference

    labelled_conversations = {s: {conversation_of[u] for u in units if u in labelled} for s, units in by_system.items()}
    paired = len({frozenset(v) for v in labelled_conversations.values()}) == 1 and all(
        len({conversation_of[u] for u in units}) == len(units) for units in by_system.values())
    unit_at = {s: {conversation_of[u]: u for u in units} for s, units in by_system.items()}
    rows, pvalues = [], {}
    for i, a in enumerate(systems):
        for b in systems[i + 1:]:
            if paired:
                both = sorted(set(unit_at[a]) & set(unit_at[b]))
                lab = [c for c in both if unit_at[a][c] in labelled]
                unl = [c for c in both if unit_at[a][c] not in labelled]
                est = paired_difference(
                    [labelled[unit_at[a][c]] for c in lab], [labelled[unit_at[b][c]] for c in lab],
                    [scores[unit_at[a][c]] for c in lab], [scores[unit_at[b][c]] for c in lab],
                    [scores[unit_at[a][c]] for c in unl], [scores[unit_at[b][c]] for c in unl], alpha=alpha)
            else:
                est = unpaired_difference(*_arrays(by_system[a], labelled, scores),
                                          *_arrays(by_system[b], labelled, scores), alpha=alpha)
            if est is not None:
                pvalues[(a, b)] = est.p
                rows.append({"a": a, "b": b, "paired": paired, **est.as_dict()})
    return rows, pvalues


def _combination(by_system, labelled, scores, others, names, alpha):
    """Per system: the cross-fitted combination of the metric and ``others`` (unit -> score maps, in
    ``names`` order after the metric's), with each single metric and the verdict."""
    from studies.analysis.ppi_combined import combined_metrics_estimate

    out = []
    for system, members in by_system.items():
        columns = [scores, *others]
        lab = [u for u in members if u in labelled]
        unl = [u for u in members if u not in labelled]
        got = combined_metrics_estimate([labelled[u] for u in lab], [[c[u] for c in columns] for u in lab],
                                        [[c[u] for c in columns] for u in unl], names=names, alpha=alpha)
        if got is not None:
            out.append({"system": system, **{k: v for k, v in got.items() if k != "singles"}})
    return out


def _pooled(units, labelled, scores, alpha):
    """Every system's units together (the frame's mean human score): the estimate a study that drew
    responses at random across systems (one response per conversation, as GRADE's) reports beside the
    per-system ones."""
    from studies.analysis.ppi import mean_estimate

    ids = [u for u, _, _ in units]
    est = mean_estimate([labelled[u] for u in ids if u in labelled], [scores[u] for u in ids if u in labelled],
                        [scores[u] for u in ids if u not in labelled], alpha=alpha)
    return {"system": "all systems", **est.as_dict(), "frame": len(ids)} if est is not None else None


def _criterion(criterion, units, means, ratings, scores, plan_width, alpha, frame_size, combine=None):
    from studies.analysis.ppi import mean_estimate, plan, rank_places, rater_noise

    part = means[means["criterion"] == criterion]
    labelled = dict(zip(part["unit"], part["mean"], strict=True))
    by_system: dict[str, list[int]] = {}
    conversation_of = {}
    for unit, conversation, system in units:
        by_system.setdefault(system, []).append(unit)
        conversation_of[unit] = conversation
    systems = sorted(s for s, members in by_system.items() if sum(u in labelled for u in members) >= 2)
    single = ratings[ratings["criterion"] == criterion]
    rows = []
    for system in systems:
        y, f, fu = _arrays(by_system[system], labelled, scores)
        est = mean_estimate(y, f, fu, alpha=alpha)
        if est is None:  # fewer than 2 labelled units (the systems were chosen with 2 or more)
            continue
        mine = single[single["unit"].isin(set(by_system[system]))]
        rows.append({"system": system, **est.as_dict(), "frame": len(by_system[system]),
                     "rater_noise": rater_noise(mine["unit"].to_numpy(), mine["score"].to_numpy())})
    differences, pvalues = _differences(systems, by_system, conversation_of, labelled, scores, alpha)
    ranking = rank_places(systems, [r["estimate"] for r in rows], pvalues, alpha=alpha) if rows else []
    width = plan_width or (max(r["width"] for r in rows) / 2 if rows else None)
    plans = []
    for system in systems if width else []:
        y, f, _ = _arrays(by_system[system], labelled, scores)
        plans.append({"system": system, **(plan(y, f, target_width=float(width or 0), n_now=len(y),
                                                frame_size=len(by_system[system]), alpha=alpha) or {})})
    combination = (_combination({s: by_system[s] for s in systems}, labelled, scores, combine[0], combine[1], alpha)
                   if combine else [])
    return {"criterion": criterion, "systems": rows, "differences": differences, "ranking": ranking,
            "plan": plans, "target_width": width, "frame_size": frame_size,
            "pooled": _pooled(units, labelled, scores, alpha), "combination": combination,
            "labelled_per_system": {r["system"]: r["n"] for r in rows},
            "warnings": [f"{r['system']}: {r['warning']}" for r in rows if r.get("warning")]}


def _pairwise(study: Study, units, scores, alpha) -> list[dict[str, Any]]:
    """Per criterion: each pair's win rate (a over b, ties half) and Bradley-Terry strengths (logistic form)."""
    from studies.analysis.pairwise import canonical
    from studies.analysis.ppi import bradley_terry, mean_estimate
    from studies.designs.pairwise_report import comparisons_frame

    frame = comparisons_frame(Study.objects.filter(pk=study.pk))
    if frame.empty:
        return []
    data = canonical(frame)
    a_left = data["left_system"] == data["system_a"]
    data["unit_a"], data["unit_b"] = np.where(a_left, data["left"], data["right"]), np.where(a_left, data["right"], data["left"])
    response_at = {(conversation, system): unit for unit, conversation, system in units}
    conversation_of = {unit: conversation for unit, conversation, _ in units}
    systems = sorted({s for _, _, s in units})
    coin = np.random.default_rng(COIN_SEED)
    out = []
    for criterion, part in data.groupby("criterion", sort=True):
        items = part.groupby(["unit_a", "unit_b"]).agg(a=("system_a", "first"), b=("system_b", "first"),
                                                     score=("score_a", "mean")).reset_index()
        rated = {(conversation_of.get(r.unit_a), r.a, r.b): r.score for r in items.itertuples()}

        def predicted(conversation, a, b):
            fa, fb = scores[response_at[(conversation, a)]], scores[response_at[(conversation, b)]]
            return 1.0 if fa > fb else 0.0 if fa < fb else 0.5

        pairs_l, outcomes, pred_l, pairs_u, pred_u, win_rows = [], [], [], [], [], []
        for i, a in enumerate(systems):
            for b in systems[i + 1:]:
                conversations = sorted(c for (c, s) in response_at if s == a and (c, b) in response_at)
                lab = [c for c in conversations if (c, a, b) in rated]
                unl = [c for c in conversations if (c, a, b) not in rated]
                y = [rated[(c, a, b)] for c in lab]
                est = mean_estimate(y, [predicted(c, a, b) for c in lab], [predicted(c, a, b) for c in unl], alpha=alpha)
                if est is not None:
                    win_rows.append({"a": a, "b": b, **est.as_dict()})
                for c, score in zip(lab, y, strict=True):
                    pairs_l.append((a, b))
                    outcomes.append(1.0 if score > 0.5 else 0.0 if score < 0.5 else float(coin.random() < 0.5))
                    pred_l.append(predicted(c, a, b))
                pairs_u += [(a, b)] * len(unl)
                pred_u += [predicted(c, a, b) for c in unl]
        out.append({"criterion": criterion, "win_rates": win_rows,
                    "bradley_terry": bradley_terry(systems, pairs_l, outcomes, pred_l, pairs_u, pred_u, alpha=alpha)})
    return out


def _pay(study: Study, plans: list[dict]) -> dict[str, Any]:
    """The most items any system needs more of (an item carries every system), with and without the metric,
    and what they cost with the study's pay plan (rewards for the places they need; platform fees on top)."""
    from studies.rating.allocation import places_needed

    def cost(items):
        if items is None or study.reward is None:
            return None
        return float(study.reward * places_needed(items, study.raters_per_item, study.items_per_assignment)) if items else 0.0

    with_metric = max((p["more_with_metric"] for p in plans if p["more_with_metric"] is not None), default=None)
    without = max((p["more_without_metric"] for p in plans), default=None)
    reachable = all(p["reachable"] for p in plans)
    return {"more_with_metric": with_metric, "more_without_metric": without, "reachable": reachable,
            "cost_with_metric": cost(with_metric), "cost_without_metric": cost(without),
            "reward": float(study.reward) if study.reward is not None else None,
            "raters_per_item": study.raters_per_item, "items_per_assignment": study.items_per_assignment,
            "remaining_in_frame": len(study.item_draw.get("frame", [])) - study.items.filter(check_kind="").count()}


def study_estimates(study: Study, metric_model: MetricModel, *, alpha: float = ALPHA,
                    target_width: float | None = None, combine: Sequence[MetricModel] = ()) -> dict[str, Any]:
    """Everything the report section, the page, the API, the exports and the command show for one study.
    ``combine``: further metric models, combined with ``metric_model`` by cross-fitted weights
    (``studies.analysis.ppi_combined``) per system, beside the single-metric estimates."""
    out: dict[str, Any] = {"slug": study.slug, "title": study.title, "unit": study.unit, "metric_model": metric_model.name,
           "alpha": alpha, "criteria": [], "pairwise": [], "problem": draw_problem(study)}
    if out["problem"]:
        return out
    units = frame_units(study)
    scores = _scores(study, metric_model, [u for u, _, _ in units])
    missing = len(units) - len(scores)
    out.update({"method": study.item_draw["method"], "frame_size": len(units), "corpus": study.item_draw["corpus_slug"],
                "items": study.items.filter(check_kind="").count()})
    if missing:
        out["problem"] = (f"{missing} of the frame's {len(units)} units have no score from {metric_model.name}: score "
                          f"the corpus {study.item_draw['corpus_slug']} with it (the estimates need the metric on every unit)")
        out["score_corpus"] = study.item_draw["corpus_slug"]
        return out
    if design_for(study).compares_pairs:  # A/B judgments: win rates, not means
        out["pairwise"] = _pairwise(study, units, scores, alpha)
        return out
    means, ratings = _human_units(study)
    if means.empty:
        from studies.reports.selectors import scale_absent_reason

        out["problem"] = scale_absent_reason(Study.objects.filter(pk=study.pk), short=True)
        return out
    combined = None
    others = [m for m in combine if m.pk != metric_model.pk]
    if others:
        extra = [_scores(study, m, [u for u, _, _ in units]) for m in others]
        unscored = [m.name for m, got in zip(others, extra, strict=True) if len(got) < len(units)]
        if unscored:
            out["combination_problem"] = (f"not combined: {', '.join(unscored)} has not scored every unit of the frame "
                                          f"(score corpus {study.item_draw['corpus_slug']} with it)")
        else:
            combined = (extra, [metric_model.name, *[m.name for m in others]])
    for criterion in list(dict.fromkeys(means["criterion"])):
        out["criteria"].append(_criterion(criterion, units, means, ratings, scores, target_width, alpha, len(units),
                                          combined))
    out["pay"] = _pay(study, [p for c in out["criteria"] for p in c["plan"]])
    return out


def ppi_report(studies: QuerySet[Study], metric_model: MetricModel, *, alpha: float = ALPHA,
               target_width: float | None = None, combine: Sequence[MetricModel] = ()) -> dict[str, Any]:
    """``study_estimates`` for each study, cached per version of the ratings and of the models' scores."""
    from studies.reports.selectors import ratings_version

    models = [metric_model, *combine]
    stamp = MetricScore.objects.filter(metric_model__in=models).aggregate(n=Count("id"), last=Max("created_at"),
                                                                         total=Sum("value"))
    draws = list(studies.order_by("pk").values_list("pk", "item_draw"))
    version = (f"{ratings_version(studies)}:{[m.pk for m in models]}:{alpha}:{target_width}:{stamp}:{draws}")
    key = "ppi-report:" + hashlib.sha256(version.encode()).hexdigest()
    report = cache.get(key)
    if report is None:
        report = {"metric_model": metric_model.name, "metric": metric_model.metric.key, "alpha": alpha,
                  "combined_with": [m.name for m in combine if m.pk != metric_model.pk],
                  "studies": [study_estimates(s, metric_model, alpha=alpha, target_width=target_width, combine=combine)
                              for s in studies.order_by("pk")], "notes": NOTES}
        cache.set(key, report, timeout=3600)
    return report


NOTES = [
    "Prediction-powered estimates (PPI++, Angelopoulos, Duchi & Zrnic 2023, with the power-tuning parameter lambda "
    "estimated from the data; ppi_py): the metric's mean over every unit of the frame, corrected by the humans' "
    "mean minus the metric's on the units humans rated. Unbiased for the mean human score whatever the metric's "
    "bias; narrower than human-only when the metric tracks the humans, and about as wide when it does not.",
    "Labelled units: those rated by humans in a study whose items were drawn at random from the corpus (all of its "
    "usable conversations, or a seeded sample) and handed to raters without regard to their content; Concord "
    "refuses studies where that is not recorded (items chosen by a person, copied, imported).",
    "A unit's human score is the mean of its raters' normalised scores: rater noise (the within-unit variance over "
    "k raters) is part of the spread the interval is built from. Raters shared across many units are treated as "
    "fixed: the intervals are for these raters' mean judgment, not a new crowd's.",
    "Intervals at small n: lambda and the point estimate are ppi_py's; the interval is the small-sample one of a "
    "regression estimator (its slope fitted on the rated units; Student t with n - 2 degrees of freedom), and the "
    "human-only one is the one-sample t interval (n - 1 df). ppi_py's normal interval covers about .90 of the time "
    "at 12 rated units per system; this one covered at least .95 in seeded simulations from "
    f"{COVERAGE_MEASURED_FROM_N} rated units up. n beside each interval is the number of human-rated units it rests "
    "on; below that n the interval is flagged.",
    "Rater noise share: of the variance of the rated units' mean scores within a system, the part that raters' "
    "disagreement about the same unit accounts for (pooled within-unit variance / ratings per unit, over the "
    "variance of unit means). Near 1: the units differ no more than their raters disagree (e.g. every response "
    "of a system equally good), so the metric has nothing real to track and cannot narrow the interval; more "
    "ratings per unit would.",
    "Several metrics combined: their weights are fitted on held-apart folds of the rated units (cross-fitting, "
    "Zrnic & Candes 2024, cross-prediction-powered inference; weights as PPI++'s vector lambda), so no unit's "
    "correction uses its own label; worth it only where its standard error is below the best single metric's, "
    "which the verdict says.",
    "All systems: every unit of the frame together, the estimate for a study that drew responses at random across "
    "systems (one response per conversation).",
    "Effective human judgments: the number of human-rated units a human-only mean would need for the same interval.",
    "Places: a system's place by estimate, and the places it could hold given the differences that are significant "
    "after Holm's correction (paired by conversation where every rated conversation carries every system).",
]
