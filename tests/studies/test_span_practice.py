"""Practice (onboarding) for a span criterion: the expected spans with the researcher's tolerance score the
rater's marked spans as a check item would, and the feedback says what was expected in words."""
import json

import pytest
from django.core.exceptions import ValidationError

from studies.authoring import services as authoring
from studies.designs.ratings import field_name
from studies.models import PracticeAttempt
from studies.onboarding import selectors as onboarding_selectors
from studies.onboarding import services as onboarding
from tests.factories import consented_attempt

pytestmark = pytest.mark.django_db
LABELS = ["factual error", "unsafe"]
RULE = {"criterion": "errors", "response": 1,
        "spans": {"spans": [{"start": 12, "end": 17, "label": "factual error"}], "slack": 1, "min_overlap": 0.6}}


@pytest.fixture
def span_practice_study(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Span practice")
    study = authoring.study_create(experiment=experiment, title="Span practice", design="likert", platform="mturk",
                                   raters_per_item=2, items_per_assignment=3,
                                   criteria=[{"name": "errors", "question": "Mark what is wrong", "kind": "spans",
                                              "options": {"labels": LABELS}}])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"])
    onboarding.practice_item_create(study=study, context="A: Where is Paris?",
                                    responses=["Paris is in Spain.", "Paris is in France."], rules=[RULE],
                                    explanation="Spain is wrong: Paris is in France.")
    onboarding.onboarding_configure(study=study, pass_mark=1)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def practise(study, worker, first_spans):
    attempt = consented_attempt(study=study, platform="mturk", external_id=worker, acceptance_id=f"A-{worker}",
                                platform_data={"assignmentId": f"A-{worker}"})
    (item,) = onboarding_selectors.practice_items(study)
    order = item.response_ids
    post = {field_name(order[0], "errors", order): json.dumps(first_spans),
            field_name(order[1], "errors", order): "[]"}
    answer, errors = onboarding.practice_answer(attempt=attempt, item=item, post=post)
    attempt.refresh_from_db()
    return attempt, answer, errors, item


@pytest.mark.parametrize(("spans", "passes"), [
    ([{"start": 12, "end": 17, "label": "factual error"}], True),
    ([{"start": 11, "end": 18, "label": "factual error"}], True),   # within one character
    ([{"start": 9, "end": 17, "label": "factual error"}], True),    # "in Spain": overlap 5/8
    ([{"start": 12, "end": 17, "label": "unsafe"}], False),         # the wrong label
    ([], False),                                                    # nothing marked
])
def test_span_practice_scored_with_the_tolerance(span_practice_study, spans, passes):
    attempt, answer, errors, _ = practise(span_practice_study, f"W{len(str(spans))}{passes}", spans)
    assert errors == {} and answer.agreed is passes
    assert attempt.status == (PracticeAttempt.Status.PASSED if passes else PracticeAttempt.Status.FAILED)


def test_span_practice_bad_span_refused_by_field_and_nothing_stored(span_practice_study):
    attempt, answer, errors, item = practise(span_practice_study, "Wbad", [{"start": 0, "end": 99, "label": "x"}])
    assert answer is None and "out of range" in errors[field_name(item.response_ids[0], "errors", item.response_ids)]
    assert attempt.shown == 0


def test_span_practice_feedback_names_the_expected_spans(span_practice_study):
    (item,) = onboarding_selectors.practice_items(span_practice_study)
    (line,) = onboarding_selectors.expected_answer_text(item)
    assert "characters 12–17 marked factual error" in line and "within 1 characters" in line and "60%" in line


def test_span_practice_rule_with_an_unknown_label_is_refused_by_field(span_practice_study, user, corpus):
    study = authoring.study_create(experiment=span_practice_study.experiment, title="Draft", design="likert",
                                   criteria=[{"name": "errors", "question": "Mark", "kind": "spans",
                                              "options": {"labels": LABELS}}])
    with pytest.raises(ValidationError) as refused:
        onboarding.practice_item_create(study=study, context="A: Hi", responses=["Hello there.", "Bye now."],
                                        rules=[{**RULE, "spans": [{"start": 0, "end": 5, "label": "rude"}]}],
                                        explanation="Because.")
    assert "rules[0].spans" in refused.value.message_dict and "rude" in str(refused.value)
