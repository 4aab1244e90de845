"""Reads for metrics: what a run scores, scores as arrays, the runs a user may see, and the human-vs-metric report."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet, Sum

from metrics.models import HumanMetricSummary, MetricModel, MetricScore, ScoringRun
from metrics.scoring import summaries
from studies.designs import UNITS, design_for, unit_for
from studies.models import Response, Study, StudyItemResponse, Unit


def run_responses(run: ScoringRun) -> QuerySet[Response]:
    """The responses a run covers: a study's judged responses and references, a corpus, or all."""
    responses = Response.objects.all()
    if run.study is not None:
        shown = StudyItemResponse.objects.filter(item__study=run.study).values("response_id")
        references = run.study.items.exclude(reference_response=None).values("reference_response_id")
        responses = responses.filter(Q(pk__in=shown) | Q(pk__in=references))
    elif run.corpus_id:
        responses = responses.filter(conversation__corpus_id=run.corpus_id)
    return responses


def unscored(run: ScoringRun) -> QuerySet[Response]:
    scored = MetricScore.objects.filter(metric_model_id=run.metric_model_id, response__isnull=False).values("response_id")
    return run_responses(run).exclude(pk__in=scored)


def unscored_in_scope(run: ScoringRun) -> int:
    """How many targets of ``run``'s scope (responses, or conversations for a dialogue-level model) have no
    score from its model now: what a retry would ask again."""
    from metrics.scoring.dialogue import run_conversations

    if scores_conversations(run.metric_model):
        scored = MetricScore.objects.filter(metric_model_id=run.metric_model_id, conversation__isnull=False)
        return run_conversations(run).exclude(pk__in=scored.values("conversation_id")).count()
    return unscored(run).count()


def response_scores(metric_model: MetricModel, response_ids) -> dict[int, float]:
    return dict(MetricScore.objects.filter(metric_model=metric_model, response_id__in=response_ids)
                .values_list("response_id", "value"))


def conversation_scores(metric_model: MetricModel, conversation_ids) -> dict[int, float]:
    return dict(MetricScore.objects.filter(metric_model=metric_model, conversation_id__in=conversation_ids)
                .values_list("conversation_id", "value"))


def unit_scores(metric_model: MetricModel, frame) -> np.ndarray:
    """The metric's score of each rated unit in a ratings frame: a response's score (turn level) in
    response-unit studies, the conversation's (dialogue level, e.g. SelF-Eval) in dialogue-unit studies
    (the frame's ``target`` column says which ``unit`` holds); NaN where the model has none."""
    rated_conversations = [unit.key for unit in UNITS.values() if unit.target_field == "conversation"]
    dialogue = frame["target"].isin(rated_conversations).to_numpy() if "target" in frame else np.zeros(len(frame), bool)
    by_response = response_scores(metric_model, frame.loc[~dialogue, "unit"].unique().tolist())
    by_conversation = conversation_scores(metric_model, frame.loc[dialogue, "unit"].unique().tolist())
    return np.where(dialogue, frame["unit"].map(by_conversation), frame["unit"].map(by_response)).astype(float)


def _finite(value) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def human_metric_report(studies: QuerySet[Study], metric_model: MetricModel, *, bootstrap: int = 1000,
                        queue: Callable[[], Any] | None = None) -> dict[str, Any] | None:
    """``compute_human_metric_report``, stored per version of the ratings and of the model's scores
    (``metrics.scoring.summaries.kept``: a page, its scatter plots and its CSV compute it once; with ``queue``,
    the page, None while a worker computes it)."""
    from studies.reports.selectors import ratings_version

    version = f"{ratings_version(studies)}:{metric_model.pk}:{bootstrap}:{_scores_version([metric_model])}"
    return summaries.kept(HumanMetricSummary.Kind.REPORT, version, studies, metric_model,
                          lambda: compute_human_metric_report(studies, metric_model, bootstrap=bootstrap), queue=queue)


