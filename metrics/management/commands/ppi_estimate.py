"""python manage.py ppi_estimate MODEL (--study SLUG | --experiment SLUG) [--width W] [--alpha A] [--combine M ...] [--json]

Human + metric estimates (metrics.ppi.estimates): per study, criterion and system the prediction-powered mean human
score beside the human-only one, the places, and the planner's items for a target interval width."""
import json

from django.core.management.base import BaseCommand, CommandError

from metrics.models import MetricModel
from metrics.ppi import estimates as ppi
from studies.models import Experiment, Study


def _num(value, digits=3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


class Command(BaseCommand):
    help = "Prediction-powered (PPI++) estimates of the mean human score per system, with a metric's scores."

    def add_arguments(self, parser):
        parser.add_argument("metric_model", help="a metric model's name (see /metrics/)")
        scope = parser.add_mutually_exclusive_group(required=True)
        scope.add_argument("--study")
        scope.add_argument("--experiment")
        parser.add_argument("--width", type=float, help="planner: target interval width (default: half the widest)")
        parser.add_argument("--alpha", type=float, default=ppi.ALPHA, help="error level (default 0.05: 95%% intervals)")
        parser.add_argument("--combine", nargs="+", default=[], metavar="MODEL",
                            help="further metric models combined with MODEL by cross-fitted weights, per system")
        parser.add_argument("--json", action="store_true", help="print the whole report as JSON")

    def handle(self, *args, **options):
        model = MetricModel.objects.filter(name=options["metric_model"]).first()
        if model is None:
            known = ", ".join(MetricModel.objects.values_list("name", flat=True)) or "none yet"
            raise CommandError(f"metric_model: no model {options['metric_model']!r} (known: {known})")
        if options["width"] is not None and not options["width"] > 0:
            raise CommandError(f"--width: must be above 0, got {options['width']}")
        if not 0 < options["alpha"] < 1:
            raise CommandError(f"--alpha: must be between 0 and 1, got {options['alpha']}")
        if options["study"]:
            studies = Study.objects.filter(slug=options["study"])
            if not studies.exists():
                raise CommandError(f"--study: no study {options['study']!r}")
        else:
            experiment = Experiment.objects.filter(slug=options["experiment"]).first()
            if experiment is None:
                raise CommandError(f"--experiment: no experiment {options['experiment']!r}")
            studies = experiment.studies.all()
        combine = []
        for name in options["combine"]:
            other = MetricModel.objects.filter(name=name).first()
            if other is None:
                raise CommandError(f"--combine: no model {name!r}")
            combine.append(other)
        report = ppi.ppi_report(studies, model, alpha=options["alpha"], target_width=options["width"], combine=combine)
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=1, default=str))
            return
        for study in report["studies"]:
            self.stdout.write(f"{study['title']} ({study['slug']})")
            if study.get("combination_problem"):
                self.stdout.write(f"  {study['combination_problem']}")
            if study["problem"]:
                self.stdout.write(f"  not estimated: {study['problem']}")
                continue
            for c in study["criteria"]:
                self.stdout.write(f"  {c['criterion']}: system, human only [CI], with {model.name} [CI], lambda, "
                                  f"rated/unrated, effective n, place")
                places = {p["system"]: p for p in c["ranking"]}
                for r in c["systems"] + ([c["pooled"]] if c.get("pooled") else []):
                    p = places.get(r["system"])
                    self.stdout.write(
                        f"    {r['system']:<14} {_num(r['human_estimate'])} [{_num(r['human_ci_low'])}, "
                        f"{_num(r['human_ci_high'])}]  {_num(r['estimate'])} [{_num(r['ci_low'])}, {_num(r['ci_high'])}]"
                        f" n = {r['n']}  {_num(r['lam'], 2)}  {r['n']}/{r['n_unlabelled']}  {_num(r['n_effective'], 1)}"
                        + (f"  {p['place']} ({p['best']}-{p['worst']})" if p else "")
                        + (f"  warning: {r['warning']}" if r.get("warning") else ""))
                for k in c.get("combination", []):
                    self.stdout.write(f"    combined {k['system']}: {_num(k['estimate'])} [{_num(k['ci_low'])}, "
                                      f"{_num(k['ci_high'])}] n = {k['n']}; {k['verdict']}")
                for p in c["plan"]:
                    self.stdout.write(f"    plan {p['system']}: width {_num(c['target_width'])} needs "
                                      f"{p['needed_without_metric']} rated items without the metric, "
                                      f"{p['needed_with_metric']} with it"
                                      + ("" if p["reachable"] else " (more than the frame holds)"))
            for c in study["pairwise"]:
                for w in c["win_rates"]:
                    self.stdout.write(f"  {c['criterion']}: {w['a']} beats {w['b']}: human only {_num(w['human_estimate'])}"
                                      f", with {model.name} {_num(w['estimate'])} [{_num(w['ci_low'])}, {_num(w['ci_high'])}]")
            pay = study.get("pay")
            if pay:
                self.stdout.write(f"  more items for the target width: {pay['more_with_metric']} with the metric "
                                  f"(cost {_num(pay['cost_with_metric'], 2)}), {pay['more_without_metric']} without "
                                  f"(cost {_num(pay['cost_without_metric'], 2)}); {pay['remaining_in_frame']} left in "
                                  f"the frame")
