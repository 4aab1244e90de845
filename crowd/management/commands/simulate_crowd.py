"""Drive N simulated raters through the real rater pages (entry link with MTurk or Prolific
parameters, consent, every item, questionnaire), for demos and load tests.

    manage.py simulate_crowd STUDY --raters 20                      # in process (Django's test client)
    manage.py simulate_crowd STUDY --raters 200 --server http://127.0.0.1:8000 --concurrency 8
"""
from __future__ import annotations

import random
import secrets
import statistics
from concurrent.futures import ThreadPoolExecutor

from django.core.management.base import BaseCommand, CommandError

from crowd.platforms import PLATFORMS
from crowd.simulation import DjangoSession, HttpSession, simulate_rater
from studies.models import Study


class Command(BaseCommand):
    help = "Simulate raters taking a published study through its real HTTP pages."

    def add_arguments(self, parser):
        parser.add_argument("study", help="study slug (published)")
        parser.add_argument("--raters", type=int, default=5)
        parser.add_argument("--platform", choices=tuple(PLATFORMS),
                            help="default: the study's platform (a study accepts only its own platform's links)")
        parser.add_argument("--server", help="base URL of a running server; default: in process")
        parser.add_argument("--concurrency", type=int, default=1, help="parallel raters (with --server)")
        parser.add_argument("--seed", type=int, help="answers and identities are reproducible with a seed")

    def handle(self, *args, **options):
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']!r}")
        if study.status != Study.Status.PUBLISHED:
            raise CommandError(f"study {study.slug} is {study.status}; publish it first")
        platform = options["platform"] or study.platform
        if platform != study.platform or platform not in PLATFORMS:
            raise CommandError(f"study {study.slug} takes links of the kind {study.get_platform_display()!r}; simulated raters "
                               "enter by Mechanical Turk or Prolific links of the study's own platform")
        if options["raters"] < 1:
            raise CommandError("--raters must be at least 1")
        seed = options["seed"] if options["seed"] is not None else secrets.randbits(32)
        run = f"SIM{seed:08X}"[:14]
        concurrency = max(1, options["concurrency"]) if options["server"] else 1

        def one(index: int):
            session = HttpSession(options["server"]) if options["server"] else DjangoSession()
            rater, entry = PLATFORMS[platform].simulated_entry(run, index)
            return simulate_rater(session, study_slug=study.slug, rater=rater, entry=entry,
                                  rng=random.Random(seed * 100003 + index))

        if concurrency == 1:  # in process: stay on this thread (and its database connection)
            results = [one(i) for i in range(options["raters"])]
        else:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                results = list(pool.map(one, range(options["raters"])))
        done = [r for r in results if r.completed]
        for r in results:
            if not r.completed:
                self.stderr.write(f"{r.rater}: stopped after {r.pages} page(s): {r.problem}")
        per_page = [r.seconds / r.pages for r in results if r.pages]
        self.stdout.write(
            f"{len(done)}/{len(results)} simulated raters completed {study.slug} (run {run}); "
            f"{sum(r.pages for r in results)} pages, median {statistics.median(per_page) * 1000:.0f} ms per page")
        if not done:
            raise CommandError("no simulated rater completed the study")
