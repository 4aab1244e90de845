"""python manage.py load_demo: the demo experiment and a researcher login. Safe to run twice."""
from django.core.management.base import BaseCommand

from studies.authoring.demo import DEMO_PASSWORD, DEMO_USER, demo_load, demo_user


class Command(BaseCommand):
    help = "Load the demo experiment (four conditions, simulated ratings) and create the demo researcher."

    def handle(self, *args, **options):
        experiment = demo_load()
        demo_user()
        if experiment is None:
            self.stdout.write("The demo experiment is already loaded.")
        else:
            self.stdout.write(self.style.SUCCESS(f"Loaded demo experiment {experiment.slug!r} with "
                                                 f"{experiment.studies.count()} studies."))
        self.stdout.write(f"Researcher login: {DEMO_USER} / {DEMO_PASSWORD}")
