"""Gold checks made from the builder preview ("use my answers") test only the answers the researcher
ticks, so one extra label elsewhere on the screen does not fail a careful rater; a check's rules can be
dropped and added on the checks page; and a check or practice item is never also a rated item (its
conversation leaves the pool at publish; the checks page counts it first)."""
import pytest

from studies.authoring import checks as authoring_checks
from studies.authoring import gold_pool
from studies.authoring import services as authoring
from studies.models import AssignmentItem, PracticeItem, StudyItem
from studies.rating import checks
from studies.rating import entry as rater_entry
from tests.studies.test_builder import expected, first_order, letters, researcher  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db
SAFETY = {"name": "safety", "kind": "categorical", "options": {"labels": ["safe", "unsafe"]}}


@pytest.fixture
def labels_study(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="gold")
    study = authoring.study_create(experiment=experiment, title="Gold labels", design="likert", raters_per_item=3,
                                   items_per_assignment=4, criteria=[SAFETY])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"])
    return study


def answers_of(study, label_b="unsafe"):
    shown = letters(study)
    return {f"r{x}-safety": ("safe" if x == "A" else label_b) for x in shown}


def test_gold_from_the_preview_stores_a_rule_for_the_ticked_answer_only(researcher, labels_study):  # noqa: F811
    response = expected(researcher, labels_study, answers_of(labels_study), expected_use="gold",
                        expected_test=["safety|2"])
    assert response.json()["saved"] is True, response.json()
    gold = labels_study.items.get(check_kind="gold")
    ids = list(gold.item_responses.order_by("position").values_list("response_id", flat=True))
    assert gold.check_rules == [{"criterion": "safety", "response": ids[1], "label": "unsafe"}]


def test_gold_a_careful_rater_with_one_extra_label_passes_a_check_testing_one_answer(researcher, labels_study):  # noqa: F811
    expected(researcher, labels_study, answers_of(labels_study), expected_use="gold", expected_test=["safety|2"])
    gold = labels_study.items.get(check_kind="gold")
    ids = list(gold.item_responses.order_by("position").values_list("response_id", flat=True))
    careful = {("safety", ids[0]): "unsafe", ("safety", ids[1]): "unsafe"}  # A differs from the researcher's
    assert checks.check_passed(gold.check_rules, careful, ["safety"], len(ids))
    assert not checks.check_passed(gold.check_rules, {**careful, ("safety", ids[1]): "safe"}, ["safety"], len(ids))


def test_gold_from_the_preview_without_a_ticked_answer_is_refused_and_writes_nothing(researcher, labels_study):  # noqa: F811
    response = expected(researcher, labels_study, answers_of(labels_study), expected_use="gold")
    assert response.status_code == 400 and "tick the answers" in response.json()["errors"]["expected_test"]
    assert not labels_study.items.filter(check_kind="gold").exists()
    practice = expected(researcher, labels_study, answers_of(labels_study), expected_use="practice",
                        expected_explanation="B is rude.")
    assert practice.json()["saved"] and len(PracticeItem.objects.get(study=labels_study).rules) == len(letters(labels_study))


def test_gold_preview_shows_one_checkbox_per_question_and_response(researcher, labels_study):  # noqa: F811
    html = researcher.get(f"/studies/{labels_study.slug}/builder/preview/").content.decode()
    boxes = [f'value="safety|{n}"' for n in range(1, len(letters(labels_study)) + 1)]
    assert 'data-testid="expected-tests"' in html and all(box in html for box in boxes)


