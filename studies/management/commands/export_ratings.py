"""python manage.py export_ratings [--study SLUG ... | --experiment SLUG] [--format csv|jsonl|xlsx] [-o FILE]
[--raw-ids]: raters are named by their per-experiment pseudonym unless --raw-ids (xlsx needs -o)."""
import sys

from django.core.management.base import BaseCommand, CommandError

from studies.models import Study
from studies.reports.exporting import EXPORT_FORMATS, export_lines, export_xlsx


class Command(BaseCommand):
    help = "Export ratings as a tidy long table (one row per rating)."

    def add_arguments(self, parser):
        parser.add_argument("--study", action="append", default=[], help="study slug (repeatable)")
        parser.add_argument("--experiment", help="experiment slug: all its studies")
        parser.add_argument("--format", default="csv", choices=EXPORT_FORMATS)
        parser.add_argument("-o", "--output", help="file to write (default: standard output)")
        parser.add_argument("--raw-ids", action="store_true",
                            help="the platforms' worker ids instead of per-experiment pseudonyms")

    def handle(self, *args, **options):
        studies = Study.objects.all()
        if options["experiment"]:
            studies = studies.filter(experiment__slug=options["experiment"])
            if not studies.exists():
                raise CommandError(f"--experiment: no experiment {options['experiment']!r} with studies")
        if options["study"]:
            unknown = set(options["study"]) - set(Study.objects.filter(slug__in=options["study"]).values_list("slug", flat=True))
            if unknown:
                raise CommandError(f"--study: no study {', '.join(sorted(unknown))}")
            studies = studies.filter(slug__in=options["study"])
        if options["format"] == "xlsx":
            if not options["output"]:
                raise CommandError("--format xlsx: name the workbook to write with -o FILE.xlsx")
            with open(options["output"], "wb") as out:
                export_xlsx(studies, out, raw_ids=options["raw_ids"])
            return
        lines = export_lines(studies, options["format"], raw_ids=options["raw_ids"])
        if options["output"]:
            with open(options["output"], "w", encoding="utf-8", newline="") as out:
                out.writelines(lines)
            return
        try:
            sys.stdout.writelines(lines)
        except BrokenPipeError:  # the reader (e.g. `head`) stopped early
            sys.stderr.close()
