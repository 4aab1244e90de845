"""Check items of dialogue-unit studies that rank dialogues (BWS; a tuple of two is a comparison) or rate them
against an anchor (RME): the researcher writes a known bad dialogue (checks page or API, the same service);
it is ranked among the study's own dialogues, or shown beside the study's anchor, exactly as the items show
theirs; a rater who ranks it worst (loses the comparison) or rates it below the anchor passes, one who does
not is flagged like any failed check. Another researcher gets a 404 on every route."""
import io

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from studies.authoring import checks
from studies.authoring import services as authoring
from studies.corpora import services as corpus_imports
from studies.models import AssignmentItem, StudyItem
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating import form_tokens
from studies.rating.check_rules import rules_display
from tests.api.test_convention import client_of
from tests.problems import problem_fields
from tests.studies.test_design_contract import dialogue_corpus_bytes

pytestmark = pytest.mark.django_db

BAD = "User: Where is the station?\nBot: Bananas are yellow.\nUser: The station?\nBot: I like bananas."


def dialogue_study(user, design, *, tuple_size=3, build=True):
    experiment = authoring.experiment_create(owner=user, title=f"{design} dialogues {tuple_size}")
    study = authoring.study_create(experiment=experiment, title=f"{design} dialogues", design=design, unit="dialogue",
                                   raters_per_item=2, items_per_assignment=3,
                                   design_config={"tuple_size": tuple_size} if design == "bws" else None)
    if build:
        corpus = corpus_imports.dialogues_import(stream=io.BytesIO(dialogue_corpus_bytes(12)), source_name="fed.json",
                                                 owner=user).corpus
        authoring.study_items_build(study=study, corpus=corpus, seed=1,
                                    reference_conversation="fed-d0" if design == "rme" else None)
    study.refresh_from_db()
    return study


def regular_dialogues(study):
    return set(StudyItem.objects.filter(study=study, check_kind="").values_list("item_conversations__conversation_id",
                                                                                 flat=True))


def test_ranked_check_is_the_written_dialogue_among_the_studys_own(user):
    study = dialogue_study(user, "bws")
    item = checks.check_item_create(study=study, kind="gold", context=BAD, rules=[{"worst": 1}])
    shown = list(item.item_conversations.order_by("position").values_list("conversation_id", flat=True))
    assert len(shown) == 3 and item.conversation_id in shown  # as many as the items rank: it does not stand out
    assert set(shown) - {item.conversation_id} <= regular_dialogues(study)
    assert item.conversation.turns[1] == {"speaker": "Bot", "text": "Bananas are yellow."}
    assert item.check_rules == [{"worst": item.conversation_id}] and rules_display(item) == [{"worst": 1}]
    (row,) = checks.study_check_items(study)
    assert row["rules"] == [{"worst": 1}] and row["conversations"] == []  # the study's own are not the check's
    assert checks.checks_publish_problems(study) == []
    checks.check_item_delete(item=item)  # the study's own dialogues stay; the written one goes
    assert len(regular_dialogues(study)) >= 2 and not StudyItem.objects.filter(study=study, check_kind__gt="").exists()


def test_anchored_check_is_shown_beside_the_studys_anchor(user):
    study = dialogue_study(user, "rme")
    regular = StudyItem.objects.filter(study=study, check_kind="").first()
    item = checks.check_item_create(study=study, kind="gold", context=BAD, rules=[{"response": 1, "max": 99}])
    assert (item.reference_conversation_id, item.reference_value) == (regular.reference_conversation_id,
                                                                      regular.reference_value)
    assert item.check_rules == [{"response": item.conversation_id, "max": 99.0}]


@pytest.mark.parametrize(("design", "rules", "field", "words"), [
    ("bws", [{"worst": 2}], "rules[0].worst", ""),
    ("bws", [{"response": 1, "max": 2}], "rules[0]", ""),
    ("bws", [{"worst": 1}], "context", "build the study's items first"),
    ("rme", [{"response": 1, "max": 99}], "context", "build the study's items first"),
    ("rme", [{"response": 2, "max": 99}], "rules[0].response", "from 1 to 1"),
])
def test_dialogue_set_check_problems_name_their_field(user, design, rules, field, words):
    study = dialogue_study(user, design, build=words != "build the study's items first")
    with pytest.raises(ValidationError) as refused:
        checks.check_item_create(study=study, kind="gold", context=BAD, rules=rules)
    found = {k: " ".join(v) for k, v in refused.value.message_dict.items()}
    assert any(k.startswith(field) and words in v for k, v in found.items()), found
    assert not StudyItem.objects.filter(study=study, check_kind__gt="").exists()


