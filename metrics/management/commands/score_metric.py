"""python manage.py score_metric METRIC [--model NAME] [--study SLUG | --corpus SLUG | --all | --retry RUN] [--force]

``--retry RUN``: a run of RUN's model and scope that scores only what is still unscored (failed judge calls).

The same code path as the Celery task (services.scoring_run_execute), run here with a progress bar."""
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from metrics import registry
from metrics.models import MetricModel
from metrics.scoring import services
from studies.models import Corpus, Study


class Command(BaseCommand):
    help = "Score responses with a metric and store the scores (skips responses already scored unless --force)."

    def add_arguments(self, parser):
        parser.add_argument("metric")
        parser.add_argument("--model", help="metric model name (default: the metric's default instance)")
        scope = parser.add_mutually_exclusive_group(required=True)
        scope.add_argument("--study")
        scope.add_argument("--corpus")
        scope.add_argument("--all", action="store_true")
        scope.add_argument("--retry", type=int, metavar="RUN",
                           help="score only what run RUN left unscored (its failed calls), with its model and scope")
        parser.add_argument("--force", action="store_true")

    def handle(self, *args, **options):
        if options["metric"] not in registry.all_metrics():
            raise CommandError(f"unknown metric {options['metric']!r}; known: {', '.join(sorted(registry.all_metrics()))}")
        if options["model"]:
            model = MetricModel.objects.filter(name=options["model"], metric__key=options["metric"]).first()
            if model is None:
                raise CommandError(f"--model: no model {options['model']!r} of metric {options['metric']}")
        else:
            model = services.metric_model_default(key=options["metric"])
        study = corpus = None
        if options["retry"] is not None:
            from metrics.models import ScoringRun

            old = ScoringRun.objects.filter(pk=options["retry"]).select_related("metric_model").first()
            if old is None:
                raise CommandError(f"--retry: no run {options['retry']}")
            try:
                run = services.scoring_run_retry(run=old, enqueue=False)
            except ValidationError as error:
                raise CommandError("; ".join(f"--retry: {m}" for m in error.messages)) from None
            model = run.metric_model
            return self._execute(run, model, options)
        if options["study"]:
            study = Study.objects.filter(slug=options["study"]).first() or self._missing("study", options["study"])
        if options["corpus"]:
            corpus = Corpus.objects.filter(slug=options["corpus"]).first() or self._missing("corpus", options["corpus"])
        try:
            run = services.scoring_run_create(metric_model=model, study=study, corpus=corpus, force=options["force"],
                                              enqueue=False)
        except ValidationError as error:  # a turn-level metric on a dialogue study
            raise CommandError("; ".join(f"--metric: {m}" for m in error.messages)) from None
        self._execute(run, model, options)

    def _execute(self, run, model, options):
        with tqdm(unit=" responses", disable=options["verbosity"] < 1) as bar:
            def progress(done, total):
                bar.total = total
                bar.update(done - bar.n)
            run = services.scoring_run_execute(run=run, on_progress=progress)
        self.stdout.write(self.style.SUCCESS(f"Run {run.pk}: {run.status}, {run.done}/{run.total} responses scored "
                                             f"with {model.name}. {run.log}"))

    @staticmethod
    def _missing(kind, slug):
        raise CommandError(f"--{kind}: no {kind} {slug!r}")
