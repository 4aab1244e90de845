"""python manage.py invite_create STUDY [--count N] [--label TEXT] [--days 14] [--base-url https://HOST]"""
from urllib.parse import urlencode

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from studies.models import Study
from studies.rating import invites
from studies.rating.links import study_entry_path


class Command(BaseCommand):
    help = "Make single-use invitation links (with an expiry) for an invite-platform study; prints one per line."

    def add_arguments(self, parser):
        parser.add_argument("study", help="study slug")
        parser.add_argument("--count", type=int, default=1, help="how many links (default 1)")
        parser.add_argument("--label", default="", help="whom they are for (numbered when --count > 1)")
        parser.add_argument("--days", type=int, default=invites.INVITE_DAYS_DEFAULT,
                            help=f"days each link can be opened (default {invites.INVITE_DAYS_DEFAULT})")
        parser.add_argument("--base-url", default="", help="site address to put in front, e.g. https://concord.example.org")

    def handle(self, *args, **options):
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"study: no study {options['study']!r}")
        if not 1 <= options["count"] <= 10000:
            raise CommandError("--count: must be from 1 to 10000")
        path = study_entry_path(study)
        for n in range(options["count"]):
            label = options["label"] if options["count"] == 1 or not options["label"] else f"{options['label']} {n + 1}"
            try:
                invite = invites.invite_create(study=study, label=label, expires_in_days=options["days"])
            except ValidationError as error:
                raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items())) from None
            self.stdout.write(f"{options['base_url'].rstrip('/')}{path}?{urlencode({'invite': invite.token})}\t"
                              f"{invite.label}\t{invite.expires_at:%Y-%m-%dT%H:%MZ}")
