"""A model card: a trained model beside every untrained baseline on every human-judgment set this
deployment has — the shared public files (``SHARED_DATA_DIR``: GRADE, FED, DSTC9, DailyDialog++ test) and
the imported benchmark studies in the database — with the paired-bootstrap 95 % interval of each
difference. Built by a worker after training (``metrics.tasks.model_card_build``) or by ``train_metric``,
stored on ``MetricModel.card``; the model's page, the API and the scoring form read it.

Per set one figure: Spearman with the set's main human quality (``overall`` where the set has it, else its
only one; a study: each criterion), or ranking accuracy between DailyDialog++ levels (test contexts 150–:
the first 150 validate training). Δ = model − baseline; the interval resamples items (contexts for
DailyDialog++) with the two metrics' values kept together (``studies.analysis.correlation``). A model is
*below* a baseline on a set where Δ < 0; *clearly below* where the whole interval is. ``notes``: what training recorded on the model that a reader of
its figures must know (``MetricModel.validation["notes"]``: an MDD-Eval student that took no step because no
pseudo-label passed the threshold is its teacher, unchanged)."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.utils import timezone

from metrics import registry
from metrics.benchmarking.benchmarks import score_set, scores_dialogues
from metrics.benchmarking.judgments import JudgedItem, JudgmentSet, file_kind, read_set, select
from metrics.models import MetricModel
from studies.analysis.correlation import correlation_difference, ratio_difference

DDPP_VALIDATION = 150  # DailyDialog++ test contexts that select the trained models: not on the card
PRIMARY = ("human:overall", "human:human-overall")
RESAMPLES = 2000


def shared_sets(directory: str | Path | None = None) -> list[JudgmentSet]:
    """Every human-judgment file under the shared data directory (a folder of several DSTC9 files is one
    set); DailyDialog++ only its ``test.json`` (the other files are training data), without the first 150
    contexts."""
    root = Path(directory or settings.SHARED_DATA_DIR)
    found: dict[tuple[Path, str], list[JudgmentSet]] = {}
    for path in sorted(root.rglob("*.json")) if root.is_dir() else []:
        try:
            kind = file_kind(path)
        except (ValueError, OSError):
            continue
        if kind == "ddpp" and path.name != "test.json":
            continue
        judgments = read_set(path, kind)
        if judgments.kind == "ddpp":
            judgments = select(judgments, offset=DDPP_VALIDATION)
            judgments.name = f"{path.parent.name}/{path.name} (contexts {DDPP_VALIDATION}–)"
        else:
            judgments.name = f"{path.parent.name}/{path.name}"
        found.setdefault((path.parent, judgments.kind), []).append(judgments)
    sets = []
    for (folder, kind), group in found.items():
        if kind == "dstc9" and len(group) > 1:  # one evaluation, one file per chatbot
            items = [i for s in group for i in s.items]
            missing = {q: sum(s.missing.get(q, 0) for s in group) for q in {q for s in group for q in s.missing}}
            sets.append(JudgmentSet(f"{folder.name}/ ({len(group)} files)", kind, items, missing))
        else:
            sets += group
    return sets


def study_sets() -> list[JudgmentSet]:
    """The imported benchmark studies (human judgments in the database): one set per study, the mean rating
    of each response (or conversation) per criterion."""
    from django.db.models import Avg

    from studies.models import Rating, Study, Unit

    sets = []
    for study in Study.objects.filter(experiment__is_benchmark=True).order_by("pk"):
        dialogue = study.unit == Unit.DIALOGUE
        target = "conversation_id" if dialogue else "response_id"
        rows = (Rating.objects.filter(assignment__study=study).values(target, "criterion__name")
                .annotate(mean=Avg("value")).values_list(target, "criterion__name", "mean"))
        human: dict[int, dict[str, float]] = {}
        for key, criterion, mean in rows:
            human.setdefault(key, {})["human:" + criterion] = float(mean)
        items = []
        if dialogue:
            from studies.models import Conversation

            for conversation in Conversation.objects.filter(pk__in=human).order_by("pk"):
                items.append(JudgedItem([t.get("text", "") for t in conversation.turns], None,
                                        human[conversation.pk],
                                        [t.get("speaker", "") for t in conversation.turns], str(conversation.pk)))
        else:
            from studies.models import Response

            for response in Response.objects.filter(pk__in=human).select_related("conversation").order_by("pk"):
                items.append(JudgedItem([t.get("text", "") for t in response.conversation.turns], response.text,
                                        human[response.pk],
                                        group=str(response.conversation_id)))
        if items:
            sets.append(JudgmentSet(f"study {study.slug}", "study-dialogue" if dialogue else "study", items))
    return sets


def _qualities(judgments: JudgmentSet, study: bool) -> list[str]:
    if judgments.kind == "ddpp":
        return ["ranking accuracy"]
    qualities = judgments.qualities
    if study:
        return qualities
    return [next((q for q in PRIMARY if q in qualities), qualities[0])] if qualities else []


def _ranking_rights(values: np.ndarray, items: list[JudgedItem]) -> tuple[np.ndarray, np.ndarray]:
    """Per context: pairs of different levels ranked right (ties half), and the pairs."""
    by_context: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        by_context.setdefault(item.group, []).append(index)
    right, total = [], []
    levels = np.array([item.level for item in items])
    for indices in by_context.values():
        lv, sv = levels[indices], values[indices]
        upper = lv[:, None] > lv[None, :]
        d = (sv[:, None] - sv[None, :])[upper]
        right.append(float(np.sum(d > 0) + 0.5 * np.sum(d == 0)))
        total.append(int(upper.sum()))
    return np.array(right), np.array(total)


def compare(model_values: np.ndarray, baseline_values: dict[str, np.ndarray], judgments: JudgmentSet,
            quality: str, *, resamples: int = RESAMPLES) -> dict[str, Any]:
    """The model's figure, each baseline's, and Δ with its interval, for one quality of one set."""
    from scipy import stats

    if quality == "ranking accuracy":
        right, total = _ranking_rights(model_values, judgments.items)
        entry: dict[str, Any] = {"model": float(right.sum() / total.sum()), "baselines": {}, "comparisons": []}
        for key, values in baseline_values.items():
            base_right, _ = _ranking_rights(values, judgments.items)
            delta, low, high = ratio_difference(right, base_right, total, resamples=resamples)
            entry["baselines"][key] = float(base_right.sum() / total.sum())
            entry["comparisons"].append(_comparison(key, delta, low, high))
        return entry
    human = np.array([item.human.get(quality, np.nan) for item in judgments.items])
    keep = np.isfinite(human)
    entry = {"model": float(stats.spearmanr(model_values[keep], human[keep]).statistic), "baselines": {},
             "comparisons": [], "n": int(keep.sum())}
    for key, values in baseline_values.items():
        delta, low, high = correlation_difference(model_values, values, human, resamples=resamples)
        entry["baselines"][key] = float(stats.spearmanr(values[keep], human[keep]).statistic)
        entry["comparisons"].append(_comparison(key, delta, low, high))
    return entry


def _comparison(key: str, delta: float, low: float, high: float) -> dict[str, Any]:
    return {"baseline": key, "delta": delta, "low": low, "high": high, "below": delta < 0,
            "clearly_below": bool(np.isfinite(high) and high < 0)}


def _every(log: Callable[[str], None], what: str, total: int, *, seconds: float = 10.0,
           clock: Callable[[], float] = time.monotonic) -> Callable[[int], None]:
    """A scoring pass's progress as lines through ``log``: at most one every ``seconds``, and its end (a
    card over DSTC9's 54k turns ran ten silent minutes before)."""
    last = [clock()]

    def report(done: int) -> None:
        now = clock()
        if done >= total or now - last[0] >= seconds:
            last[0] = now
            log(f"{what} {done}/{total} items scored")

    return report


