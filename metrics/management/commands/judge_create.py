"""Make an LLM judge of a study criterion through a researcher's OpenAI-compatible endpoint.

    python manage.py judge_create --owner alice --endpoint 3 --study my-study --criterion coherence [--logprobs]
        [--name judge-x] [--concurrency 4] [--requests-per-minute 0] [--price-prompt 0] [--price-completion 0]

Then ``score_metric`` (or the metrics page, or ``POST /api/metrics/runs/``) scores with it."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from metrics.scoring.judges import judge_model_create
from studies.models import Study


class Command(BaseCommand):
    help = "Make an LLM judge (a metric model) of one study criterion through the owner's OpenAI-compatible endpoint."

    def add_arguments(self, parser):
        parser.add_argument("--owner", required=True, help="the researcher's user name (the endpoint and study are theirs)")
        parser.add_argument("--endpoint", required=True, type=int, help="the endpoint's id (its page shows it)")
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument("--criterion", required=True, help="the criterion's name")
        parser.add_argument("--name", default="", help="the judge's name (default judge-<study>-<criterion>)")
        parser.add_argument("--logprobs", action="store_true", help="probability-weighted scores (G-Eval)")
        parser.add_argument("--concurrency", type=int, default=4)
        parser.add_argument("--requests-per-minute", type=int, default=0)
        parser.add_argument("--price-prompt", type=float, default=0.0, help="per million prompt tokens")
        parser.add_argument("--price-completion", type=float, default=0.0, help="per million completion tokens")

    def handle(self, *args, **options):
        owner = get_user_model().objects.filter(username=options["owner"]).first()
        if owner is None:
            raise CommandError(f"--owner: no user {options['owner']!r}")
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None or not (owner.is_superuser or study.experiment.owner_id == owner.pk
                                 or study.experiment.collaborators.filter(pk=owner.pk).exists()):
            raise CommandError(f"--study: {options['owner']} has no study {options['study']!r}")
        try:
            model = judge_model_create(
                owner=owner, endpoint_id=options["endpoint"], study=study, criterion=options["criterion"],
                name=options["name"], logprobs=options["logprobs"], concurrency=options["concurrency"],
                requests_per_minute=options["requests_per_minute"], price_prompt_per_million=options["price_prompt"],
                price_completion_per_million=options["price_completion"])
        except ValidationError as error:
            raise CommandError("; ".join(f"--{k.replace('_', '-')}: {' '.join(v)}" for k, v in error.message_dict.items())) from None
        self.stdout.write(self.style.SUCCESS(f"Judge {model.name}: {model.config['criterion']['question']} "
                                             f"({model.config['level']} level)"))
