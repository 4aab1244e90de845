"""Where the features meet: duplicate, edit, browse, plan, live panel, study page, crowd simulation
and the experiment report for the bws_tuples and pairwise designs and for dialogue-unit studies."""

import numpy as np
import pytest

from studies import bws_tuples, editing, services
from studies.models import Conversation, StudyItemConversation
from tests.studies.test_dialogue_study import fed_corpus  # noqa: F401 - a fixture
from tests.studies.test_pairwise import answer_all as pairwise_answer_all

pytestmark = pytest.mark.django_db
CRITERIA = ("readability", "coherence")


def start(study, name, seed=None):
    return services.assignment_start(study=study, rater=services.rater_get_or_create(platform="invite", external_id=name),
                                     seed=seed)


def rate_tuples(study, raters=2):
    for i in range(raters):
        assignment = start(study, f"t{i}")
        for slot in assignment.assignment_items.all():
            order = list(slot.response_order)
            bws_tuples.choices_record(assignment=assignment, item_id=slot.item_id,
                                      answers={c: {"best": order[0], "worst": order[-1]} for c in CRITERIA})
        services.assignment_submit(assignment=assignment)


def rate_pairs(study, raters=2):
    for i in range(raters):
        assignment = start(study, f"p{i}", seed=i)
        pairwise_answer_all(assignment, choose=lambda slot, criterion: "left" if slot.position % 2 else "right")
        services.assignment_submit(assignment=assignment)


def rate_likert(study, raters=2, prefix="l"):
    rng = np.random.default_rng(5)
    for i in range(raters):
        assignment = start(study, f"{prefix}{i}", seed=i)
        for slot in assignment.assignment_items.all():
            services.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
                c: {r: int(rng.integers(1, 6)) for r in slot.response_order} for c in CRITERIA})
        services.assignment_submit(assignment=assignment)


def dialogue_study(user, corpus_slug, design="likert", publish=True, **config):
    experiment = services.experiment_create(owner=user, title=f"Dialogue {design}")
    study = services.study_create(experiment=experiment, title=f"dialogue {design}", design=design, unit="dialogue",
                                  design_config=config or None, raters_per_item=2, items_per_assignment=8)
    corpus = Conversation.objects.filter(corpus__slug=corpus_slug).first().corpus
    extra = {"reference_conversation": "fed-d0"} if design == "rme" else {}
    services.study_items_build(study=study, corpus=corpus, seed=3, **extra)
    if publish:
        services.study_publish(study=study)
    study.refresh_from_db()
    return study


def items_signature(study):
    return [(i.position, i.conversation_id, i.reference_response_id, i.reference_conversation_id, i.reference_value,
             list(i.item_responses.order_by("position").values_list("response_id", "position")),
             list(i.item_conversations.order_by("position").values_list("conversation_id", "position")))
            for i in study.items.order_by("position")]


# --- duplicate and edit ---------------------------------------------------------------------------

@pytest.mark.parametrize("design", ["bws_tuples", "pairwise"])
def test_duplicating_a_tuples_or_pairwise_study_copies_its_items(make_study, design):
    study = make_study(design)
    copy = editing.study_duplicate(study=study)
    assert (copy.design, copy.design_config, copy.unit) == (study.design, study.design_config, study.unit)
    assert items_signature(copy) == items_signature(study) and copy.items.exists()
    services.study_publish(study=copy)  # the copy is complete: it publishes as it is


@pytest.mark.parametrize(("design", "config"), [("likert", {}), ("rme", {}), ("bws", {"tuple_size": 3})])
def test_duplicating_a_dialogue_study_keeps_the_unit_its_anchor_and_its_dialogues(user, fed_corpus, design, config):  # noqa: F811
    study = dialogue_study(user, fed_corpus, design, **config)
    copy = editing.study_duplicate(study=study)
    assert copy.unit == "dialogue"
    assert list(copy.criteria.values_list("name", "question")) == list(study.criteria.values_list("name", "question"))
    assert items_signature(copy) == items_signature(study) and copy.items.exists()
    if design == "rme":
        assert all(i.reference_conversation_id for i in copy.items.all())
    if design == "bws":
        assert StudyItemConversation.objects.filter(item__study=copy).count() == \
            StudyItemConversation.objects.filter(item__study=study).count() > 0
    services.study_publish(study=copy)
