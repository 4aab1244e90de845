"""The experiment link against real PostgreSQL: 40 new raters arriving at once over 4 conditions are
counted one after another under the conditions' row locks, so each condition gets exactly 10; the
same new worker clicking twice gets one assignment."""
from collections import Counter

import pytest

from studies.authoring import services as authoring
from studies.models import Assignment, Rater
from studies.rating import entry as rater_entry
from tests.integration.test_postgres import _race

pytestmark = [pytest.mark.integration]


@pytest.mark.django_db(transaction=True)
def test_forty_concurrent_raters_fill_four_conditions_evenly(make_study, user):
    experiment = authoring.experiment_create(owner=user, title="Concurrent balance")
    conditions = [make_study(design, platform="prolific", experiment=experiment, raters_per_item=12)
                  for design in ("likert", "rme", "bme", "bws")]

    def enter(i):
        assignment = rater_entry.experiment_enter(experiment=experiment, platform="prolific", external_id=f"p{i}",
                                               acceptance_id=f"s{i}")
        return f"started:{assignment.study_id}"

    outcomes = _race(40, enter)
    assert not [o for o in outcomes if not o.startswith("started")], outcomes
    assert Counter(Assignment.objects.values_list("study_id", flat=True)) == {s.pk: 10 for s in conditions}


@pytest.mark.django_db(transaction=True)
def test_a_double_click_on_the_experiment_link_gives_one_assignment(make_study, user):
    experiment = authoring.experiment_create(owner=user, title="Double click")
    for design in ("likert", "rme"):
        make_study(design, platform="prolific", experiment=experiment)

    def enter(_):
        return f"started:{rater_entry.experiment_enter(experiment=experiment, platform='prolific', external_id='twice', acceptance_id='s1').pk}"

    outcomes = _race(6, enter)
    assert len(set(outcomes)) == 1 and outcomes[0].startswith("started"), outcomes
    assert Rater.objects.count() == 1 and Assignment.objects.count() == 1