def _scores_version(models: list[MetricModel]) -> str:
    scores = MetricScore.objects.filter(metric_model__in=models).aggregate(n=Count("id"), last=Max("created_at"),
                                                                             total=Sum("value"))
    return ":".join(str(v) for v in scores.values())


def compute_human_metric_report(studies: QuerySet[Study], metric_model: MetricModel, *,
                                bootstrap: int = 1000) -> dict[str, Any]:
    """Human vs metric, per condition × criterion (the seed's Table 8 layout), at response level
    (human = mean normalised score over raters) and system level, with Pearson/Spearman/Kendall,
    p and bootstrap BCa CIs, beside the leave-one-rater-out human ceiling."""
    from studies.analysis.correlation import correlate_all
    from studies.analysis.report import ReportOptions, rater_quality
    from studies.reports.selectors import ratings_frame, scale_absent_reason

    frame = ratings_frame(studies)
    if frame.empty:
        return {"metric_model": metric_model.name, "metric": metric_model.metric.key, "cells": [],  # the same keys
                "label_cells": label_metric_cells(studies, metric_model),
                "notes": [scale_absent_reason(studies)]}
    frame = frame.assign(metric=unit_scores(metric_model, frame))
    quality = rater_quality(frame, ReportOptions(), ranked=[s.slug for s in studies if design_for(s).ranks])
    imported = set(studies.filter(platform=Study.Platform.BENCHMARK).values_list("slug", flat=True))
    # the study's own unit: a design's extra rows (a best-worst tuple's scores) carry no ``target`` column
    units = dict(studies.values_list("slug", "unit"))
    cells = []
    for (study, criterion), part in frame.groupby(["study", "criterion"], sort=False):
        per_response = part.groupby("unit").agg(human=("score", "mean"), metric=("metric", "first"),
                                                system=("system", "first")).dropna()
        per_system = per_response.groupby("system")[["human", "metric"]].mean()
        raters = quality[quality["study"] == study]
        cells.append({
            "condition": study, "criterion": criterion, "n_responses": len(per_response),
            "unit": units.get(study) or Unit.RESPONSE,
            "missing_scores": int(part.drop_duplicates("unit")["metric"].isna().sum()),
            "response_level": {m: c.as_dict() for m, c in
                               correlate_all(per_response["metric"], per_response["human"], bootstrap=bootstrap).items()},
            "system_level": {m: c.as_dict() for m, c in
                             correlate_all(per_system["metric"], per_system["human"]).items()},
            # one rater against the others' mean: not comparable where "raters" are annotator positions
            "human_ceiling": None if study in imported else (
                _finite(np.nanmean(raters["loo_r"])) if raters["loo_r"].notna().any() else None),
            "human_ceiling_note": HIDDEN_CEILING if study in imported else CEILING,
            "points": per_response.reset_index()[["unit", "system", "human", "metric"]].to_dict("records"),
        })
    return {"metric_model": metric_model.name, "metric": metric_model.metric.key, "cells": cells,
            "label_cells": label_metric_cells(studies, metric_model), "notes": [
        "Human score of a response (or, in a dialogue study, of a whole dialogue, joined to the metric's "
        "dialogue-level scores): the mean of its normalised ratings over raters. " + CEILING]}


CEILING = ("Single-rater agreement (shown as the human ceiling): the mean Spearman correlation of one rater with the "
           "mean of the other raters (leave-one-rater-out). It is the agreement of ONE rating, while the metric is "
           "correlated with the mean of all raters, so a metric above it is not better than a human.")
HIDDEN_CEILING = ("No human ceiling: the judgments are imported, and their raters are annotator positions (the j-th "
                  "score of each item), not people, so one position against the others measures no rater.")


