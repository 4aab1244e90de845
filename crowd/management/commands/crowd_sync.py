"""Sync MTurk/Prolific with Concord now (what the periodic task does): abandon stale assignments,
then read every live publication's assignments or submissions.

    manage.py crowd_sync             # every live publication
    manage.py crowd_sync STUDY [--platform prolific] [--production]
"""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from crowd import sync
from crowd.errors import PlatformError
from crowd.models import Platform, Publication
from studies.rating import review


class Command(BaseCommand):
    help = "Sync crowd platforms' assignments with Concord's."

    def add_arguments(self, parser):
        parser.add_argument("study", nargs="?", help="study slug (default: every live publication)")
        parser.add_argument("--platform", choices=Platform.values)
        parser.add_argument("--production", action="store_true")

    def handle(self, *args, **options):
        expired = review.assignments_expire_stale()
        self.stdout.write(f"{expired} assignment(s) past their time limit abandoned")
        publications = Publication.objects.exclude(status=Publication.Status.DRAFT).exclude(external_id="")
        if options["study"]:
            publications = publications.filter(study__slug=options["study"])
            if options["platform"]:
                publications = publications.filter(platform=options["platform"])
            if options["production"]:
                publications = publications.filter(sandbox=False)
            if not publications.exists():
                raise CommandError(f"study {options['study']!r} has no live publication to sync")
        failed = 0
        for publication in publications.select_related("study"):
            try:
                self.stdout.write(f"{publication}: {sync.publication_sync(publication=publication)}")
            except PlatformError as error:
                failed += 1
                self.stderr.write(f"{publication}: {error}")
        if failed:
            raise CommandError(f"{failed} publication(s) could not be synced")
