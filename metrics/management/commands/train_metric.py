"""python manage.py train_metric quantidce --stage mlr|kd [--init-from MODEL] [--train FILE] [--validation FILE]
    [--epochs N] [--batch-size N] [--lr X] [--head-lr X] [--train-limit N] [--validation-limit N] [--max-steps N]
    [--representation cls|mean|paired|windows] [--freeze-encoder] ... [--queue]

Creates a TrainingRun and trains here with a progress bar (the code path of the Celery task), or with
``--queue`` leaves it to a worker on queue ``gpu``. The best model registers as a MetricModel.
``--resume RUN`` continues a run that stopped (worker died, cancelled, failed) from its last checkpoint.
Defaults: the packaged MiniLM; MLR on DailyDialog++ dev, validated on test; KD on GRADE DailyDialog
(seeded 90/10 split).

SelF-Eval: ``train_metric self_eval --stage coarse`` then ``--stage fine --init-from MODEL`` [--per-level K]
[--max-turns N] [--rdrop-weight X] [--head-dropout X] [--representation cls_mean|pairs] (pairs: consecutive
turns embedded apart, needs --freeze-encoder; docs/self_eval_results.md); dialogues from DailyDialog++ positives.json, validated
on dev.json, by default."""
import argparse

from django.core.management.base import BaseCommand, CommandError

from metrics import training
from metrics.management.mdd_arguments import MDD_OPTIONS, MDD_STAGES, add_mdd_arguments
from metrics.models import RunStatus, TrainingRun
from ml.trainers import TqdmCallback

OPTIONS = {  # command option -> TrainingConfig field
    "encoder": "encoder", "init_from": "init_from", "train": "train_data", "validation": "validation_data",
    "output": "output_dir", "epochs": "epochs", "batch_size": "batch_size", "grad_accumulation": "grad_accumulation",
    "lr": "learning_rate", "head_lr": "head_learning_rate", "seed": "seed", "max_steps": "max_steps", "train_limit": "train_limit",
    "validation_limit": "validation_limit", "checkpoint_every": "checkpoint_every", "eval_every": "eval_every",
    "device": "device", "truncate": "truncate", "max_length": "max_length", "per_level_mean": "per_level_mean",
    "signed_separation": "signed_separation", "alpha": "alpha", "beta": "beta", "representation": "representation",
    "freeze_encoder": "freeze_encoder", "lr_schedule": "lr_schedule",
    # SelF-Eval
    "per_level": "per_level", "max_turns": "max_turns", "rdrop_weight": "rdrop_weight", "head_dropout": "head_dropout",
    "responses_per_context": "responses_per_context", "cache_features": "cache_features",
}


