"""python manage.py train_metric METRIC --name NAME [--recipe default|paper] [options]   (a whole recipe)
python manage.py train_metric METRIC --stage STAGE [options]                            (one stage)

Without ``--stage`` the metric's recipe runs end to end (``Trainable.recipes``, declared with the metric:
``default`` is sized for a 2-core CPU, ``paper`` is the paper's configuration, whose expected time on this
device is printed first); each stage is a TrainingRun that registers its model (NAME for the last stage,
NAME-STAGE before it), and the same command again finishes a recipe that stopped. Options given apply to
every stage of the recipe. With ``--stage`` one stage runs, as configured by the options:

- quantidce: ``mlr`` (DailyDialog++ dev, validated on the first 150 test contexts), ``kd --init-from MODEL``
  (GRADE DailyDialog, a seeded 90/10 split);
- self_eval: ``coarse`` (DailyDialog++ positives.json, validated on dev.json), ``fine --init-from MODEL``;
- mdd_eval: ``teacher``, ``augment``, ``student --init-from TEACHER --dataset AUGMENTED``.

Trains here with progress bars for every phase (the code path of the Celery task), or with ``--queue``
leaves it to a worker on queue ``gpu``. ``--resume RUN`` continues a run that stopped (worker died,
cancelled, failed) from its last checkpoint."""
import argparse

from django.core.management.base import BaseCommand, CommandError

from metrics import registry
from metrics.management.mdd_arguments import MDD_OPTIONS, add_mdd_arguments
from metrics.models import MetricModel, RunStatus, TrainingRun
from metrics.training import recipes
from metrics.training import services as training
from ml.trainers import LogProgress, TqdmCallback

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


# numeric options: (type, help); the default shown is per stage (ml.trainers.config.STAGE_DEFAULTS, else the
# TrainingConfig field's default)
NUMERIC = {
    "epochs": (int, "passes over the training data"), "batch-size": (int, "contexts (mlr), pairs (kd, mdd_eval) or "
                                                                          "dialogues (self_eval) per micro-batch"),
    "grad-accumulation": (int, "micro-batches per optimizer step"), "lr": (float, "the encoder's learning rate"),
    "head-lr": (float, "the new head's own learning rate (0: --lr)"), "seed": (int, "seed of the head's "
                                                                                   "initialisation, the data order and splits"),
    "max-steps": (int, "stop after N optimizer steps (0: all epochs)"),
    "train-limit": (int, "use N training contexts / pairs / dialogues (0: all)"),
    "validation-limit": (int, "use N validation contexts / dialogues (0: all)"),
    "checkpoint-every": (int, "optimizer steps between checkpoints (0: none)"),
    "eval-every": (int, "optimizer steps between validations (0: after each epoch)"),
    "max-length": (int, "tokens per encoder input"), "alpha": (float, "kd: weight of MSE(4s+1, human)"),
    "beta": (float, "kd: weight of the distillation loss"),
    "per-level": (int, "responses per level (mlr) / samples per replacement level (self_eval)"),
    "max-turns": (int, "self_eval: dialogues keep their first N turns (0: all)"),
    "rdrop-weight": (float, "self_eval fine: weight of the R-drop term"),
    "head-dropout": (float, "self_eval: dropout of the head"),
    "responses-per-context": (int, "self_eval: dialogues per DailyDialog++ context"),
}


def shown_default(field: str) -> str:
    from ml.trainers.config import STAGE_DEFAULTS, TrainingConfig

    per_stage = {stage: values[field] for stage, values in STAGE_DEFAULTS.items() if field in values}
    base = getattr(TrainingConfig, field, None)
    if not per_stage:
        return f"default {base}"
    return "default " + ", ".join(f"{stage} {value}" for stage, value in per_stage.items()) + f", else {base}"


