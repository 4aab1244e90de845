"""MDD-Eval's stages as TrainingRuns (Zhang et al. AAAI 2022; ``ml.trainers.mdd_eval``): ``teacher``,
``augment`` and ``student`` (which pseudo-labels the augmented set with the teacher first). Each runs
on queue ``gpu`` through ``metrics.training.services`` (the same create / execute / cancel / resume path as
QuantiDCE); this module is the runner MDD-Eval's ``Trainable`` names (``configure`` / ``execute``).

- teacher / student register their best model as a MetricModel (validation accuracy per class,
  pseudo-label counts before and after filtering in ``validation``);
- augment registers a versioned ``TrainingDataset`` (JSON lines under the artifacts directory, SHA-256,
  counts per technique, the skipped techniques and why); the student takes it by name.

Dialogue sources for augmentation: JSON-lines files (default: DailyDialog++ dev + positives from the
shared data) and Concord corpora as ``corpus:<slug>`` (``corpus:*`` = every corpus), exported at run
time as {"id", "turns"} — a conversation's turns followed by its reference response, when it has one."""
from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from django.conf import settings
from django.db.models.functions import Now

from metrics.models import MetricModel, RunStatus, TrainingDataset, TrainingRun
from ml.trainers import Callback
from ml.trainers.callbacks import best_summary
from ml.trainers.mdd_config import MDDEvalConfig

DEFAULT_TEACHER_DATA = "dailydialog_pp/dev.json"  # the DailyDialog++ training split is not public; test is the benchmark
DEFAULT_SOURCES = ("dailydialog_pp/dev.json", "dailydialog_pp/positives.json")
CORPUS = "corpus:"


def _is_mdd_model(path: str) -> bool:
    meta = Path(path) / "metric.json"
    return (Path(path) / "head.pt").is_file() and meta.is_file() and json.loads(meta.read_text()).get("metric") == "mdd_eval"


def dataset_path(name_or_path: str) -> str:
    """A registered TrainingDataset's file, or the path itself."""
    dataset = TrainingDataset.objects.filter(name=name_or_path).first()
    return dataset.path if dataset else name_or_path


def configure(*, metric: str = "mdd_eval", stage: str, **settings_given) -> MDDEvalConfig:
    """A full, validated MDD-Eval configuration; a bad setting raises ValueError("field: why")."""
    config = MDDEvalConfig.for_stage(stage, **settings_given)
    shared = Path(settings.SHARED_DATA_DIR)
    if stage == "teacher" and not config.train_data:
        config.train_data = str(shared / DEFAULT_TEACHER_DATA)
    if stage == "augment":
        from studies.models import Corpus

        sources = [s.strip() for s in config.sources.split(",") if s.strip()] or [str(shared / s) for s in DEFAULT_SOURCES]
        for source in sources:
            if source.startswith(CORPUS):
                slug = source[len(CORPUS):]
                if slug != "*" and not Corpus.objects.filter(slug=slug).exists():
                    raise ValueError(f"sources: no corpus {slug!r}")
            elif not Path(source).is_file():
                raise ValueError(f"sources: no file {source}")
        config.sources = ",".join(sources)
        for field in ("mask_model", "translate_forward", "translate_backward", "generator_model"):
            value = getattr(config, field)
            if value and value.startswith((".", "/")) and not Path(value).exists():
                raise ValueError(f"{field}: no model directory {value}")
    if stage == "student":
        if not config.train_data:
            raise ValueError("train_data: give the augmented data set (a TrainingDataset name or a JSON-lines file)")
        config.train_data = dataset_path(config.train_data)
        if not config.init_from or not _is_mdd_model(config.init_from):
            raise ValueError(f"init_from: the student needs a trained MDD-Eval teacher, not {config.init_from or 'nothing'!r}")
    for field in ("train_data", "validation_data"):
        value = getattr(config, field)
        if value and not Path(value).is_file():
            raise ValueError(f"{field}: no file {value}")
    return config


def export_corpora(sources: str, directory: Path) -> str:
    """Replace ``corpus:<slug>`` sources by one JSON-lines export of those corpora's dialogues."""
    from studies.models import Conversation, Response

    files: list[str] = []
    slugs: list[str] = []
    for source in (s for s in sources.split(",") if s):
        (slugs if source.startswith(CORPUS) else files).append(source.removeprefix(CORPUS))
    if not slugs:
        return sources
    conversations = Conversation.objects.all() if "*" in slugs else Conversation.objects.filter(corpus__slug__in=slugs)
    references = dict(Response.objects.filter(conversation__in=conversations, is_reference=True)
                      .values_list("conversation_id", "text"))
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "corpora.jsonl"
    with target.open("w", encoding="utf-8") as stream:
        for pk, corpus, turns in conversations.values_list("pk", "corpus__slug", "turns").iterator():
            texts = [t.get("text", "") for t in turns] + ([references[pk]] if pk in references else [])
            stream.write(json.dumps({"id": f"{corpus}-{pk}", "turns": texts}) + "\n")
    return ",".join([*files, str(target)])


