"""Against real PostgreSQL: concurrent creates of one slug never raise IntegrityError (a 500)."""
import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import connections

from studies import services
from studies.models import Experiment

pytestmark = [pytest.mark.integration]


def _at_once(n: int, create) -> list[str]:
    barrier = threading.Barrier(n)
    outcomes: list[str] = []

    def run(i):
        try:
            barrier.wait()
            outcomes.append(create(i).slug)
        except ValidationError as error:
            outcomes.append("refused: " + "; ".join(error.message_dict["slug"]))
        except Exception as error:  # noqa: BLE001 - the test reports any other failure
            outcomes.append(f"error: {type(error).__name__}")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


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
