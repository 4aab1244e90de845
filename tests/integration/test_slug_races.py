"""Against real PostgreSQL: concurrent creates of one slug never raise IntegrityError (a 500)."""
import pytest
from django.core.exceptions import ValidationError

from studies.authoring import services
from studies.models import Experiment
from tests.integration.concurrency import at_once

pytestmark = [pytest.mark.integration]


def _at_once(n: int, create) -> list[str]:
    def text(outcome) -> str:
        if isinstance(outcome, ValidationError):
            return "refused: " + "; ".join(outcome.message_dict["slug"])
        if isinstance(outcome, Exception):
            return f"error: {type(outcome).__name__}"
        return outcome.slug
    return [text(outcome) for outcome in at_once(range(n), create)]


@pytest.mark.django_db(transaction=True)
def test_concurrent_creates_of_one_title_get_distinct_slugs(user):
    outcomes = _at_once(8, lambda i: services.experiment_create(owner=user, title="Same title"))
    assert len(outcomes) == 8 and len(set(outcomes)) == 8 and not any(" " in o for o in outcomes), outcomes
    experiment = Experiment.objects.get(slug="same-title")
    studies = _at_once(6, lambda i: services.study_create(experiment=experiment, title=f"S{i}", design="likert"))
    assert len(set(studies)) == 6 and not any(" " in o for o in studies), studies


@pytest.mark.django_db(transaction=True)
def test_concurrent_creates_of_one_explicit_slug_make_one_and_refuse_the_rest(user):
    outcomes = _at_once(8, lambda i: services.experiment_create(owner=user, title=f"T{i}", slug="taken"))
    assert sorted(outcomes) == ["refused: the slug 'taken' is not available; choose another"] * 7 + ["taken"], outcomes