def card_compute(model: MetricModel, sets: list[JudgmentSet], *, resamples: int = RESAMPLES,
                 log: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    started = time.monotonic()
    implementation = registry.implementation(model.metric.key, model.config)
    rows = []
    for number, judgments in enumerate(sets, start=1):
        if judgments.level == "dialogue" and not scores_dialogues(implementation):
            continue
        baselines = [key for key in registry.baseline_keys()
                     if judgments.level == "turn" or scores_dialogues(registry.implementation(key))]
        log(f"card [{number}/{len(sets)}] {judgments.name}: {len(judgments.items)} items, the model and "
            f"{len(baselines)} baselines")
        model_values = score_set(implementation, judgments, on_progress=_every(log, f"  {judgments.name}: the model",
                                                                              len(judgments.items)))
        baseline_values = {key: score_set(registry.implementation(key), judgments,
                                          on_progress=_every(log, f"  {judgments.name}: {key}", len(judgments.items)))
                           for key in baselines}
        for quality in _qualities(judgments, judgments.kind.startswith("study")):
            rows.append({"set": judgments.name, "kind": judgments.kind, "level": judgments.level,
                         "items": len(judgments.items), "quality": quality,
                         **compare(model_values, baseline_values, judgments, quality, resamples=resamples)})
    below = [{"set": row["set"], "quality": row["quality"], **c} for row in rows for c in row["comparisons"]
             if c["below"]]
    return {"status": "done", "built_at": timezone.now().isoformat(), "seconds": round(time.monotonic() - started, 1),
            "resamples": resamples, "rows": rows, "below": below,
            "notes": list((model.validation or {}).get("notes", []))}  # e.g. a student that took no step


def model_card_build(*, model: MetricModel, resamples: int = RESAMPLES,
                     log: Callable[[str], None] = lambda line: None) -> MetricModel:
    """Benchmark the model against the baselines on every set and store the card on it."""
    MetricModel.objects.filter(pk=model.pk).update(card={"status": "building", "since": timezone.now().isoformat()})
    try:
        card = card_compute(model, shared_sets() + study_sets(), resamples=resamples, log=log)
    except Exception as error:  # shown on the model's page; the worker carries on
        card = {"status": "failed", "error": f"{type(error).__name__}: {error}", "built_at": timezone.now().isoformat()}
    MetricModel.objects.filter(pk=model.pk).update(card=card)
    model.refresh_from_db()
    return model
