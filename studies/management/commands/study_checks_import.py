"""python manage.py study_checks_import STUDY checks.csv [--per-assignment N] [--positions 5,20] [--min-pass-rate 0.75]

Adds attention checks / gold items to a draft study from a CSV (columns kind, context, responses,
rules; see studies.rating.checks). All rows or none: a problem names the row and field."""
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from studies.authoring import checks
from studies.errors import StudyStateError
from studies.models import Study
from studies.rating.checks import checks_config


class Command(BaseCommand):
    help = "Add attention-check and gold items to a draft study from a CSV of check definitions."

    def add_arguments(self, parser):
        parser.add_argument("study", help="study slug")
        parser.add_argument("path", help="CSV with columns kind, context, responses, rules (and reference, "
                                         "reference_value for magnitude studies)")
        parser.add_argument("--per-assignment", help="checks per rater")
        parser.add_argument("--positions", help="1-based screens, e.g. 5,20 (default: random positions)")
        parser.add_argument("--min-pass-rate", help="flag raters below this pass rate (default 0.75)")

    def handle(self, *args, **options):
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"study: no study {options['study']!r}")
        try:
            with open(options["path"], "rb") as stream, transaction.atomic():  # items and settings, or nothing
                added = checks.check_items_import(study=study, stream=stream)
                if any(options[k] is not None for k in ("per_assignment", "positions", "min_pass_rate")):
                    study = checks.study_checks_configure(study=study, per_assignment=options["per_assignment"],
                                                          positions=options["positions"],
                                                          min_pass_rate=options["min_pass_rate"])
        except OSError as error:
            raise CommandError(f"{options['path']}: {error.strerror}") from None
        except ValidationError as error:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items())
                               if hasattr(error, "error_dict") else " ".join(error.messages)) from None
        except StudyStateError as error:
            raise CommandError(str(error)) from None
        config = checks_config(study)
        where = (f"at screens {', '.join(map(str, config['positions']))}" if config["positions"]
                 else f"{config['per_assignment']} per rater at random positions")
        self.stdout.write(f"{added} check item(s) added to {study.slug}; checks {where}, "
                          f"flagged below a pass rate of {config['min_pass_rate']}")
