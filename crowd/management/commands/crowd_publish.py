"""Publish a study on MTurk (sandbox by default) or Prolific: show the cost and balance, refuse
what cannot be published, then send.

    manage.py crowd_publish STUDY --set reward=0.80 --set hits=5 --dry-run
    manage.py crowd_publish STUDY --production --confirm-production
    manage.py crowd_publish STUDY --platform prolific --set reward_cents=250 --set completion_code=C0NC0RD --confirm-production
    manage.py crowd_publish STUDY --experiment-link --set reward=0.80   # one HIT type for all of STUDY's experiment
"""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from crowd import publishing
from crowd.errors import PlatformError, PublishRefused
from crowd.management.commands._crowd import add_target_arguments, publication_for
from crowd.platforms import platform_of


class Command(BaseCommand):
    help = "Publish a study on Mechanical Turk or Prolific (cost estimate and balance first)."

    def add_arguments(self, parser):
        add_target_arguments(parser)
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a publication setting")
        parser.add_argument("--confirm-production", action="store_true", help="real workers, real money")
        parser.add_argument("--draft-only", action="store_true", help="Prolific: create the draft study only")
        parser.add_argument("--dry-run", action="store_true", help="show the estimate and problems; send nothing")
        parser.add_argument("--experiment-link", action="store_true",
                            help="publish the experiment's link (one HIT type / Prolific study for every condition)")

    def handle(self, *args, **options):
        settings = {}
        for item in options["set"]:
            key, sep, value = item.partition("=")
            if not sep:
                raise CommandError(f"--set {item!r}: expected KEY=VALUE")
            settings[key.strip()] = value.strip()
        if options["experiment_link"]:
            settings["experiment_link"] = True
        publication = publication_for(options, create=True)
        study_slug = options["study"]
        try:
            if publication is None or settings:
                from studies.models import Study

                publication = publishing.publication_configure(
                    study=Study.objects.get(slug=study_slug), platform=options["platform"],
                    sandbox=not options["production"], settings=settings)
            estimate = publishing.publication_estimate(publication)
            self.stdout.write(f"{publication}: {estimate.places} place(s), estimated cost {estimate.total} "
                              f"(rewards {estimate.rewards}, fees {estimate.fees}, bonuses {estimate.bonuses} "
                              f"+ {estimate.bonus_fees}); " + "; ".join(estimate.notes))
            problems = publishing.publish_problems(publication, confirm_production=options["confirm_production"])
            if options["dry_run"]:
                self.stdout.write("would refuse: " + "; ".join(problems) if problems else "ready to publish")
                return
            platform = platform_of(publication)
            if platform.has_balance:
                self.stdout.write(f"balance: ${platform.balance(publication=publication)}")
            publication = publishing.publication_publish(publication=publication,
                                                       confirm_production=options["confirm_production"],
                                                       draft_only=options["draft_only"])
            self.stdout.write(self.style.SUCCESS(platform.published_summary(publication)))
        except ValidationError as error:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items())
                               if hasattr(error, "error_dict") else " ".join(error.messages)) from None
        except (PlatformError, PublishRefused) as error:
            raise CommandError(str(error)) from None
