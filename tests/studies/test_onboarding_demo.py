"""The demo's study with onboarding (studies.authoring.practice_demo): practice items and a pass mark, eight
simulated participants through the real services (six pass and rate, two fail and hold no slot),
loaded once."""
import pytest

from studies.authoring.demo import demo_user
from studies.authoring.practice_demo import DEMO_ONBOARDING_STUDY, onboarding_demo_load
from studies.models import Assignment, PracticeAttempt, PracticeItem, Rating, Study
from studies.onboarding import selectors as onboarding_selectors

pytestmark = pytest.mark.django_db


def test_onboarding_demo_has_practice_passes_fails_and_ratings(client):
    assert onboarding_demo_load(owner=demo_user()) is not None
    study = Study.objects.get(slug=DEMO_ONBOARDING_STUDY)
    assert study.status == Study.Status.PUBLISHED and PracticeItem.objects.filter(study=study).count() == 3
    assert onboarding_selectors.effective_pass_mark(study) == 2
    attempts = PracticeAttempt.objects.filter(study=study)
    assert attempts.filter(status="passed").count() == 6 and attempts.filter(status="failed").count() == 2
    submitted = Assignment.objects.filter(study=study, status=Assignment.Status.SUBMITTED)
    assert submitted.count() == 6
    assert set(submitted.values_list("rater__external_id", flat=True)) == set(
        attempts.filter(status="passed").values_list("external_id", flat=True))
    ratings = Rating.objects.filter(assignment__study=study).count()
    shown = sum(len(slot.response_order) for a in submitted for slot in a.assignment_items.all())
    assert ratings == shown * study.criteria.count() and submitted.first().assignment_items.count() == 6
    assert onboarding_demo_load(owner=demo_user()) is None and Rating.objects.count() == ratings
    client.force_login(demo_user())
    report = client.get(f"/studies/{study.slug}/report/").content.decode()
    assert 'data-testid="practice-report"' in report and "75%" in report  # 6 of 8 passed


def test_load_demo_command_loads_the_onboarding_demo_and_prints_its_practice_link(settings, capsys):
    from django.core.management import call_command

    settings.CHAT_ALLOWED_NETWORKS = []  # the chat demo is skipped (its own tests cover it)
    call_command("load_demo")
    out = capsys.readouterr().out
    assert "Loaded the onboarding demo" in out and f"/r/c/{Study.objects.get(slug=DEMO_ONBOARDING_STUDY).rater_key}/?PROLIFIC_PID=" in out
    assert PracticeItem.objects.filter(study__slug=DEMO_ONBOARDING_STUDY).count() == 3
    call_command("load_demo")
    assert "The onboarding demo is already loaded." in capsys.readouterr().out
