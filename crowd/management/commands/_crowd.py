"""Shared helpers of the crowd commands: find a study's publication, print errors without a trace."""
from __future__ import annotations

from django.core.management.base import CommandError

from crowd.models import Platform, Publication
from crowd.platforms import platform_of
from studies.models import Study


def add_target_arguments(parser) -> None:
    parser.add_argument("study", help="study slug")
    parser.add_argument("--platform", choices=Platform.values, default=Platform.MTURK)
    parser.add_argument("--production", action="store_true", help="MTurk production instead of the sandbox")


def publication_for(options, *, create: bool = False) -> Publication:
    study = Study.objects.filter(slug=options["study"]).select_related("experiment").first()
    if study is None:
        raise CommandError(f"no study {options['study']!r}")
    sandbox = platform_of(options["platform"]).has_sandbox and not options["production"]
    publication = Publication.objects.filter(study=study, platform=options["platform"], sandbox=sandbox).first()
    if publication is None and not create:
        where = f"{options['platform']}{' sandbox' if sandbox else ''}"
        raise CommandError(f"study {study.slug} has no {where} publication (run crowd_publish first)")
    return publication