class Command(BaseCommand):
    help = "Train a learned metric (QuantiDCE: --stage mlr, then --stage kd --init-from the MLR model)."

    def add_arguments(self, parser):
        parser.add_argument("metric", choices=training.TRAINABLE)
        parser.add_argument("--stage", choices=("mlr", "kd", "coarse", "fine", *MDD_STAGES),
                            help="quantidce: mlr (default), kd; self_eval: coarse (default), fine; "
                                 "mdd_eval: teacher (default), augment, student")
        parser.add_argument("--name", default="", help="name of the MetricModel to register (default METRIC-STAGE-runN)")
        parser.add_argument("--encoder", help="Hugging Face name or local path (default: the packaged MiniLM)")
        parser.add_argument("--init-from", help="a MetricModel name or model directory to start from (KD: required)")
        parser.add_argument("--train", help="training data file (MLR: DailyDialog++ JSON lines; KD: GRADE JSON; "
                                            "self_eval: DailyDialog++ or dialogue JSON lines, or corpus:SLUG)")
        parser.add_argument("--validation", help="validation data file (KD default: a seeded 10%% split of --train)")
        parser.add_argument("--output", help="output directory (default ARTIFACTS_DIR/models/NAME)")
        for option, kind in (("epochs", int), ("batch-size", int), ("grad-accumulation", int), ("lr", float),
                             ("head-lr", float),
                             ("seed", int), ("max-steps", int), ("train-limit", int), ("validation-limit", int),
                             ("checkpoint-every", int), ("eval-every", int), ("max-length", int), ("alpha", float),
                             ("beta", float), ("per-level", int), ("max-turns", int), ("rdrop-weight", float),
                             ("head-dropout", float), ("responses-per-context", int)):
            parser.add_argument(f"--{option}", type=kind)
        parser.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda when available)")
        parser.add_argument("--truncate", choices=("oldest", "newest"))
        parser.add_argument("--lr-schedule", choices=("auto", "linear", "constant"),
                            help="after the warm-up: linear decay to 0 (the paper), constant, or auto (quantidce MLR's "
                                 "default: constant with a frozen encoder, linear otherwise)")
        parser.add_argument("--per-level-mean", action="store_true", default=None,
                            help="compactness on the mean distance per level (the released code) instead of per sample")
        parser.add_argument("--signed-separation", action="store_true", default=None,
                            help="separation on c_j − c_i instead of |c_j − c_i| (SelF-Eval's form)")
        parser.add_argument("--representation", choices=("cls", "mean", "paired", "windows", "cls_mean", "pairs"),
                            help="what the head reads: quantidce: cls = the cross-encoded pair's pooler (the paper), "
                                 "mean = its mean pooling, paired = context and response embedded apart, windows = "
                                 "paired with the whole context and with the last turn, one head, averaged (the "
                                 "default; see the README); self_eval: cls_mean = [E_cls; mean pool] of the packed dialogue (the "
                                 "paper, default), pairs = consecutive turns embedded apart, scored per pair, "
                                 "averaged (needs --freeze-encoder)")
        parser.add_argument("--freeze-encoder", action=argparse.BooleanOptionalAction, default=None,
                            help="MLR: train the head only, on the pretrained encoder's features (the default; "
                                 "--no-freeze-encoder fine-tunes the encoder too, as the paper does)")
        parser.add_argument("--cache-features", action=argparse.BooleanOptionalAction, default=None,
                            help="with --freeze-encoder: compute the frozen encoder's features once and train the "
                                 "head on them (the CPU-friendly option; on by default for quantidce MLR, off for "
                                 "self_eval)")
        add_mdd_arguments(parser)
        parser.add_argument("--queue", action="store_true", help="leave the run to a Celery worker (queue gpu)")
        parser.add_argument("--resume", type=int, metavar="RUN", help="continue TrainingRun RUN from its last checkpoint")

    def handle(self, *args, **options):
        if options["resume"]:
            run = TrainingRun.objects.filter(pk=options["resume"]).first()
            if run is None:
                raise CommandError(f"--resume: no training run {options['resume']}")
            if run.status == RunStatus.DONE:
                raise CommandError(f"--resume: run {run.pk} is done already (model {run.result})")
            TrainingRun.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED, finished_at=None)
        else:
            given = {field: options[option] for option, field in (OPTIONS | MDD_OPTIONS).items() if options.get(option) is not None}
            if options["metric"] == "self_eval" and "representation" in given:  # SelF-Eval's own choices
                given["self_eval_representation"] = given.pop("representation")
            try:
                stage = options["stage"] or training.STAGES[options["metric"]][0]
                run = training.training_run_create(metric=options["metric"], stage=stage,
                                                   model_name=options["name"], enqueue=options["queue"], **given)
            except ValueError as error:
                raise CommandError(str(error)) from None
            if options["queue"]:
                self.stdout.write(f"Training run {run.pk} queued for a worker (queue gpu); output {run.config['output_dir']}")
                return
        run = training.training_run_execute(run=run, callbacks=[TqdmCallback(disable=options["verbosity"] < 1)])
        if run.status != RunStatus.DONE:
            raise CommandError(f"training run {run.pk} {run.status}: {run.log.splitlines()[-1] if run.log else ''}")
        self.stdout.write(self.style.SUCCESS(
            f"Training run {run.pk}: {run.status}. "
            + (f"Model {run.result.name} at {run.result.artifact_path}. " if run.result else "")  # augment: a data set
            + run.log))