def test_gold_rules_dropped_and_added_on_the_checks_page(researcher, labels_study):  # noqa: F811
    both = ["safety|1", "safety|2"]
    expected(researcher, labels_study, answers_of(labels_study), expected_use="gold", expected_test=both)
    gold = labels_study.items.get(check_kind="gold")
    assert len(gold.check_rules) == 2
    page = researcher.get(f"/studies/{labels_study.slug}/checks/").content.decode()
    assert page.count('data-testid="rule-drop"') == 2
    researcher.post(f"/studies/{labels_study.slug}/checks/rule_drop/", {"item": gold.pk, "rule": 0})
    gold.refresh_from_db()
    ids = list(gold.item_responses.order_by("position").values_list("response_id", flat=True))
    assert gold.check_rules == [{"criterion": "safety", "response": ids[1], "label": "unsafe"}]
    researcher.post(f"/studies/{labels_study.slug}/checks/rule_drop/", {"item": gold.pk, "rule": 0})
    gold.refresh_from_db()
    assert len(gold.check_rules) == 1  # the last rule stays: remove the item instead
    researcher.post(f"/studies/{labels_study.slug}/checks/rule_add/", {
        "item": gold.pk, "rule-0-criterion": "safety", "rule-0-response": "1", "rule-0-expects": "label",
        "rule-0-label": "safe"})
    gold.refresh_from_db()
    assert {"criterion": "safety", "response": ids[0], "label": "safe"} in gold.check_rules and len(gold.check_rules) == 2


def test_gold_rule_service_refuses_a_bad_rule_or_index_and_changes_nothing(researcher, labels_study):  # noqa: F811
    from django.core.exceptions import ValidationError

    expected(researcher, labels_study, answers_of(labels_study), expected_use="gold", expected_test=["safety|1", "safety|2"])
    gold = labels_study.items.get(check_kind="gold")
    before = list(gold.check_rules)
    with pytest.raises(ValidationError, match="no rule"):
        authoring_checks.check_rule_drop(item=gold, index=7)
    with pytest.raises(ValidationError):
        authoring_checks.check_rules_add(item=gold, rules=[{"criterion": "safety", "response": 9, "label": "safe"}])
    gold.refresh_from_db()
    assert gold.check_rules == before


def test_gold_rules_of_another_researchers_check_cannot_be_changed(researcher, labels_study, client):  # noqa: F811
    from tests.factories import UserFactory

    expected(researcher, labels_study, answers_of(labels_study), expected_use="gold", expected_test=["safety|1", "safety|2"])
    gold = labels_study.items.get(check_kind="gold")
    client.force_login(UserFactory(username="mallory"))
    response = client.post(f"/studies/{labels_study.slug}/checks/rule_drop/", {"item": gold.pk, "rule": 0})
    assert response.status_code == 404
    gold.refresh_from_db()
    assert len(gold.check_rules) == 2


def test_gold_conversation_leaves_the_rated_items_at_publish_and_the_checks_page_says_so(researcher, labels_study):  # noqa: F811
    regular_before = labels_study.items.filter(check_kind="").count()
    item, _ = first_order(labels_study)
    expected(researcher, labels_study, answers_of(labels_study), expected_use="gold", expected_test=["safety|2"])
    assert gold_pool.shadowed_item_ids(labels_study) == [item.pk]
    page = researcher.get(f"/studies/{labels_study.slug}/checks/").content.decode()
    assert 'data-testid="shadowed-items"' in page
    authoring_checks.study_checks_configure(study=labels_study, per_assignment=1)
    published = authoring.study_publish(study=labels_study)
    assert published.shadowed_dropped == 1
    assert labels_study.items.filter(check_kind="").count() == regular_before - 1
    assert not StudyItem.objects.filter(pk=item.pk).exists()
    gold = labels_study.items.get(check_kind="gold")
    for n in range(4):  # every rater meets the gold conversation once: as the check
        assignment = rater_entry.assignment_start(
            study=labels_study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=f"g{n}"), seed=n)
        turns = [t for t in AssignmentItem.objects.filter(assignment=assignment).values_list(
            "item__conversation__turns", flat=True)]
        assert turns.count(gold.conversation.turns) == 1


def test_gold_practice_conversation_is_never_rated_for_real(researcher, labels_study):  # noqa: F811
    item, _ = first_order(labels_study)
    expected(researcher, labels_study, answers_of(labels_study), expected_use="practice", expected_explanation="B is rude.")
    assert gold_pool.shadowed_item_ids(labels_study) == [item.pk]
    authoring.study_publish(study=labels_study)
    assert not StudyItem.objects.filter(pk=item.pk).exists()