def label_metric_cells(studies: QuerySet[Study], metric_model: MetricModel) -> list[dict[str, Any]]:
    """Human labels against the metric: per condition, categorical or multi-label criterion and label,
    the point-biserial correlation and the AUC of "this rating gave the label" against the metric's
    score of the rated target, over ratings (``studies.analysis.labels.label_metric_association``)."""
    from studies.analysis.labels import label_metric_association
    from studies.reports.label_selectors import label_frame

    frame = label_frame(studies)
    if frame.empty:
        return []
    frame = frame.assign(metric=unit_scores(metric_model, frame))
    cells = []
    for (study, criterion), part in frame.groupby(["study", "criterion"], sort=False):
        for label in part["all_labels"].iloc[0]:
            given = part["labels"].map(lambda chosen, label=label: label in chosen)
            cells.append({"condition": study, "criterion": criterion, "kind": part["kind"].iloc[0], "label": label,
                          **label_metric_association(given.to_numpy(), part["metric"].to_numpy())})
    return cells


def card_warnings(card: dict | None) -> list[str]:
    """A model card's warnings (``metrics.benchmarking.model_cards``), one line per set and baseline where the model is
    below it (clearly: the whole interval of the difference below 0)."""
    return [f"{'clearly ' if b.get('clearly_below') else ''}below {b['baseline']} on {b['set']} ({b['quality']}): "
            f"Δ {b['delta']:+.3f} [{b['low']:+.3f}, {b['high']:+.3f}]" for b in (card or {}).get("below", [])]


def metric_models_usable_by(user) -> QuerySet[MetricModel]:
    """The metric models ``user`` may see, run and read reports of: everyone's (no owner) and their own
    (an LLM judge calls its owner's endpoint with its owner's key); staff see all."""
    from django.db.models import Q

    models = MetricModel.objects.all()
    if getattr(user, "is_superuser", False):
        return models
    return models.filter(Q(owner__isnull=True) | Q(owner=user)) if getattr(user, "pk", None) else models.filter(owner__isnull=True)


def rates_dialogues(*, study: Study | None = None, corpus=None) -> bool:
    """Whether what a run of ``study`` (or ``corpus``) scores is whole conversations: a study whose unit
    rates dialogues (imported dialogues, a chat study's transcripts, ACUTE-Eval's pairs), or a corpus with
    no responses to score (self-chats, chat transcripts)."""
    if study is not None:
        return unit_for(study).level == "dialogue"
    return corpus is not None and not Response.objects.filter(conversation__corpus=corpus).exists()


def scores_conversations(metric_model: MetricModel) -> bool:
    """Whether a run of ``metric_model`` gives one score per whole conversation (a dialogue-level metric,
    as its class and config declare: ``MetricImplementation.scores_conversations``)."""
    from metrics import registry

    return registry.implementation(metric_model.metric.key, metric_model.config).scores_conversations


def metric_model_fit_problem(metric_model: MetricModel, *, study: Study | None = None, corpus=None) -> str | None:
    """Why ``metric_model`` is not offered for scoring ``study`` (or ``corpus``), or None: a turn-level
    metric scores a response given its context, so where the human judgments are of whole conversations
    it has nothing to score (and a mean of turn scores would be a dialogue metric of our own making)."""
    if not rates_dialogues(study=study, corpus=corpus) or scores_conversations(metric_model):
        return None
    where = (f"“{study.title}” has raters judge whole dialogues" if study is not None
             else f"corpus {corpus.slug} holds whole conversations and no responses")
    return (f"{metric_model.name} is a turn-level metric (it scores a response given its context), and {where}, "
            "so it has no responses to score; nothing was queued. Choose a dialogue-level metric (SelF-Eval, or a "
            "consecutive-turns baseline).")


def conversation_corpora(corpora: QuerySet) -> QuerySet:
    """Of ``corpora``, those of whole conversations with conversations and no response to score: self-chats,
    a chat study's transcripts, dialogue-level imports (what only a dialogue-level metric scores)."""
    from django.db.models import Exists, OuterRef

    from studies.models import Conversation

    return (corpora.filter(Exists(Conversation.objects.filter(corpus=OuterRef("pk"))))
            .exclude(Exists(Response.objects.filter(conversation__corpus=OuterRef("pk")))).exclude(source_format="checks"))


