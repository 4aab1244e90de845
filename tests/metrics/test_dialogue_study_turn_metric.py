"""Scoring a dialogue-unit study with a turn-level metric finished "0/0" with
no explanation (the study's items show whole dialogues, so there is no judged response to score). The
run is now refused up front with a message naming the field and why, and nothing is queued: the human
judgments are of whole dialogues, and a mean of turn scores would be a metric of our own making, not
the one named. A dialogue-level metric is still accepted on the same study."""
import pytest
from django.core.exceptions import ValidationError

from metrics.models import ScoringRun
from metrics.scoring import services
from tests.problems import problem_fields
from tests.studies.test_dialogue_study import dialogue_study, fed_corpus  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def test_a_turn_level_metric_on_a_dialogue_study_is_refused_before_anything_is_queued(api, client, user,
                                                                                       dialogue_study):  # noqa: F811
    model = services.metric_model_default(key="readability")
    with pytest.raises(ValidationError) as refused:
        services.scoring_run_create(metric_model=model, study=dialogue_study, enqueue=False)
    message = " ".join(refused.value.message_dict["metric_model"])
    assert "turn-level" in message and "dialogue" in message and model.name in message
    answer = api.post("/api/metrics/runs/", {"metric_model": model.name, "study": dialogue_study.slug}, format="json")
    assert answer.status_code == 400 and "turn-level" in " ".join(problem_fields(answer)["metric_model"])
    client.force_login(user)
    page = client.post("/metrics/runs/start/", {"metric_model": model.name, "study": dialogue_study.slug},
                       follow=True).content.decode()
    assert "metric_model: " in page and "turn-level" in page and "the run is queued" not in page
    assert ScoringRun.objects.count() == 0


def test_a_dialogue_level_metric_is_accepted_on_the_dialogue_study(dialogue_study):  # noqa: F811
    model = services.metric_model_default(key="cosine_turns")
    run = services.scoring_run_create(metric_model=model, study=dialogue_study, enqueue=False)
    assert ScoringRun.objects.get() == run
