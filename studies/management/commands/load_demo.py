"""python manage.py load_demo: the demo experiments (rating designs compared; onboarding with practice items;
chat with a bot, then rate)
and a researcher login. Safe to run twice."""
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from studies.authoring.demo import DEMO_CORPUS, DEMO_PASSWORD, DEMO_USER, demo_load, demo_user
from studies.authoring.kinds_demo import kinds_demo_load
from studies.authoring.practice_demo import DEMO_ONBOARDING_STUDY, onboarding_demo_load
from studies.chat.acute_demo import acute_demo_load
from studies.chat.demo import BOT_PORT, ChatDemoSkipped, chat_demo_load
from studies.models import Corpus, Study
from studies.rating.links import study_entry_path


class Command(BaseCommand):
    help = "Load the demo experiment (four conditions, simulated ratings) and create the demo researcher."

    def add_arguments(self, parser):
        parser.add_argument("--chat-bot-port", type=int, default=BOT_PORT,
                            help="where the chat demo's bot answers (started here for the load if it is not up)")

    def handle(self, *args, **options):
        if not getattr(settings, "DEMO_ALLOWED", False):
            raise CommandError(f"load_demo does not run under production settings: it creates the superuser "
                               f"{DEMO_USER!r} whose password is in the README. Use config.settings.local.")
        experiment = demo_load()
        demo_user()
        if experiment is None:
            self.stdout.write("The demo experiment is already loaded.")
        else:
            self.stdout.write(self.style.SUCCESS(f"Loaded demo experiment {experiment.slug!r} with "
                                                 f"{experiment.studies.count()} studies."))
        labels = kinds_demo_load(owner=demo_user(), corpus=Corpus.objects.get(slug=DEMO_CORPUS))
        self.stdout.write("The labels demo is already loaded." if labels is None else self.style.SUCCESS(
            f"Loaded labels demo {labels.slug!r}: a categorical criterion with reasons and a multi-label one."))
        if onboarding_demo_load(owner=demo_user()) is None:
            self.stdout.write("The onboarding demo is already loaded.")
        else:
            self.stdout.write(self.style.SUCCESS("Loaded the onboarding demo (practice items, pass mark 2 of 3)."))
        practice = Study.objects.get(slug=DEMO_ONBOARDING_STUDY)
        self.stdout.write(f"Try its practice: {study_entry_path(practice)}?PROLIFIC_PID=00000000000000000000abcd&STUDY_ID=000000000000000000000001&SESSION_ID=000000000000000000000001")
        port = options["chat_bot_port"]
        try:
            chats = chat_demo_load(owner=demo_user(), port=port)
        except ChatDemoSkipped as skipped:
            self.stdout.write(f"The chat demo was not loaded: {skipped}.")
        else:
            if chats is None:
                self.stdout.write("The chat demo is already loaded.")
            else:
                study = chats.studies.get()
                self.stdout.write(self.style.SUCCESS(f"Loaded chat demo {chats.slug!r}: simulated raters chatted "
                                                     f"with two bots on 127.0.0.1:{port}."))
                self.stdout.write(f"Chat with them yourself: {study_entry_path(study)}?invite={study.invites.get().token}")
        try:
            acute = acute_demo_load(owner=demo_user(), port=port)
        except ChatDemoSkipped as skipped:
            self.stdout.write(f"The ACUTE-Eval demo was not loaded: {skipped}.")
        else:
            self.stdout.write("The ACUTE-Eval demo is already loaded." if acute is None else self.style.SUCCESS(
                f"Loaded ACUTE-Eval demo {acute.slug!r}: self-chats of two bots compared by simulated raters."))
        self.stdout.write(f"Researcher login: {DEMO_USER} / {DEMO_PASSWORD}")