def metric_models_offered(user, *, study: Study | None = None, corpus=None) -> list[MetricModel]:
    """The metric models ``user`` may use that can score ``study`` (or ``corpus``): the dialogue-level
    ones (SelF-Eval, the consecutive-turn cosines and coherence, a dialogue-level judge) where the human
    judgments are of whole conversations (``metric_model_fit_problem``), every one otherwise."""
    models = list(metric_models_usable_by(user).select_related("metric").order_by("name"))
    if not rates_dialogues(study=study, corpus=corpus):
        return models
    return [m for m in models if metric_model_fit_problem(m, study=study, corpus=corpus) is None]


def metric_models_scored_on(studies, user) -> list[MetricModel]:
    """The metric models ``user`` may use with scores on the studies' judged responses or dialogues, most
    scores first (one query)."""
    from django.db.models import Q

    counts = (MetricScore.objects.filter(Q(response__study_items__study__in=studies)
                                         | Q(conversation__study_items__study__in=studies))
              .filter(metric_model__in=metric_models_usable_by(user))
              .values("metric_model").annotate(n=Count("id", distinct=True)).order_by("-n", "metric_model"))
    order = [c["metric_model"] for c in counts]
    models = MetricModel.objects.select_related("metric").in_bulk(order)
    return [models[pk] for pk in order]


def judges_ranking(studies: QuerySet[Study], models: list[MetricModel], *, resamples: int = 1000,
                   queue: Callable[[], Any] | None = None) -> list[dict[str, Any]] | None:
    """The best judge per condition and numeric criterion: every given model's Spearman with the human
    mean per target, on the targets all of them scored, ranked with the paired bootstrap gap to the best
    (``studies.analysis.metric_ranking``). Stored per version of the ratings and of the models' scores
    (``metrics.scoring.summaries.kept``; with ``queue``, None while a worker computes it)."""
    from studies.reports.selectors import ratings_version

    if len(models) < 2:
        return []
    version = (f"{ratings_version(studies)}:{','.join(str(m.pk) for m in models)}:{resamples}:"
               f"{_scores_version(models)}")
    return summaries.kept(HumanMetricSummary.Kind.JUDGES, version, studies, models[0],
                          lambda: _judges_ranking(studies, models, resamples), queue=queue)


def _judges_ranking(studies, models, resamples) -> list[dict[str, Any]]:
    from studies.analysis.metric_ranking import rank_metrics, ranking_sentence
    from studies.reports.selectors import ratings_frame

    frame = ratings_frame(studies)
    if frame.empty:
        return []
    frame = frame.assign(**{f"m{m.pk}": unit_scores(m, frame) for m in models})
    rows = []
    for (study, criterion), part in frame.groupby(["study", "criterion"], sort=False):
        fit = [m for m in models if judged_criterion(m) in (None, criterion)]
        other = [{"metric": m.name, "criterion": judged_criterion(m)} for m in models if m not in fit]
        per_unit = part.groupby("unit").agg(human=("score", "mean"), **{f"m{m.pk}": (f"m{m.pk}", "first") for m in fit})
        ranking = rank_metrics(per_unit["human"].tolist(), {m.name: per_unit[f"m{m.pk}"].tolist() for m in fit},
                               resamples=resamples) if len(fit) >= 2 else {
            "rows": [], "best": fit[0].name if fit else None, "n": len(per_unit), "problem":
            "fewer than two metrics judge this criterion: nothing to rank"}
        rows.append({"condition": study, "criterion": criterion, **ranking, "summary": ranking_sentence(ranking),
                     "not_ranked": other, "not_ranked_note": "; ".join(
                         f"{o['metric']} was made to judge {o['criterion']}, so it is not ranked on {criterion}"
                         for o in other)})
    return rows


def judged_criterion(metric_model: MetricModel) -> str | None:
    """The criterion an LLM judge was made for (its prompt asks about that one), or None for a metric
    that is not tied to one (every other metric scores the same way whatever the criterion)."""
    criterion = (metric_model.config or {}).get("criterion")
    return str(criterion.get("name") or "") or None if isinstance(criterion, dict) else None


