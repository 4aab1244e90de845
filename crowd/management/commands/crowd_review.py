"""Review a study's platform assignments from the command line.

    manage.py crowd_review STUDY --list
    manage.py crowd_review STUDY --approve-all-submitted
    manage.py crowd_review STUDY --approve-passed        (all that passed the attention checks / gold items)
    manage.py crowd_review STUDY --reject-failed --feedback "You missed 2 of 3 attention checks."
    manage.py crowd_review STUDY --approve 3SUWZRL0MZ... --approve ...
    manage.py crowd_review STUDY --reject ASSIGNMENT_ID --feedback "You answered every item in 2 seconds."
    manage.py crowd_review STUDY --platform prolific --reject SUBMISSION_ID --category LOW_EFFORT --feedback "..."
    manage.py crowd_review STUDY --bonus ASSIGNMENT_ID 0.50 --reason "Careful work"
    manage.py crowd_review STUDY --block WORKER_ID --reason "..."   |   --unblock WORKER_ID
    manage.py crowd_review STUDY --extend-hits HOURS   |   --expire-hits

Ids are the platform's (MTurk AssignmentId, Prolific submission id).
"""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from crowd import bonuses, reviews, workers
from crowd.errors import PlatformError, PublishRefused
from crowd.management.commands._crowd import add_target_arguments, publication_for
from crowd.platforms import mturk
from studies.rating.review import ReviewError


class Command(BaseCommand):
    help = "Approve, reject, bonus, block workers, extend or expire HITs of a study's publication."

    def add_arguments(self, parser):
        add_target_arguments(parser)
        parser.add_argument("--list", action="store_true", help="list platform assignments and their states")
        parser.add_argument("--approve-all-submitted", action="store_true")
        parser.add_argument("--approve-passed", action="store_true",
                            help="approve every submitted assignment that passed the quality checks")
        parser.add_argument("--reject-failed", action="store_true",
                            help="reject every submitted assignment that failed the quality checks (needs --feedback)")
        parser.add_argument("--approve", action="append", default=[], metavar="ID")
        parser.add_argument("--reject", action="append", default=[], metavar="ID")
        parser.add_argument("--feedback", default="", help="feedback the worker sees (required to reject)")
        parser.add_argument("--category", default="", help="Prolific rejection category (e.g. LOW_EFFORT)")
        parser.add_argument("--bonus", nargs=2, metavar=("ID", "AMOUNT"))
        parser.add_argument("--reason", default="")
        parser.add_argument("--block", metavar="WORKER_ID")
        parser.add_argument("--unblock", metavar="WORKER_ID")
        parser.add_argument("--extend-hits", type=int, metavar="HOURS")
        parser.add_argument("--expire-hits", action="store_true")

    def handle(self, *args, **options):
        publication = publication_for(options)
        try:
            self._handle(publication, options)
        except ValidationError as error:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items())
                               if hasattr(error, "error_dict") else " ".join(error.messages)) from None
        except (PlatformError, PublishRefused, ReviewError) as error:
            raise CommandError(str(error)) from None

    def _records(self, publication, ids):
        found = {r.external_id: r for r in publication.worker_assignments.filter(external_id__in=ids)}
        missing = [i for i in ids if i not in found]
        if missing:
            raise CommandError(f"not known for {publication} (sync first?): {', '.join(missing)}")
        return [found[i] for i in ids]

    def _handle(self, publication, options):
        did = False
        if options["list"]:
            did = True
            for r in publication.worker_assignments.select_related("assignment").order_by("accepted_at"):
                concord = r.assignment.status if r.assignment else "not in Concord"
                self.stdout.write(f"{r.external_id}\t{r.worker_id}\t{r.state}\t{concord}")
        for decision, ids in (("approve", options["approve"]), ("reject", options["reject"])):
            records = self._records(publication, ids) if ids else []
            if decision == "approve" and options["approve_all_submitted"]:
                records += reviews.submitted_records(publication)
            if records:
                did = True
                outcome = reviews.assignments_review(publication=publication, records=records, decision=decision,
                                                      feedback=options["feedback"], rejection_category=options["category"])
                self.stdout.write(f"{decision}: {outcome}")
                if outcome.failed:
                    raise CommandError(f"{len(outcome.failed)} failed")
        for flag, passed in (("approve_passed", True), ("reject_failed", False)):
            if options[flag]:
                did = True
                outcome = reviews.assignments_review_checked(publication=publication, passed=passed,
                                                              feedback=options["feedback"],
                                                              rejection_category=options["category"])
                self.stdout.write(f"{'approve passed' if passed else 'reject failed'}: {outcome}")
                if outcome.failed:
                    raise CommandError(f"{len(outcome.failed)} failed")
        if options["approve_all_submitted"] and not did:
            self.stdout.write("nothing submitted to approve")
            did = True
        if options["bonus"]:
            did = True
            record = self._records(publication, [options["bonus"][0]])[0]
            if record.assignment is None:
                raise CommandError(f"{record.external_id} has no Concord assignment to attach the bonus to")
            bonus = bonuses.bonus_create(publication=publication, assignment=record.assignment,
                                          amount=options["bonus"][1], reason=options["reason"])
            bonuses.bonuses_send(bonuses=[bonus])
            self.stdout.write(f"bonus {bonus.amount} sent to {record.worker_id} (token {bonus.token})")
        if options["block"]:
            did = True
            workers.worker_block(publication=publication, worker_id=options["block"], reason=options["reason"])
            self.stdout.write(f"blocked {options['block']}")
        if options["unblock"]:
            did = True
            workers.worker_unblock(publication=publication, worker_id=options["unblock"], reason=options["reason"])
            self.stdout.write(f"unblocked {options['unblock']}")
        if options["extend_hits"]:
            did = True
            for hit in publication.hits.exclude(hit_status="Gone"):
                mturk.hit_extend(hit=hit, hours=options["extend_hits"])
            self.stdout.write(f"HITs extended by {options['extend_hits']} hour(s)")
        if options["expire_hits"]:
            did = True
            self.stdout.write(f"{mturk.hits_expire(publication=publication)} HIT(s) expired")
        if not did:
            raise CommandError("nothing to do: give --list, --approve-all-submitted, --approve-passed, --approve, --reject, --bonus, ...")
