"""studies.authoring.item_draws: the draw recorded at item building (which items count as a random labelled sample
for prediction-powered estimates), its refusals, and drawing more items at random."""
import io

import pytest
from django.core.exceptions import ValidationError

from studies.authoring import editing, item_draws
from studies.authoring import services as authoring
from studies.corpora import services as corpus_imports
from studies.errors import StudyStateError
from studies.models import Rater, Study, StudyItemResponse
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from tests.conftest import small_corpus_lines

pytestmark = pytest.mark.django_db


@pytest.fixture
def big_corpus(user):
    return corpus_imports.dialogues_import(stream=io.BytesIO(small_corpus_lines(12)), source_name="twelve.jsonl",
                                     corpus_slug="twelve", owner=user).corpus


def _study(user, corpus, design="likert", *, limit=None, seed=0, **config):
    experiment = authoring.experiment_create(owner=user, title=f"draws {design}")
    study = authoring.study_create(experiment=experiment, title=f"{design} draws", design=design,
                                  design_config=config or None, raters_per_item=1, items_per_assignment=3)
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"],
                               reference_system="human", limit=limit, seed=seed)
    study.refresh_from_db()
    return study


def test_ppi_census_and_random_draws_are_recorded(user, big_corpus):
    census = _study(user, big_corpus)
    assert census.item_draw["method"] == item_draws.ALL and len(census.item_draw["frame"]) == 12
    assert item_draws.draw_problem(census) is None
    sample = _study(user, big_corpus, limit=5, seed=3)
    record = sample.item_draw
    assert record["method"] == item_draws.RANDOM and record["drawn"] == 5 and record["frame"] == census.item_draw["frame"]
    assert set(sample.items.values_list("conversation_id", flat=True)) < set(record["frame"])
    assert item_draws.draw_problem(sample) is None
    assert record["systems"] == ["hred", "human", "seq2seq", "thred"]  # Likert judges the reference too


def test_ppi_unrecorded_or_changed_items_are_refused_with_the_reason(user, big_corpus):
    study = _study(user, big_corpus, limit=4)
    Study.objects.filter(pk=study.pk).update(item_draw={})
    study.refresh_from_db()
    assert "not recorded" in item_draws.draw_problem(study)
    with pytest.raises(ValidationError, match="not recorded"):
        item_draws.study_items_extend(study=study, count=2)
    other = _study(user, big_corpus, limit=4, seed=9)
    other.item_draw = {**other.item_draw, "frame": other.item_draw["frame"][:2]}  # items outside the frame now
    assert "changed since they were drawn" in item_draws.draw_problem(other)


def test_ppi_extend_draws_more_items_shaped_like_the_others(user, big_corpus):
    study = _study(user, big_corpus, "rme", limit=4, seed=1)
    before = set(study.items.values_list("conversation_id", flat=True))
    assert item_draws.study_items_extend(study=study, count=3, expected_items=4, seed=5) == 3
    study.refresh_from_db()
    after = set(study.items.values_list("conversation_id", flat=True))
    assert before < after and len(after) == 7 and after <= set(study.item_draw["frame"])
    assert study.item_draw["method"] == item_draws.RANDOM and study.item_draw["extensions"] == [{"count": 3, "seed": 5}]
    for item in study.items.all():  # the anchor and the judged systems as on the first items
        assert item.reference_value == 100 and item.reference_response.system.name == "human"
        assert list(StudyItemResponse.objects.filter(item=item).order_by("position")
                    .values_list("response__system__name", flat=True)) == ["seq2seq", "hred", "thred"]
    # the same form sent again finds 7 items, not 4: nothing is added
    with pytest.raises(ValidationError, match="sent twice"):
        item_draws.study_items_extend(study=study, count=3, expected_items=4)
    with pytest.raises(ValidationError, match="5 conversation"):
        item_draws.study_items_extend(study=study, count=6)
    assert study.items.count() == 7


def test_ppi_extend_refuses_per_item_anchors_and_pairs(user, big_corpus):
    bme = _study(user, big_corpus, "bme", limit=4)
    authoring.study_item_reference_values_set(study=bme, values={pk: 40.0 + pk for pk in bme.items.values_list("pk", flat=True)})
    with pytest.raises(ValidationError, match="own reference value"):
        item_draws.study_items_extend(study=bme, count=1)
    pairwise = _study(user, big_corpus, "pairwise", limit=4)
    assert pairwise.item_draw["method"] == item_draws.RANDOM
    with pytest.raises(ValidationError, match="pairs"):
        item_draws.study_items_extend(study=pairwise, count=1)
    assert bme.items.count() == 4 and pairwise.items.count() == 4 * 6


def test_ppi_a_finished_pilot_is_extended_and_reopened(user, big_corpus):
    pilot = _study(user, big_corpus, limit=3)  # one rater per item, three items per assignment
    authoring.study_publish(study=pilot)
    assignment = rater_entry.assignment_start(study=pilot, rater=Rater.objects.create(platform="invite", external_id="p"))
    for slot in assignment.assignment_items.all():
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, seconds=3.0,
                                answers={c: {r: 4 for r in slot.response_order} for c in ("readability", "coherence")})
    answering.assignment_submit(assignment=assignment, total_seconds=30.0)
    pilot.refresh_from_db()
    assert pilot.status == Study.Status.CLOSED  # every item had its rater
    with pytest.raises(StudyStateError, match="every item already has its raters"):
        editing.study_reopen(study=pilot)
    assert item_draws.study_items_extend(study=pilot, count=2, expected_items=3) == 2
    assert editing.study_reopen(study=pilot).status == Study.Status.PUBLISHED and pilot.items.count() == 5


def test_ppi_extended_items_go_to_the_next_raters(user, big_corpus):
    study = _study(user, big_corpus, limit=3)
    authoring.study_publish(study=study)
    first = rater_entry.assignment_start(study=study, rater=Rater.objects.create(platform="invite", external_id="r1"), seed=1)
    assert {s.item.conversation_id for s in first.assignment_items.all()} <= set(study.item_draw["frame"])
    item_draws.study_items_extend(study=study, count=3, expected_items=3, seed=2)
    study.refresh_from_db()
    second = rater_entry.assignment_start(study=study, rater=Rater.objects.create(platform="invite", external_id="r2"), seed=2)
    new = set(study.items.order_by("-position").values_list("pk", flat=True)[:3])
    assert {s.item_id for s in second.assignment_items.all()} == new  # the least-rated items first