def best_ranked_model(studies: QuerySet[Study], models: list[MetricModel], *, resamples: int = 1000
                      ) -> MetricModel | None:
    """The metric model the best-judge ranking puts first most often over the studies' conditions and
    criteria (ties: the higher mean correlation where it was ranked, then the order given); None with
    fewer than two models or no ranking. What the prediction-powered section uses by default."""
    blocks = judges_ranking(studies, models, resamples=resamples)
    wins: dict[str, int] = {}
    correlations: dict[str, list[float]] = {}
    for block in blocks:
        if block.get("best") and block.get("rows"):
            wins[block["best"]] = wins.get(block["best"], 0) + 1
        for row in block.get("rows", []):
            if row.get("r") is not None:
                correlations.setdefault(row["metric"], []).append(row["r"])
    if not wins:
        return None
    order = {m.name: i for i, m in enumerate(models)}
    name = max(wins, key=lambda m: (wins[m], float(np.mean(correlations.get(m, [-1.0]))), -order.get(m, 0)))
    return next((m for m in models if m.name == name), None)


def studies_scored_by(metric_model: MetricModel, studies: QuerySet[Study]) -> QuerySet[Study]:
    """Those of ``studies`` (e.g. the ones a user may see) whose judged responses or dialogues the model scored."""
    scored = MetricScore.objects.filter(metric_model=metric_model)
    return studies.filter(Q(pk__in=scored.values("response__study_items__study"))
                          | Q(pk__in=scored.values("conversation__study_items__study"))).distinct()


def baseline_shortfalls(studies: QuerySet[Study], metric_model: MetricModel, *, resamples: int = 1000,
                        queue: Callable[[], Any] | None = None) -> list[dict] | None:
    """Where ``metric_model`` is below an untrained baseline on these studies' own human ratings, in the
    shape of a model card's ``below`` entries (``card_warnings`` reads both): per condition and criterion,
    Spearman with the human mean of each target, Δ = model − baseline on the targets both scored, with its
    paired-bootstrap 95 % interval (``studies.analysis.correlation.correlation_difference``, as the card).
    The card covers the shared files and benchmark studies only; this covers a researcher's own studies,
    against every baseline's default model scored there. Stored per version of the ratings and scores
    (``metrics.scoring.summaries.kept``; with ``queue``, None while a worker computes it)."""
    from metrics import registry
    from studies.reports.selectors import ratings_version

    names = [registry.implementation_class(key).default_model_name() for key in registry.baseline_keys()]
    baselines = list(MetricModel.objects.filter(name__in=names, owner__isnull=True).exclude(pk=metric_model.pk)
                     .order_by("name"))
    if not baselines:
        return []
    models = [metric_model, *baselines]
    version = (f"{ratings_version(studies)}:{','.join(str(m.pk) for m in models)}:{resamples}:"
               f"{_scores_version(models)}")
    return summaries.kept(HumanMetricSummary.Kind.BASELINES, version, studies, metric_model,
                          lambda: _baseline_shortfalls(studies, metric_model, baselines, resamples), queue=queue)


def _baseline_shortfalls(studies, metric_model, baselines, resamples) -> list[dict]:
    from studies.analysis.correlation import correlation_difference
    from studies.reports.selectors import ratings_frame

    frame = ratings_frame(studies)
    if frame.empty:
        return []
    frame = frame.assign(**{f"m{m.pk}": unit_scores(m, frame) for m in [metric_model, *baselines]})
    below = []
    for (study, criterion), part in frame.groupby(["study", "criterion"], sort=False):
        per_unit = part.groupby("unit").agg(human=("score", "mean"), **{
            f"m{m.pk}": (f"m{m.pk}", "first") for m in [metric_model, *baselines]})
        model = per_unit[f"m{metric_model.pk}"].to_numpy(float)
        for baseline in baselines:
            base = per_unit[f"m{baseline.pk}"].to_numpy(float)
            keep = np.isfinite(model) & np.isfinite(base) & np.isfinite(per_unit["human"].to_numpy(float))
            if keep.sum() < 5 or np.ptp(model[keep]) == 0 or np.ptp(base[keep]) == 0:
                continue
            delta, low, high = correlation_difference(model, base, per_unit["human"], resamples=resamples)
            if delta < 0:
                below.append({"set": f"study {study}", "quality": criterion, "baseline": baseline.name, "delta": delta,
                              "low": low, "high": high, "below": True,
                              "clearly_below": bool(np.isfinite(high) and high < 0)})
    return below


