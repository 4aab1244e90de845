"""python manage.py import_ratings STUDY FILE: a long-format table of ratings (rater, conversation, system,
criterion, value; CSV or XLSX) into a study of the matching design, which is then closed. All or nothing:
every problem is printed by row and column."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from studies.authoring.ratings_import import RatingsImportFailed, ratings_table_import
from studies.errors import StudyStateError
from studies.models import Study


class Command(BaseCommand):
    help = "Import existing ratings (long format, CSV or XLSX) into a study, which is then closed."

    def add_arguments(self, parser):
        parser.add_argument("study", help="the study's slug")
        parser.add_argument("file", type=Path)

    def handle(self, *args, **options):
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']!r}")
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        with path.open("rb") as stream:
            try:
                summary = ratings_table_import(study=study, stream=stream, source_name=path.name)
            except RatingsImportFailed as failure:
                lines = "\n".join(f"  {p}" for p in failure.problems)
                raise CommandError(f"{path.name}: nothing was imported; fix these problems:\n{lines}") from None
            except StudyStateError as error:
                raise CommandError(str(error)) from None
        self.stdout.write(self.style.SUCCESS(
            f"Imported {summary.ratings} ratings by {summary.raters} raters into {study.slug} (now closed)."))
