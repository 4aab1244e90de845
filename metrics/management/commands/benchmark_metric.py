"""python manage.py benchmark_metric METRIC [--model NAME] --dataset FILE --format grade|fed|ddpp [--offset N] [--limit N]
    [--held-out SEED]

Prints JSON: per quality n and Pearson/Spearman/Kendall with p (GRADE, FED), or ranking accuracy
between DailyDialog++ levels; the file is read directly, nothing is written."""
import json
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from metrics import registry
from metrics.benchmarking import human_correlations, ranking_accuracy, read_records, score_records
from metrics.models import MetricModel


class Command(BaseCommand):
    help = "Correlate a metric with public human judgments (GRADE, FED/DSTC10) or rank DailyDialog++ levels."

    def add_arguments(self, parser):
        parser.add_argument("metric")
        parser.add_argument("--model", help="metric model name (its config is used)")
        parser.add_argument("--dataset", required=True, type=Path)
        parser.add_argument("--format", required=True, choices=("grade", "fed", "ddpp", "dstc9"),
                            help="fed: turn or dialogue level, read off the file; dstc9 and FED dialogue level "
                                 "need a dialogue-level metric (self_eval, coherence_turns, cosine_turns)")
        parser.add_argument("--seed", type=int, default=71,
                            help="dialogue-level metrics on ddpp: the seed of the Rep-0/1/2 replacement samples")
        parser.add_argument("--limit", type=int, help="use only the first N records (after --offset)")
        parser.add_argument("--offset", type=int, default=0,
                            help="skip the first N records (e.g. the DailyDialog++ contexts used for validation)")
        parser.add_argument("--held-out", type=int, metavar="SEED",
                            help="GRADE: only the 10%% validation share of the seeded split that KD fine-tuning "
                                 "held out (train_metric's --seed, 71 by default)")

    def handle(self, *args, **options):
        config = {}
        if options["model"]:
            model = MetricModel.objects.filter(name=options["model"]).first()
            if model is None:
                raise CommandError(f"--model: no metric model {options['model']!r}")
            config = model.config
        try:
            implementation = registry.implementation(options["metric"], config)
        except KeyError as error:
            raise CommandError(str(error)) from None
        if not options["dataset"].is_file():
            raise CommandError(f"--dataset: no file {options['dataset']}")
        if hasattr(implementation, "score_dialogues"):  # dialogue level (SelF-Eval and its baselines)
            return self.dialogue_level(implementation, options)
        if options["format"] == "dstc9":
            raise CommandError(f"--format dstc9: dialogue-level judgments, and {options['metric']} scores responses only")
        try:
            records = read_records(options["dataset"], options["format"])
        except ValueError as error:
            raise CommandError(f"{options['dataset'].name}: {error}") from None
        if options["held_out"] is not None:
            if options["format"] != "grade":
                raise CommandError("--held-out: only for --format grade (the KD fine-tuning split)")
            from ml.data.human_scores import read_grade, split

            _, held_out = split(read_grade(options["dataset"]), seed=options["held_out"])
            keep = {pair.id for pair in held_out}
            records = [r for r in records if str(r.external_id) in keep]
        records = records[options["offset"]:]
        records = records[: options["limit"]] if options["limit"] else records
        started = time.perf_counter()
        with tqdm(total=sum(len(r.responses) for r in records), unit=" responses",
                  disable=options["verbosity"] < 1) as bar:
            scored = score_records(implementation, records, on_progress=lambda n: bar.update(n - bar.n))
        result = {"metric": options["metric"], "model": options["model"], "dataset": options["dataset"].name,
                  "format": options["format"], "records": len(records),
                  "seconds": round(time.perf_counter() - started, 2), "fallback_values": implementation.warnings}
        if options["format"] == "ddpp":
            result["ranking"] = ranking_accuracy(scored)
        else:
            result["qualities"] = human_correlations(scored)
        self.stdout.write(json.dumps(result, indent=2))

    def dialogue_level(self, implementation, options):
        from metrics.dialogue_benchmarking import benchmark

        started = time.perf_counter()
        try:
            result = benchmark(implementation, options["dataset"], options["format"], offset=options["offset"],
                               limit=options["limit"], seed=options["seed"])
        except ValueError as error:
            raise CommandError(f"{options['dataset'].name}: {error}") from None
        result = {"metric": options["metric"], "model": options["model"], "dataset": options["dataset"].name,
                  **result, "seconds": round(time.perf_counter() - started, 2),
                  "fallback_values": implementation.warnings}
        self.stdout.write(json.dumps(result, indent=2))
