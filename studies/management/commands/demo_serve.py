"""python manage.py demo_serve: one Celery worker (queues default and gpu) and the chat demo's small
rule-based bot (studies.chat.local_bot, on 127.0.0.1:8765) beside the web server, on the embedded
defaults. Prints the URLs and the login; Ctrl-C stops them all."""
import subprocess
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from studies.authoring.demo import DEMO_PASSWORD, DEMO_USER
from studies.chat.demo import BOT_PORT


class Command(BaseCommand):
    help = "Run the web server and a Celery worker for the demo."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")
        parser.add_argument("--no-worker", action="store_true")
        parser.add_argument("--no-bot", action="store_true", help="do not start the chat demo's bot")

    def handle(self, *args, **options):
        worker = None
        if not options["no_worker"]:
            worker = subprocess.Popen([
                sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "default,gpu",
                "--concurrency=1", "--pool=solo", "--loglevel=WARNING", "-n", "demo@%h",
            ])
        bot = None
        if not options["no_bot"]:
            bot = subprocess.Popen([sys.executable, "-m", "studies.chat.local_bot", "--port", str(BOT_PORT)],
                                   stdout=subprocess.DEVNULL)
        base = f"http://{options['host']}:{options['port']}"
        self.stdout.write(self.style.SUCCESS("\nConcord is running on the embedded defaults."))
        self.stdout.write(f"  Researcher pages: {base}/   (login {DEMO_USER} / {DEMO_PASSWORD})")
        self.stdout.write(f"  API docs:         {base}/api/docs/")
        self.stdout.write(f"  Admin:            {base}/admin/")
        self.stdout.write(f"  Database:         {settings.DATABASES['default']['NAME']}")
        self.stdout.write(f"  Broker:           {settings.CELERY_BROKER_URL}"
                          f"{f' (worker pid {worker.pid})' if worker else ''}")
        if bot is not None:
            self.stdout.write(f"  Chat demo bot:    http://127.0.0.1:{BOT_PORT}/rule/chat and /parrot/chat "
                              f"(pid {bot.pid}); settings allow it with CHAT_ALLOWED_NETWORKS")
        self.stdout.write("")
        try:
            call_command("runserver", f"{options['host']}:{options['port']}", use_reloader=False)
        finally:
            for process in (worker, bot):
                if process is not None:
                    process.terminate()
                    process.wait(timeout=20)
