"""python manage.py demo_judge: the demo's LLM judge. A small rule-based OpenAI-compatible judge server
(``metrics.judging.local_judge``, on 127.0.0.1:8766) answers for the demo researcher's endpoint
``demo-judge``; a judge of the Likert demo study's first criterion scores that study, so the human-vs-metric
page ranks it beside the heuristics. Run again, it reuses the endpoint, the judge and the cached answers."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from metrics.scoring import judges

JUDGE_PORT = 8766
DEMO_SYSTEM = "demo-judge"
DEMO_STUDY = "demo-likert"


class Command(BaseCommand):
    help = "Score the demo's Likert study with a small local rule-based LLM judge (run after load_demo)."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=JUDGE_PORT, help=f"the judge server's port ({JUDGE_PORT}; 0: any)")

    def handle(self, *args, **options):
        from metrics.judging.local_judge import LocalJudge
        from metrics.models import MetricModel
        from metrics.scoring import services
        from studies.authoring.demo import demo_user
        from studies.models import Study, System, SystemEndpoint

        study = Study.objects.filter(slug=DEMO_STUDY).first()
        if study is None:
            raise CommandError(f"no study {DEMO_STUDY}: run load_demo first")
        owner = demo_user()
        try:
            judge = LocalJudge(port=options["port"])
        except OSError:
            raise CommandError(f"port {options['port']} is taken: stop what listens there and run demo_judge again") from None
        with judge:
            system, _ = System.objects.get_or_create(name=DEMO_SYSTEM)
            endpoint, _ = SystemEndpoint.objects.update_or_create(
                system=system, owner=owner,
                defaults={"protocol": "openai", "url": judge.url("logprobs"), "model_name": "rule-judge"})
            criterion = study.criteria.order_by("position").first()
            if criterion is None:
                raise CommandError(f"{DEMO_STUDY} has no criterion to judge")
            name = f"judge-{study.slug}-{criterion.name}"
            model = MetricModel.objects.filter(name=name).first()
            if model is None:
                try:
                    model = judges.judge_model_create(owner=owner, endpoint_id=endpoint.pk, study=study,
                                                              criterion=criterion.name, name=name, logprobs=True)
                except ValidationError as error:
                    raise CommandError(f"demo judge not made: {error.message_dict}") from None
            run = services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study,
                                                                               enqueue=False))
        self.stdout.write(self.style.SUCCESS(f"Demo judge {model.name}: {run.done} of {run.total} responses scored"))
        self.stdout.write(run.log.splitlines()[-1] if run.log else "")