def rate(study, name, *, check_right: bool):
    """Every item answered; the check as a careful rater (the written dialogue worst / below the anchor) or not."""
    rater = rater_entry.rater_get_or_create(platform="invite", external_id=name)
    assignment = rater_entry.assignment_start(study=study, rater=rater, seed=len(name))
    criteria = list(study.criteria.values_list("name", flat=True))
    for slot in AssignmentItem.objects.filter(assignment=assignment).select_related("item"):
        order, written = slot.response_order, slot.item.conversation_id
        if study.design == "bws":
            others = [t for t in order if t != written]
            ranked = [*others, written] if (check_right or not slot.item.check_kind) else [written, *others]
            answers = {c: {t: ranked.index(t) + 1 for t in order} for c in criteria}
        else:
            value = (40 if check_right else 150) if slot.item.check_kind else 80
            answers = {c: {t: value for t in order} for c in criteria}
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    return answering.assignment_submit(assignment=assignment)


@pytest.mark.parametrize(("design", "tuple_size", "rule"), [
    ("bws", 3, {"worst": 1}),   # ranked last
    ("bws", 2, {"worst": 1}),   # two at a time: loses the comparison
    ("rme", 3, {"response": 1, "max": 99}),  # below the anchor's 100
])
def test_dialogue_set_check_scored_and_a_careless_rater_flagged(user, design, tuple_size, rule):
    study = dialogue_study(user, design, tuple_size=tuple_size)
    checks.check_item_create(study=study, kind="gold", context=BAD, rules=[rule])
    checks.study_checks_configure(study=study, per_assignment=1)
    authoring.study_publish(study=study)
    careful, careless = rate(study, "careful", check_right=True), rate(study, "careless", check_right=False)
    assert (careful.checks_shown, careful.checks_passed, careful.checks_failed) == (1, 1, False)
    assert (careless.checks_shown, careless.checks_passed, careless.checks_failed) == (1, 0, True)


def test_ranked_check_item_page_shows_the_written_dialogue_among_the_others(client, user):
    study = dialogue_study(user, "bws")
    checks.check_item_create(study=study, kind="gold", context=BAD, rules=[{"worst": 1}])
    checks.study_checks_configure(study=study, per_assignment=1)
    authoring.study_publish(study=study)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="page"), seed=3)
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.filter(item__check_kind__gt="").get()
    page = client.get(f"/r/a/{assignment.token}/items/{slot.position}/").content.decode()
    assert "Bananas are yellow." in page and page.count('data-testid="dialogue-') == 3
    assert form_tokens.form_token(assignment.token, "item")  # the page's own form, as for every item


def test_dialogue_set_check_written_on_the_checks_page(client, user):
    study = dialogue_study(user, "bws")
    client.force_login(user)
    page = client.get(reverse("studies:study_checks", args=[study.slug])).content.decode()
    assert "ranked among the study&#x27;s own dialogues" in page and 'name="responses"' not in page
    url = reverse("studies:study_checks_action", args=[study.slug, "create"])
    done = client.post(url, {"kind": "gold", "context": BAD, "rule-0-response": "1", "rule-0-expects": "worst"},
                       follow=True)
    assert done.status_code == 200
    (item,) = StudyItem.objects.filter(study=study, check_kind="gold")
    assert item.check_rules == [{"worst": item.conversation_id}] and item.item_conversations.count() == 3


def test_dialogue_set_check_written_through_the_api(api, user):
    study = dialogue_study(user, "rme")
    url = f"/api/studies/{study.slug}/checks/create/"
    bad = api.post(url, {"kind": "gold", "context": BAD, "rules": [{"response": 3, "max": 99}]}, format="json")
    assert bad.status_code == 400 and any(k.startswith("rules") for k in problem_fields(bad)), problem_fields(bad)
    created = api.post(url, {"kind": "gold", "context": BAD, "rules": [{"response": 1, "max": 99}]}, format="json")
    assert created.status_code == 201, created.content
    item = StudyItem.objects.get(study=study, check_kind="gold")
    assert item.reference_conversation_id is not None
    listed = api.get(f"/api/studies/{study.slug}/checks/").json()
    (row,) = listed["results"]
    assert row["rules"] == [{"response": 1, "max": 99.0}] and row["conversations"] == []
    assert row["turns"][1]["text"] == "Bananas are yellow." and row["reference_value"] == 100.0


def test_dialogue_set_check_routes_are_404_for_another_researcher(client, user, other_user):
    study = dialogue_study(user, "bws")
    item = checks.check_item_create(study=study, kind="gold", context=BAD, rules=[{"worst": 1}])
    bob = client_of(other_user)
    assert bob.post(f"/api/studies/{study.slug}/checks/create/",
                    {"kind": "gold", "context": BAD, "rules": [{"worst": 1}]}, format="json").status_code == 404
    assert bob.get(f"/api/studies/{study.slug}/checks/").status_code == 404
    assert bob.post(f"/api/studies/{study.slug}/checks/{item.pk}/delete/").status_code == 404
    client.force_login(other_user)
    assert client.get(reverse("studies:study_checks", args=[study.slug])).status_code == 404
    answer = client.post(reverse("studies:study_checks_action", args=[study.slug, "create"]),
                         {"kind": "gold", "context": BAD, "rule-0-response": "1", "rule-0-expects": "worst"})
    assert answer.status_code == 404
    assert StudyItem.objects.filter(study=study, check_kind__gt="").count() == 1
