"""python manage.py import_dialogues FILE [FILE ...] [--format auto|jsonl|csv|ddpp|grade|fed|dstc9|parlai-...]
[--corpus NAME] [--system NAME ...] [--owner USERNAME]: all or nothing; problems are printed by line and
field. Several files (of one format, e.g. the parts of one DSTC9 evaluation) make one corpus and one
benchmark study."""
import json
import time
from contextlib import ExitStack
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from studies.corpora.importing.formats import FORMATS
from studies.corpora.importing.records import ImportFailed, detected_text, missing_scores_text
from studies.corpora.services import dialogues_import


class Command(BaseCommand):
    help = "Import conversations and system responses (and, for GRADE/FED, human scores as a benchmark study)."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, nargs="+", help="one file, or several files of one evaluation")
        parser.add_argument("--format", default="auto", choices=("auto", *FORMATS))
        parser.add_argument("--corpus", help="corpus name (default: the file name)")
        parser.add_argument("--system", action="append", default=[], help="a system the file may use (repeatable)")
        parser.add_argument("--owner", help="username that owns the corpus and any benchmark study")
        parser.add_argument("--judged-speaker", default="",
                            help="whole dialogues: the speaker to judge wherever a conversation has it")
        parser.add_argument("--json", action="store_true", help="print the summary as JSON")

    def handle(self, *args, **options):
        paths: list[Path] = options["file"]
        for missing in [p for p in paths if not p.is_file()]:
            raise CommandError(f"{missing}: no such file")
        path = paths[0]
        owner = None
        if options["owner"]:
            owner = get_user_model().objects.filter(username=options["owner"]).first()
            if owner is None:
                raise CommandError(f"--owner: no user {options['owner']!r}")
        started = time.perf_counter()
        with ExitStack() as files, path.open("rb") as stream, tqdm(unit=" conversations", disable=options["verbosity"] < 1 or options["json"]) as bar:
            def progress(done: int) -> None:
                bar.update(done - bar.n)

            try:
                summary = dialogues_import(
                    stream=stream, source_name=path.name, source_format=options["format"],
                    corpus_slug=options["corpus"], owner=owner, systems=options["system"], on_progress=progress,
                    judged_speaker=options["judged_speaker"],
                    more_files=[(p.name, files.enter_context(p.open("rb"))) for p in paths[1:]],
                )
            except ImportFailed as failure:
                lines = "\n".join([f"  {line}" for line in [detected_text(failure)] if line]
                                  + [f"  {problem}" for problem in failure.problems])
                raise CommandError(f"{path.name}: nothing was imported; fix these problems:\n{lines}") from None
            progress(summary.conversations)
        result = {**summary.as_dict(), "seconds": round(time.perf_counter() - started, 3)}
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        if options["format"] == "auto":
            self.stdout.write(f"Detected format: {summary.format_name}")
        self.stdout.write(self.style.SUCCESS(
            f"Imported {summary.conversations} conversations and {summary.responses} responses into corpus "
            f"{summary.corpus.slug!r} ({summary.format}) in {result['seconds']} s."))
        if summary.systems_created:
            self.stdout.write(f"New systems: {', '.join(summary.systems_created)}")
        if summary.benchmark_study:
            unit = " of whole dialogues" if summary.unit == "dialogue" else ""
            self.stdout.write(f"Benchmark study {summary.benchmark_study.slug!r}: {summary.ratings} human ratings{unit}.")
        if summary.acute_study:
            self.stdout.write(f"The pairs to judge became the draft ACUTE-Eval study {summary.acute_study.slug!r}.")
        for warning in summary.warnings:
            self.stdout.write(self.style.WARNING(f"Warning: {warning}"))
        if summary.missing_scores:
            self.stdout.write(missing_scores_text(summary.missing_scores, summary.unit))
