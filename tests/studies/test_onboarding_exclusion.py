"""Practice answers never reach what reads ratings: the normalised ratings behind every analysis,
the ICC tables, the report's tables, the ratings exports (CSV, JSON lines), each compared with the
same study after its practice answers are deleted; and the report shows practice on its own (pass
rates, the items most often failed)."""
import csv
import io
import re

import pytest
from django.test import Client

from studies.authoring import services as authoring
from studies.designs.ratings import field_name
from studies.models import PracticeAnswer, PracticeAttempt, Rating, Study
from studies.onboarding import selectors as onboarding_selectors
from studies.onboarding import services as onboarding
from studies.rating import answers as answering
from studies.reports import selectors as report_selectors
from tests.factories import consented_attempt

pytestmark = pytest.mark.django_db

PRACTICE_TEXTS = ["PRACTICE-ONLY: a table for two, please.", "PRACTICE-ONLY: purple seventeen."]


def practise(study, worker, values):
    attempt = consented_attempt(study=study, platform="mturk", external_id=worker,
                                                acceptance_id=f"A-{worker}")
    for item, pair in zip(onboarding_selectors.practice_items(study), values, strict=True):
        post = {field_name(rid, c.name, item.response_ids): str(v) for c in study.criteria.all()
                for rid, v in zip(item.response_ids, pair, strict=True)}
        onboarding.practice_answer(attempt=attempt, item=item, post=post)
    attempt.refresh_from_db()
    return attempt


@pytest.fixture
def rated_study(make_study):
    """Three raters passed the practice and rated every item; two failed it (with extreme answers)."""
    study = make_study("likert", publish=False, platform="mturk", raters_per_item=3, items_per_assignment=6)
    for rules in ([{"response": 1, "min": 4}], [{"greater": 1, "than": 2}]):
        onboarding.practice_item_create(study=study, context="A: Table for two?", responses=PRACTICE_TEXTS, rules=rules,
                                        explanation="Response 1 answers the request.")
    onboarding.onboarding_configure(study=study, pass_mark=2)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    for n in range(3):
        attempt = practise(study, f"GOOD{n}", [(5, 1), (4, 2)])
        assert attempt.status == PracticeAttempt.Status.PASSED
        assignment = onboarding.practice_continue(attempt=attempt)
        names = list(study.criteria.values_list("name", flat=True))
        for slot in assignment.assignment_items.order_by("position"):
            answers = {name: {rid: (slot.item.position + n + i + k) % 5 + 1 for i, rid in enumerate(slot.response_order)}
                       for k, name in enumerate(names)}
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
        answering.assignment_submit(assignment=assignment)
    assert practise(study, "BAD1", [(1, 5), (1, 5)]).status == PracticeAttempt.Status.FAILED
    assert practise(study, "BAD2", [(5, 1), (1, 5)]).status == PracticeAttempt.Status.FAILED  # item 2 only
    return study


def _state(study):
    studies = Study.objects.filter(pk=study.pk)
    normalised = sorted(report_selectors.normalised_ratings(studies).values_list("pk", flat=True))
    frame = report_selectors.ratings_frame(studies)
    report = report_selectors.reliability_report(studies)
    return normalised, frame, report


def test_practice_answers_reach_no_ratings_icc_or_report_tables(rated_study):
    assert PracticeAnswer.objects.count() == 10
    normalised, frame, report = _state(rated_study)
    assert len(normalised) == Rating.objects.filter(assignment__study=rated_study).count()
    assert not frame.empty and "PRACTICE-ONLY" not in frame.to_csv()
    assert len(report.raters) == 3  # the passing raters only
    PracticeAnswer.objects.all().delete()
    PracticeAttempt.objects.filter(status=PracticeAttempt.Status.FAILED).delete()
    normalised_after, frame_after, report_after = _state(rated_study)
    assert normalised_after == normalised
    assert frame_after.equals(frame)
    assert report_after.tables == report.tables  # ICC tables, to the last digit


def test_practice_answers_reach_no_ratings_export(rated_study, client, user):
    client.force_login(user)
    exported = client.get(f"/studies/{rated_study.slug}/export.csv")
    text = b"".join(exported.streaming_content).decode() if exported.streaming else exported.content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert exported.status_code == 200
    assert len(rows) == Rating.objects.filter(assignment__study=rated_study).count()
    assert "PRACTICE-ONLY" not in text and "BAD1" not in text
    lines = client.get(f"/experiments/{rated_study.experiment.slug}/export.jsonl")
    body = b"".join(lines.streaming_content).decode() if lines.streaming else lines.content.decode()
    assert len(body.strip().splitlines()) == len(rows) and "PRACTICE-ONLY" not in body


def test_practice_reported_on_its_own_with_pass_rates_and_items_most_often_failed(rated_study, user):
    client = Client()
    client.force_login(user)
    page = client.get(f"/studies/{rated_study.slug}/report/").content.decode()
    section = page[page.index('data-testid="practice-report"'):]
    rate = section[section.index('data-testid="practice-rate"'):]
    rate = re.sub(r"\s+", "", rate[:rate.index("</tr>")])
    assert "<td>2</td><td>5</td><td>3</td><td>2</td><td>60%</td><td>0</td>" in rate  # mark, finished, passed, failed
    first, second = (re.sub(r"\s+", "", part) for part in section.split('data-testid="practice-item-rate"')[1:3])
    # item 2 (ordering) disagreed by both failing raters comes first; item 1 (range) by one
    assert "<td>2</td><td>5</td><td>2</td><td>40%</td>" in first
    assert "<td>1</td><td>5</td><td>1</td><td>20%</td>" in second
    data = onboarding_selectors.practice_report(Study.objects.filter(pk=rated_study.pk))
    assert data["studies"][0]["pass_rate"] == pytest.approx(3 / 5)
