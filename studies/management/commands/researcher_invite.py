"""python manage.py researcher_invite USERNAME [--email E] [--no-endpoints] [--token-days N] [--base-url URL]"""
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from studies.api.tokens import api_token_create
from studies.researchers import researcher_invite


class Command(BaseCommand):
    help = ("Make a researcher account (or grant an existing one): a one-time password to sign in with, the "
            "permission bot endpoints need, and optionally an API token. Prints what to pass on.")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", default="")
        parser.add_argument("--no-endpoints", action="store_true",
                            help="do not grant studies.change_systemendpoint (bot endpoints: chat, self-chat, judges)")
        parser.add_argument("--token-days", type=int, default=None,
                            help="also make an API token valid this many days (0: no expiry)")
        parser.add_argument("--base-url", default="", help="site address, e.g. https://concord.example.org")

    def handle(self, *args, **options):
        try:
            invited = researcher_invite(username=options["username"], email=options["email"],
                                        endpoints=not options["no_endpoints"])
        except ValidationError as error:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items())) from None
        base = options["base_url"].rstrip("/")
        name = invited.user.get_username()
        if invited.created:
            self.stdout.write(f"account {name}: sign in at {base}/accounts/login/ with the one-time password "
                              f"{invited.password} (pass it on privately)")
        else:
            self.stdout.write(f"account {name} exists: password unchanged")
        if not options["no_endpoints"]:
            self.stdout.write(f"{name} may now set up bot endpoints (studies.change_systemendpoint)")
        if options["token_days"] is not None:
            if options["token_days"] < 0:
                raise CommandError("--token-days: 0 or more")
            issued = api_token_create(user=invited.user, name="invited", expires_in_days=options["token_days"] or None)
            self.stdout.write(f"API token (shown once): {issued.secret}")
