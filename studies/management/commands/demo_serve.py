"""python manage.py demo_serve: one Celery worker (queues default and gpu) beside the web server,
on the embedded defaults. Prints the URLs and the login; Ctrl-C stops both."""
import subprocess
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from studies.authoring.demo import DEMO_PASSWORD, DEMO_USER


class Command(BaseCommand):
    help = "Run the web server and a Celery worker for the demo."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")
        parser.add_argument("--no-worker", action="store_true")

    def handle(self, *args, **options):
        worker = None
        if not options["no_worker"]:
            worker = subprocess.Popen([
                sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "default,gpu",
                "--concurrency=1", "--pool=solo", "--loglevel=WARNING", "-n", "demo@%h",
            ])
        base = f"http://{options['host']}:{options['port']}"
        self.stdout.write(self.style.SUCCESS("\nConcord is running on the embedded defaults."))
        self.stdout.write(f"  Researcher pages: {base}/   (login {DEMO_USER} / {DEMO_PASSWORD})")
        self.stdout.write(f"  API docs:         {base}/api/docs/")
        self.stdout.write(f"  Admin:            {base}/admin/")
        self.stdout.write(f"  Database:         {settings.DATABASES['default']['NAME']}")
        self.stdout.write(f"  Broker:           {settings.CELERY_BROKER_URL}"
                          f"{f' (worker pid {worker.pid})' if worker else ''}\n")
        try:
            call_command("runserver", f"{options['host']}:{options['port']}", use_reloader=False)
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(timeout=20)