def execute(*, run: TrainingRun, callbacks: Sequence[Callback] = ()) -> TrainingRun:
    """Execute (resume) one MDD-Eval stage and register what it made; the run is already claimed by
    ``metrics.training.services.training_run_execute`` (RUNNING, attempts counted)."""
    from metrics.training.services import TrainingRunProgress, metric_model_register_trained, training_run_fail
    from ml.devices import pick_device
    from ml.trainers import mdd_eval

    settings_given = dict(run.config)
    name = settings_given.pop("model_name")
    config = MDDEvalConfig(**settings_given)
    device = str(pick_device(config.device))
    TrainingRun.objects.filter(pk=run.pk).update(device=device)
    lines: list[str] = []
    started = time.monotonic()
    every = [TrainingRunProgress(run), *callbacks]
    try:
        if config.stage == "augment":
            config.sources = export_corpora(config.sources, Path(config.output_dir))
            path, counts = mdd_eval.run_augment(config, every, log=lines.append)
        else:
            state = mdd_eval.build(config, every, log=lines.append).train(resume=True)
    except Exception as error:  # recorded on the run for the UI; the worker carries on
        return training_run_fail(run=run, error=error, lines=lines)
    if TrainingRun.objects.filter(pk=run.pk, status=RunStatus.CANCELLED).exists():
        run.refresh_from_db()
        return run
    seconds = time.monotonic() - started
    if config.stage == "augment":
        TrainingDataset.objects.update_or_create(name=name, defaults={
            "metric": run.metric, "path": str(path), "sha256": counts["sha256"], "counts": counts, "run": run})
        summary = (f"attempt {run.attempts}: data set {name}: {counts['records']} pairs from {counts['pairs']} "
                   f"originals in {seconds:.0f} s; per technique {counts['techniques']}")
        TrainingRun.objects.filter(pk=run.pk).update(status=RunStatus.DONE, finished_at=Now(),
                                                     log="\n".join([run.log, *lines, summary]).strip())
        run.refresh_from_db()
        return run
    best = Path(config.output_dir) / "best"
    model = metric_model_register_trained(metric=run.metric, name=name, directory=best, config=config, state=state)
    meta = json.loads((best / "metric.json").read_text())
    model.validation.update({k: meta[k] for k in ("validation_accuracy", "pseudo_labels") if meta.get(k)})
    unchanged = (meta.get("pseudo_labels") or {}).get("student_unchanged") if not state.step else None
    if unchanged:  # said on the run (log, phase), the model and its card (metrics.benchmarking.model_cards reads ``notes``)
        model.validation["notes"] = [*model.validation.get("notes", []), unchanged]
    MetricModel.objects.filter(pk=model.pk).update(validation=model.validation)
    summary = (f"attempt {run.attempts}: {state.step} steps on {device} in {seconds:.0f} s"
               + (f" — {unchanged}" if unchanged else "") + f"; {best_summary(state, config.select_by)}")
    if meta.get("validation_accuracy"):
        summary += "; validation accuracy " + ", ".join(f"{k} {v:.3f}" for k, v in meta["validation_accuracy"].items()
                                                        if v is not None)
    TrainingRun.objects.filter(pk=run.pk).update(status=RunStatus.DONE, done=state.step, total=state.total_steps,
                                                 losses=state.history, result=model, finished_at=Now(),
                                                 log="\n".join([run.log, *lines, summary]).strip(),
                                                 **({"phase": unchanged[:120]} if unchanged else {}))
    run.refresh_from_db()
    return run


def estimate(*, metric: str = "mdd_eval", stage: str, directory: Path, **settings_given) -> tuple[float, str, str]:
    """The expected seconds of a stage on this device: the teacher and the student by timing two steps on
    their real data (the student's pseudo-labels of a sample of the augmented set, scaled to its size:
    an upper bound, since the threshold drops some); augmentation by running it on 20 pairs and scaling."""
    from metrics.training.stages import trainer_estimate
    from ml.data.mdd_augment import dialogue_pairs
    from ml.trainers import mdd_eval

    config = configure(stage=stage, **settings_given)
    config.output_dir, config.checkpoint_every = str(directory / stage), 0
    if stage == "augment":
        config.sources = export_corpora(config.sources, directory)
        dialogues = [d for s in config.sources.split(",") if s for d in mdd_eval.read_dialogues(s)]
        pairs = len(dialogue_pairs(dialogues, max_context_turns=config.max_context_turns, seed=config.seed))
        pairs = min(pairs, config.pairs_limit) if config.pairs_limit else pairs
        total, config.pairs_limit = pairs, min(20, pairs)
        started = time.monotonic()
        path, counts = mdd_eval.run_augment(config, log=lambda line: None)
        seconds = (time.monotonic() - started) * total / max(1, config.pairs_limit)
        return seconds, f"{config.pairs_limit} of {total} pairs in {time.monotonic() - started:.1f} s", str(path)
    if stage == "student":
        records = len(Path(config.train_data).read_text().splitlines()) if Path(config.train_data).is_file() else 0
        seconds, note, standin = trainer_estimate(lambda c, cb: mdd_eval.build(c, cb, log=lambda line: None), config,
                                                  standin=directory / "student-standin")
        return seconds, note + f" (on a sample of {records} augmented pairs: scale with the augmented set)", standin
    return trainer_estimate(lambda c, cb: mdd_eval.build(c, cb, log=lambda line: None), config,
                            standin=directory / f"{stage}-standin")
