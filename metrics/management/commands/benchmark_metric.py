"""python manage.py benchmark_metric METRIC [--model NAME] --dataset PATH [PATH ...] [--format auto|grade|fed|ddpp|dstc9]
    [--offset N] [--limit N] [--held-out SEED] [--seed N]

Prints JSON: for each file, per human quality (``human:<quality>``) n and Pearson/Spearman/Kendall with p
and the paper's figure where it gives one, or ranking accuracy between DailyDialog++ levels; with several
files of one kind also the pooled figures. PATH is a file or a folder of files (DSTC9's eleven
per-chatbot files: one call). Formats are read off the files unless given. Nothing is written."""
import json
import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from metrics import registry
from metrics.benchmarking.benchmarks import benchmark
from metrics.benchmarking.judgments import FORMATS
from metrics.models import MetricModel


class Command(BaseCommand):
    help = ("Correlate a metric with public human judgments (GRADE, FED turn and dialogue level, DSTC9) or rank "
            "DailyDialog++ levels, file by file and pooled. Metrics: " + ", ".join(sorted(registry.all_metrics()))
            + " (learned ones need --model).")

    def add_arguments(self, parser):
        parser.add_argument("metric", nargs="?", help="one of: " + ", ".join(sorted(registry.all_metrics())))
        parser.add_argument("--metrics", help="compare several on the same files: comma-separated metrics or metric "
                                              "models (a learned metric by its model's name), ranked by Spearman "
                                              "with the humans, each with a paired bootstrap interval of its gap "
                                              "to the best")
        parser.add_argument("--resamples", type=int, default=2000, help="--metrics: bootstrap resamples (2000)")
        parser.add_argument("--model", help="metric model name (its config is used; learned metrics need one)")
        parser.add_argument("--dataset", required=True, nargs="+", action="extend", metavar="PATH",
                            help="judgment files, or folders of them (several give per-file and pooled figures)")
        parser.add_argument("--format", default="auto", choices=FORMATS,
                            help="auto (the default): read off each file; fed: turn or dialogue level, read off the "
                                 "file; dstc9 and FED dialogue level need a dialogue-level metric (self_eval, "
                                 "coherence_turns, cosine_turns)")
        parser.add_argument("--seed", type=int, default=71,
                            help="dialogue-level metrics on ddpp: the seed of the Rep-0/1/2 replacement samples "
                                 "(default 71)")
        parser.add_argument("--limit", type=int, help="use only the first N records of each file (after --offset)")
        parser.add_argument("--offset", type=int, default=0,
                            help="skip the first N records of each file (e.g. the 150 DailyDialog++ contexts that "
                                 "validate training; default 0)")
        parser.add_argument("--held-out", type=int, metavar="SEED",
                            help="GRADE: only the 10%% validation share of the seeded split that KD fine-tuning "
                                 "held out (train_metric's --seed, 71 by default)")

    def handle(self, *args, **options):
        if options["metrics"]:
            return self.compare(options)
        if not options["metric"]:
            raise CommandError("name a metric, or several with --metrics a,b,c")
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
        bars = []

        def progress(name, total):
            bar = tqdm(total=total, desc=name, unit=" items", disable=options["verbosity"] < 1)
            bars.append(bar)
            return lambda done: bar.update(done - bar.n)

        started = time.perf_counter()
        try:
            result = benchmark(implementation, options["dataset"], metric=options["metric"], fmt=options["format"],
                               offset=options["offset"], limit=options["limit"], held_out=options["held_out"],
                               seed=options["seed"], progress=progress)
        except ValueError as error:
            raise CommandError(str(error)) from None
        finally:
            for bar in bars:
                bar.close()
        result = {"metric": options["metric"], "model": options["model"], **result,
                  "seconds": round(time.perf_counter() - started, 2), "fallback_values": implementation.warnings,
                  "truncated_dialogues": getattr(implementation, "truncated", 0)}
        self.stdout.write(json.dumps(result, indent=2))

    def compare(self, options):
        """--metrics a,b,c: each by metric key, or by metric model name (its metric and config)."""
        from metrics.benchmarking.benchmarks import compare

        implementations = {}
        for name in [n.strip() for n in options["metrics"].split(",") if n.strip()]:
            model = MetricModel.objects.filter(name=name).select_related("metric").first()
            try:
                implementations[name] = (registry.implementation(model.metric.key, model.config) if model
                                         else registry.implementation(name))
            except KeyError:
                raise CommandError(f"--metrics: {name!r} is neither a metric ({', '.join(registry.all_metrics())}) "
                                   "nor a metric model") from None
        if len(implementations) < 2:
            raise CommandError("--metrics: name at least two metrics to compare")
        bars = []

        def progress(name, total):
            bar = tqdm(total=total, desc=name, unit=" items", disable=options["verbosity"] < 1)
            bars.append(bar)
            return lambda done: bar.update(done - bar.n)

        try:
            result = compare(implementations, options["dataset"], fmt=options["format"], offset=options["offset"],
                             limit=options["limit"], resamples=options["resamples"], progress=progress)
        except ValueError as error:
            raise CommandError(str(error)) from None
        finally:
            for bar in bars:
                bar.close()
        self.stdout.write(json.dumps(result, indent=2))
