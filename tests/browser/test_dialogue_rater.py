"""Raters judging whole dialogues in a real browser (Likert on a phone-sized screen, RME with an anchor
dialogue on a desktop one): the page shows the whole conversation with speakers told apart, and the
database then holds exactly the ratings entered, attached to the conversations. Screens are saved."""

import io
import re

import pytest

from studies.authoring import services as authoring
from studies.corpora import services as corpus_imports
from studies.designs.common import field_name
from studies.designs.units.dialogue import speaker_turns
from studies.models import Assignment, Conversation, Rating
from tests.browser.test_rater_flow import begin
from tests.factories import prolific_id
from tests.studies.test_import_dialogue import dump, fed_dialogue

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def dialogue_study(user):
    def build(design: str):
        records = [fed_dialogue(i, model=["Meena", "Human"][i % 2]) for i in range(6)]
        records[1]["dialog"].insert(2, {"speaker": "model", "text": "Two turns in a row by the system."})
        corpus = corpus_imports.dialogues_import(
            stream=io.BytesIO(dump(records)), source_name=f"fed-{design}.json", owner=user
        ).corpus
        experiment = authoring.experiment_create(owner=user, title=f"Dialogues {design}")
        study = authoring.study_create(
            experiment=experiment,
            title=f"dialogues {design}",
            design=design,
            unit="dialogue",
            raters_per_item=1,
            items_per_assignment=3,
            platform="prolific",
            design_config={"likert": {"points": 5}, "bws": {"tuple_size": 3}}.get(design),
        )
        authoring.study_items_build(
            study=study,
            corpus=corpus,
            limit=None if design == "bws" else 3,
            **({"reference_conversation": "fed-d1"} if design == "rme" else {}),
        )
        authoring.study_publish(study=study)
        return study

    return build


@pytest.mark.parametrize(("design", "viewport"), [("likert", (390, 844)), ("rme", (1200, 900))])
def test_rating_whole_dialogues_in_the_browser(live_server, browser, screenshot, dialogue_study, design, viewport):
    study = dialogue_study(design)
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    worker = f"d-{design}"
    begin(page, live_server, study, worker)
    assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
    entered = {}
    for step in range(3):
        slot = assignment.assignment_items.select_related("item__conversation").get(position=step)
        conversation = slot.item.conversation
        dialogue = page.get_by_test_id("dialogue")
        turns = dialogue.locator("li.turn")
        assert turns.count() == len(conversation.turns)  # the whole conversation, its last turn too
        assert turns.last.inner_text().endswith(conversation.turns[-1]["text"])
        sides = [("side-a" in (turns.nth(i).get_attribute("class") or "")) for i in range(turns.count())]
        # sides follow the speaker, the system's on side-a whoever opens
        assert sides == [t["side"] == "side-a" for t in speaker_turns(conversation.turns)]
        assert {t["speaker"] for t, a in zip(conversation.turns, sides, strict=True) if a} <= {"model", "system"}
        assert page.locator("article.response").count() == 0
        if design == "rme":
            assert float(page.get_by_test_id("reference-value").inner_text()) == 100
            anchor = Conversation.objects.get(corpus=conversation.corpus, external_id="fed-d1")
            assert page.locator(".anchor-dialogue li.turn").count() == len(anchor.turns)
        if step == 0:
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= viewport[0]  # nothing runs off a phone's screen
            screenshot(page, f"dialogue-{design}")
        for i, criterion in enumerate(("readability", "coherence")):
            field = field_name(conversation.pk, criterion, slot.response_order)
            value = (step + i) % 5 + 1 if design == "likert" else 60 + 30 * i + step
            if design == "likert":
                page.locator(f".likert-row[data-field='{field}'] label.point:has(input[value='{value}'])").click()
            else:
                page.fill(f"input[name='{field}']", str(value))
            entered[(conversation.pk, criterion)] = value
        page.click("form#item-form button[type=submit]")
        page.wait_for_load_state("networkidle")
    assert "last questions" in page.locator("h1").inner_text()
    page.check("input[name=prior_rating_experience][value=no]")
    page.check("input[name=prior_agent_experience][value=yes]")
    page.click("button:has-text('Submit')")
    assert re.search(r"\S", page.get_by_test_id("completion-code").inner_text())
    context.close()
    ratings = Rating.objects.filter(assignment=assignment)
    assert not ratings.filter(response__isnull=False).exists()
    assert {(c, n): int(v) for c, n, v in ratings.values_list("conversation_id", "criterion__name", "value")} == entered


def test_ranking_whole_dialogues_in_the_browser(live_server, page, screenshot, dialogue_study):
    study = dialogue_study("bws")  # 6 dialogues in 2 screens of 3
    begin(page, live_server, study, "d-bws")
    assignment = Assignment.objects.get(rater__external_id=prolific_id("d-bws"))
    entered = {}
    for step in range(2):
        slot = assignment.assignment_items.get(position=step)
        for letter, cid in zip("ABC", slot.response_order, strict=True):  # the rater's order, lettered
            shown = page.get_by_test_id(f"dialogue-{letter}")
            turns = Conversation.objects.get(pk=cid).turns
            assert shown.locator("li.turn").count() == len(turns)
            assert shown.locator("li.turn").first.inner_text().endswith(turns[0]["text"])
        if step == 0:
            screenshot(page, "dialogue-bws")
        lists = page.locator("ol.ranking").all()
        assert len(lists) == 2
        for ranking, criterion in zip(lists, ("readability", "coherence"), strict=True):
            ranks = [2, 3, 1] if criterion == "readability" else [1, 3, 2]
            for cid, rank in zip(slot.response_order, ranks, strict=True):
                ranking.locator(f"select[name='{field_name(cid, criterion, slot.response_order)}']").select_option(str(rank))
                entered[(cid, criterion)] = rank
        page.click("form#item-form button[type=submit]")
        page.wait_for_load_state("networkidle")
    assert "last questions" in page.locator("h1").inner_text()
    stored = Rating.objects.filter(assignment=assignment).values_list("conversation_id", "criterion__name", "rank")
    assert {(c, n): r for c, n, r in stored} == entered
