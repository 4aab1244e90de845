"""Numbers with their meaning: ICC(C,k) beside α says which is the reliability of a mean of k ratings and
which of one rating; the rater's start page counts the screens the rater will get (items and checks); the
experiment list counts ratings as the export does (check answers are not ratings) and shows exclusions."""
import csv
import io
import re

import pytest
from django.test import Client

from studies.authoring import services as authoring
from studies.models import Assignment, Rating
from studies.onboarding import services as onboarding
from studies.rating import decisions
from studies.rating.screens import screens_per_assignment
from tests.studies.test_checks import add_check, answer, rater
from tests.studies.test_checks import rater_entry as entry
from tests.studies.test_system_scores_report import client_of, rated_likert

pytestmark = pytest.mark.django_db

RULE = [{"response": 1, "value": 2}]


def test_agreement_icc_k_is_explained_as_the_reliability_of_a_mean_beside_alpha_of_one_rating(make_study, user):
    study = rated_likert(make_study)
    body = client_of(user).get(f"/studies/{study.slug}/report/").content.decode()
    meaning = re.search(r'data-testid="icc-k-meaning">(.*?)</p>', body, re.S).group(1)
    assert "mean of the k ratings" in meaning and "one rating" in meaning and "Spearman" in meaning
    agreement = body[body.index('id="agreement"'):]
    assert "reliability of <em>one rating</em>" in agreement and "mean of k ratings" in agreement


def checked_study(make_study, *, practice=False):
    study = make_study("likert", publish=False, raters_per_item=2, items_per_assignment=3, platform="mturk")
    add_check(study, RULE)
    add_check(study, RULE)
    if practice:
        onboarding.practice_item_create(study=study, context="A: Hi!\nB: Hello.", responses=["Hello there.", "Banana."],
                                        rules=[{"response": 2, "max": 2}], explanation="B does not answer.")
        onboarding.onboarding_configure(study=study, pass_mark=1)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def test_screens_per_assignment_are_the_items_and_checks_a_rater_gets(make_study, user):
    study = checked_study(make_study)
    assert screens_per_assignment(study) == {"items": 3, "checks": 2, "screens": 5}
    assignment = entry.assignment_start(study=study, rater=rater("w1"), seed=1)
    assert assignment.assignment_items.count() == 5
    page = client_of(user).get(f"/studies/{study.slug}/").content.decode()
    assert "each rater gets 5 screens: 3 items and 2 checks" in page


def test_the_practice_start_page_counts_the_screens_with_their_checks(make_study):
    study = checked_study(make_study, practice=True)
    page = Client().get(f"/r/{study.slug}/?workerId=W1&assignmentId=A1&hitId=H1&turkSubmitTo=https://www.mturk.com",
                        follow=True)
    count = re.search(r'data-testid="item-count">There are <strong>(\d+)</strong>', page.content.decode())
    assert count and int(count.group(1)) == 5


def test_the_experiment_list_counts_ratings_as_the_export_and_marks_exclusions(make_study, user):
    study = checked_study(make_study)
    assignments = [entry.assignment_start(study=study, rater=rater(f"w{i}"), seed=i) for i in range(2)]
    for assignment in assignments:
        answer(assignment, lambda slot: dict.fromkeys(slot.response_order, 2))
    stored = Rating.objects.filter(assignment__study=study).count()
    exported = list(csv.DictReader(io.StringIO(
        b"".join(client_of(user).get(f"/studies/{study.slug}/export.csv").streaming_content).decode())))
    assert stored > len(exported)  # the check answers are stored, not exported
    decisions.rater_decision_record(assignment=Assignment.objects.get(pk=assignments[0].pk), kind="exclude",
                                    reason="careless", user=user)
    page = client_of(user).get("/").content.decode()
    cell = re.search(r'data-testid="study-ratings">(\d+)(.*?)</td>', page, re.S)
    assert int(cell.group(1)) == len(exported)
    assert "excluded rater" in cell.group(2) and f"({len(exported) // 2} from 1 excluded rater" in cell.group(2)