def combined_models(user, raw: str | None, *, field: str = "combine") -> list:
    """The metric models named in ``raw`` (comma-separated) that ``user`` may use; ValidationError naming
    ``field`` and the unknown names otherwise."""
    from django.core.exceptions import ValidationError

    names = [n.strip() for n in (raw or "").split(",") if n.strip()]
    if not names:
        return []
    found = {m.name: m for m in metric_models_usable_by(user).filter(name__in=names)}
    unknown = [n for n in names if n not in found]
    if unknown:
        raise ValidationError({field: f"no metric model {', '.join(repr(n[:60]) for n in unknown[:5])} you may use"})
    return [found[n] for n in dict.fromkeys(names)]


def unscored_study_ids(experiment, metric_model) -> set[int]:
    """Studies of the experiment that show a response the metric model has not scored yet (one query),
    and dialogue-level studies with a conversation it has not scored (one query per such study: what
    the unit shows or collected, ``StudyUnit.conversations``; a chat study's ended chats)."""
    scored = MetricScore.objects.filter(metric_model=metric_model, response=OuterRef("response"))
    dialogues = MetricScore.objects.filter(metric_model=metric_model, conversation=OuterRef("pk"))
    unscored = set(StudyItemResponse.objects.filter(item__study__experiment=experiment)
                   .exclude(Exists(scored)).values_list("item__study_id", flat=True).distinct())
    for study in experiment.studies.filter(unit__in=[u.key for u in UNITS.values() if u.level == "dialogue"]):
        if unit_for(study).conversations(study).exclude(Exists(dialogues)).exists():
            unscored.add(study.pk)
    return unscored


PAGE_PARTS = ("report", "judges", "baselines")


def human_metric_page_results(experiment, metric_model: MetricModel, user, *, unscored: set[int] | None = None,
                              queue: Callable[[], Any] | None = None,
                              parts: tuple[str, ...] = PAGE_PARTS) -> dict[str, Any]:
    """What the human-vs-metric page shows for ``user``, each part as ``metrics.scoring.summaries.kept`` gives it
    (None while a worker computes it, with ``queue``): ``report`` over the conditions the model scored
    fully (a correlation with missing metric scores is not the one the paper reports), the ``judges``'
    ranking of every model scored there that ``user`` may use, and the untrained ``baselines`` it is
    below. The worker (``tasks.human_metric_summaries``) calls it without ``queue`` and so stores them."""
    unscored = unscored_study_ids(experiment, metric_model) if unscored is None else unscored
    scored = experiment.studies.exclude(pk__in=unscored)
    out: dict[str, Any] = {}
    if "report" in parts:
        out["report"] = (human_metric_report(scored, metric_model, queue=queue) if scored.exists()
                         else {"metric_model": metric_model.name, "cells": [], "notes": []})
    if "judges" in parts:
        out["judges"] = judges_ranking(scored, metric_models_scored_on(experiment.studies.all(), user), queue=queue)
    if "baselines" in parts:
        out["baselines"] = baseline_shortfalls(experiment.studies.all(), metric_model, queue=queue)
    return out


def visible_runs(user) -> QuerySet[ScoringRun]:
    """Runs on the studies ``user`` can see, and whole-corpus runs on the corpora they can see."""
    from studies.access import studies_visible_to
    from studies.corpora.selectors import corpora_visible_to

    runs = ScoringRun.objects.select_related("metric_model", "study", "corpus")
    if user.is_staff:
        return runs
    return runs.filter(Q(study__in=studies_visible_to(user))
                       | Q(study__isnull=True, corpus__in=corpora_visible_to(user)))