class Command(BaseCommand):
    help = ("Train a learned metric: its recipe end to end (train_metric METRIC --name NAME), or one stage "
            "(--stage). Trainable metrics: " + ", ".join(registry.trainable_keys()) + ".")

    def add_arguments(self, parser):
        parser.add_argument("metric", choices=registry.trainable_keys())
        parser.add_argument("--recipe", default=None,
                            help="without --stage: the recipe to run, default (sized for a CPU; the default) or paper "
                                 "(the paper's configuration: its expected time on this device is printed first)")
        parser.add_argument("--stage", choices=registry.all_stages(),
                            help="run one stage only: " + "; ".join(f"{key}: {', '.join(registry.trainable(key).stages)}"
                                                                      for key in registry.trainable_keys()))
        parser.add_argument("--name", default="", help="name of the MetricModel to register (default METRIC-STAGE-runN)")
        parser.add_argument("--encoder", help="Hugging Face name or local path (default: the packaged MiniLM)")
        parser.add_argument("--init-from", help="a MetricModel name or model directory to start from (KD: required)")
        parser.add_argument("--train", help="training data file (MLR: DailyDialog++ JSON lines; KD: GRADE JSON; "
                                            "self_eval: DailyDialog++ or dialogue JSON lines, or corpus:SLUG)")
        parser.add_argument("--validation", help="validation data file (KD default: a seeded 10%% split of --train)")
        parser.add_argument("--output", help="output directory (default ARTIFACTS_DIR/models/NAME)")
        for option, (kind, text) in NUMERIC.items():
            field = OPTIONS[option.replace("-", "_")]
            parser.add_argument(f"--{option}", type=kind, metavar="N" if kind is int else "X",
                                help=f"{text} ({shown_default(field)})".replace("%", "%%"))
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
                                 "default; see docs/metrics/learned.md); self_eval: cls_mean = [E_cls; mean pool] of the packed dialogue (the "
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
        parser.add_argument("--estimate-only", action="store_true",
                            help="with --recipe paper: print the expected time on this device and stop")
        parser.add_argument("--no-card", action="store_true",
                            help="a recipe: do not build the final model's card (the model beside the untrained "
                                 "baselines on every human-judgment set, with intervals) after training")
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
            if not options["stage"]:
                return self.recipe(options, given)
            if options["recipe"]:
                raise CommandError("--recipe: a recipe runs every stage; leave out --stage")
            try:
                run = training.training_run_create(metric=options["metric"], stage=options["stage"],
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

    def recipe(self, options, given):
        metric, recipe, name = options["metric"], options["recipe"] or "default", options["name"]
        try:
            planned = recipes.recipe_plan(metric=metric, recipe=recipe, name=name or metric, overrides=given)
            training.training_config(metric=metric, stage=planned[0].step.stage, **planned[0].settings)
        except ValueError as error:
            raise CommandError(str(error)) from None
        if not name:
            raise CommandError("--name: a recipe registers its model under this name")
        chosen = recipes.recipe_get(metric=metric, recipe=recipe)
        self.stdout.write(f"{metric} recipe {recipe!r}: {chosen.summary}; stages "
                          + ", ".join(f"{p.step.stage} -> {p.name}" for p in planned))
        if recipe != "default":  # say up front how long it will take here
            from ml.devices import pick_device

            self.stdout.write(f"Estimating the time of recipe {recipe!r} on {pick_device(given.get('device'))} "
                              "(each stage timed for two steps on its real data) ...")
            try:
                seconds = recipes.recipe_estimate(metric=metric, recipe=recipe, overrides=given,
                                                  log=lambda line: self.stdout.write(line))
            except (ValueError, OSError) as error:
                raise CommandError(f"--recipe {recipe}: {error}") from None
            self.stdout.write(self.style.WARNING(f"Recipe {recipe!r}: about {seconds / 3600:.1f} h on this device."))
            if options["estimate_only"]:
                return
        if options["queue"]:
            from metrics.tasks import training_recipe_execute

            training_recipe_execute.apply_async((metric, name, recipe, given), queue="gpu")
            self.stdout.write(f"Recipe queued for a worker (queue gpu); it registers {name}.")
            return
        try:
            # LogProgress: phases (embedding, pseudo-labelling) as lines too, for output redirected to a file
            recipes.recipe_run(metric=metric, name=name, recipe=recipe, overrides=given,
                               callbacks=[TqdmCallback(disable=options["verbosity"] < 1),
                                          LogProgress(lambda line: self.stdout.write(line))],
                               log=lambda line: self.stdout.write(line))
        except ValueError as error:
            raise CommandError(str(error)) from None
        model = MetricModel.objects.get(name=name)
        self.stdout.write(self.style.SUCCESS(f"Model {model.name} at {model.artifact_path}."))
        if not options["no_card"]:
            from metrics.benchmarking.model_cards import model_card_build
            from metrics.scoring.selectors import card_warnings

            model = model_card_build(model=model, log=lambda line: self.stdout.write(line))
            self.stdout.write(card_text(model.card))
            for line in card_warnings(model.card):
                self.stdout.write(self.style.WARNING("Warning: " + line))



def card_text(card: dict) -> str:
    """The card as a table: per set the model's figure beside each baseline's, Δ and its interval."""
    if card.get("status") != "done":
        return f"Model card: {card.get('status')} {card.get('error', '')}".strip()
    lines = [f"Model card ({card['seconds']:.0f} s; paired bootstrap, {card['resamples']} resamples):"]
    lines += [f"  Note: {note}" for note in card.get("notes", [])]
    for row in card["rows"]:
        lines.append(f"  {row['set']} — {row['quality']}: model {row['model']:.3f}")
        for c in row["comparisons"]:
            lines.append(f"    {c['baseline']:<16} {row['baselines'][c['baseline']]:.3f}   Δ {c['delta']:+.3f} "
                         f"[{c['low']:+.3f}, {c['high']:+.3f}]{'  below' if c['below'] else ''}")
    return "\n".join(lines)
