"""Check items cannot be told from regular items in the page source.

Check items are written after the study's items, so their responses have the newest database ids; a page
that named responses by id (field names ``r<id>-...``, ``data-response``, tuple radio values) let a rater
who reads the source find them. A check item that showed another number of responses than every other
screen (one response among sets of four) stood out without reading any source. Pages now name responses by
the letter the rater sees, and a check item must show as many responses as the items do."""
import re

import pytest
from django.core.exceptions import ValidationError

from studies.authoring import checks
from studies.authoring import services as authoring
from studies.designs import design_for
from studies.designs.common import draft_in_letters
from studies.errors import StudyStateError
from studies.models import Assignment, Response
from studies.rating import answers as answering
from studies.rating import entry as rater_entry

pytestmark = pytest.mark.django_db

DESIGNS = ["likert", "rme", "bme", "bws", "pairwise"]


def add_check(study, n):
    design = design_for(study)
    rule = {"best": 1} if "best" in design.check_rule_kinds else {"greater": 1, "than": 2}
    value, _ = design.check_reference_value(study.design_config, 100.0)
    return checks.check_item_create(study=study, kind="gold", context="A: Are you there?",
                                    responses=["Yes, I am here."] + [f"Banana {i}." for i in range(n - 1)],
                                    rules=[rule], reference="I am here." if design.anchored else None,
                                    reference_value=value)


def page_of(client, assignment, position):
    return client.get(f"/r/a/{assignment.token}/items/{position}/").content.decode()


def shape(html):
    """What a page's form is made of, with the texts left out: every field name and value, data attribute
    and anchor, in order."""
    form = html[html.index('id="item-form"'):]
    found = re.findall(r'(?:name|value|data-[a-z-]+|href|id|for)="[^"]*"', re.sub(r"<p>[^<]*</p>", "", form))
    return [a for a in found if "/r/a/" not in a]  # the screen's own address and the Back link


@pytest.mark.parametrize("design", DESIGNS)
def test_a_check_item_page_names_no_response_id_and_has_the_shape_of_a_regular_one(client, make_study, design):
    study = make_study(design, publish=False, raters_per_item=2, items_per_assignment=3)
    n = min(checks.regular_shown_counts(study))
    check = add_check(study, n)
    checks.study_checks_configure(study=study, per_assignment=1)
    authoring.study_publish(study=study)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="reader"), seed=4)
    answering.assignment_consent(assignment=assignment)
    slots = {s.item_id: s for s in assignment.assignment_items.all()}
    check_slot = slots[check.pk]
    regular = next(s for s in slots.values() if s.item_id != check.pk)
    check_page, regular_page = page_of(client, assignment, check_slot.position), page_of(client, assignment,
                                                                                        regular.position)
    ids = [r for s in (check_slot, regular) for r in s.response_order]
    assert max(check_slot.response_order) > max(regular.response_order)  # the tell this test is about
    for html in (check_page, regular_page):
        attributes = " ".join(shape(html))
        assert not re.search(r'name="r\d', attributes)
        assert not any(f'"{rid}"' in attributes or f"-{rid}\"" in attributes or f"{rid}-" in attributes
                       for rid in ids), attributes
    assert shape(check_page) == shape(regular_page)


def test_a_tuple_page_names_its_members_by_letter(client, make_study):
    study = make_study("bws_tuples", raters_per_item=2, items_per_assignment=48)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="tuples"), seed=1)
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.get(position=0)
    attributes = " ".join(shape(page_of(client, assignment, 0)))
    assert 'value="A"' in attributes and 'data-member="D"' in attributes and 'href="#member-B"' in attributes
    assert not any(f'"{rid}"' in attributes or f"-{rid}\"" in attributes for rid in slot.response_order)


def test_a_check_item_must_show_as_many_responses_as_the_items(make_study, corpus):
    study = make_study("likert", publish=False)  # three systems and the human response: four per item
    before = Response.objects.count()
    with pytest.raises(ValidationError) as refused:
        add_check(study, 1)
    assert "a check item must show as many" in refused.value.message_dict["responses"][0]
    assert Response.objects.count() == before
    add_check(study, 4)
    # items rebuilt to show two responses: the four-response check item would stand out, publishing says so
    authoring.study_items_build(study=study, corpus=corpus, systems=["hred"], reference_system="human")
    with pytest.raises(StudyStateError, match="1 check item.*another number of responses"):
        authoring.study_publish(study=study)
    study.refresh_from_db()
    assert study.status == "draft" and not Assignment.objects.filter(study=study).exists()


def test_a_draft_saved_with_id_names_before_letters_is_restored(client, make_study):
    """A rater typing while the letter names were deployed: the draft was autosaved under ``r<id>-…`` names
    (and a tuple pick's value was a member id). The page shows those answers under today's letters."""
    study = make_study("likert", raters_per_item=2, items_per_assignment=2)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="deploy"), seed=2)
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.get(position=0)
    first, second = slot.response_order[0], slot.response_order[1]
    slot.draft = {f"r{second}-coherence": "4", f"r{first}-coherence": "2", f"r{first}-coherence.rationale": "Off topic",
                  "r999999-coherence": "5"}  # an id this screen does not show stays unnamed
    slot.save(update_fields=["draft"])
    page = page_of(client, assignment, 0)
    assert 'name="rB-coherence" value="4" checked' in page and 'name="rA-coherence" value="2" checked' in page
    unknown = {"r999999-coherence": "5", "r0-best-coherence": "999999"}  # ids this screen does not show
    assert draft_in_letters(unknown, slot.response_order) == unknown

    tuples = make_study("bws_tuples", raters_per_item=2, items_per_assignment=48)
    assignment = rater_entry.assignment_start(
        study=tuples, rater=rater_entry.rater_get_or_create(platform="invite", external_id="deploy-t"), seed=2)
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.get(position=0)
    criterion = tuples.criteria.first().name
    slot.draft = {f"r0-best-{criterion}": str(slot.response_order[2]), f"r0-worst-{criterion}": str(slot.response_order[0])}
    slot.save(update_fields=["draft"])
    page = page_of(client, assignment, 0)
    assert re.search(rf'name="r0-best-{criterion}" value="C" checked', page)
    assert re.search(rf'name="r0-worst-{criterion}" value="A" checked', page)
