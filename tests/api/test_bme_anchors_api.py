"""BME anchors filled from a metric through the API, as the study page's "Fill from a metric": every item's
reference value set from the metric's score of its reference response by the documented mapping; a study
whose anchors do not come from a metric, an unknown model or another researcher's study answer 404."""
import pytest

from metrics.scoring import services
from studies.models import StudyItem
from tests.api.test_convention import client_of

pytestmark = pytest.mark.django_db


def test_bme_anchors_filled_from_a_metric_through_the_api(api, make_study):
    model = services.metric_model_default(key="readability")
    study = make_study("bme", publish=False)
    StudyItem.objects.filter(study=study).update(reference_value=None)
    response = api.post(f"/api/studies/{study.slug}/bme-anchors/", {"metric_model": model.name}, format="json")
    assert response.status_code == 200, response.content
    values = {int(k): v for k, v in response.json()["values"].items()}
    stored = dict(StudyItem.objects.filter(study=study, reference_value__isnull=False).values_list("pk", "reference_value"))
    assert values == stored and len(values) == study.items.exclude(reference_response=None).count() > 0
    assert min(values.values()) == 50  # the documented mapping: the lowest-scored reference at the bottom


def test_bme_anchors_refused_where_they_do_not_come_from_a_metric_or_for_another_researcher(api, make_study, other_user):
    model = services.metric_model_default(key="readability")
    likert = make_study("likert", publish=False)
    assert api.post(f"/api/studies/{likert.slug}/bme-anchors/", {"metric_model": model.name},
                    format="json").status_code == 404
    bme = make_study("bme", publish=False)
    before = dict(StudyItem.objects.filter(study=bme).values_list("pk", "reference_value"))
    assert api.post(f"/api/studies/{bme.slug}/bme-anchors/", {"metric_model": "nosuch"}, format="json").status_code == 404
    assert client_of(other_user).post(f"/api/studies/{bme.slug}/bme-anchors/", {"metric_model": model.name},
                                      format="json").status_code == 404
    assert dict(StudyItem.objects.filter(study=bme).values_list("pk", "reference_value")) == before


def test_bme_anchors_of_a_published_study_are_409(api, make_study):
    model = services.metric_model_default(key="readability")
    study = make_study("bme")
    before = dict(StudyItem.objects.filter(study=study).values_list("pk", "reference_value"))
    response = api.post(f"/api/studies/{study.slug}/bme-anchors/", {"metric_model": model.name}, format="json")
    assert response.status_code == 409
    assert dict(StudyItem.objects.filter(study=study).values_list("pk", "reference_value")) == before
