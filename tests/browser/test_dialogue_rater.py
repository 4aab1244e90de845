"""Raters judging whole dialogues in a real browser (Likert on a phone-sized screen, RME with an anchor
dialogue on a desktop one): the page shows the whole conversation with speakers told apart, and the
database then holds exactly the ratings entered, attached to the conversations. Screens are saved."""

import io
import re

import pytest

from studies import services
from studies.models import Assignment, Conversation, Rating
from tests.browser.test_rater_flow import begin
from tests.studies.test_import_dialogue import dump, fed_dialogue

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def dialogue_study(user):
    def build(design: str):
        records = [fed_dialogue(i, model=["Meena", "Human"][i % 2]) for i in range(4)]
        records[1]["dialog"].insert(2, {"speaker": "System", "text": "Two turns in a row by the system."})
        corpus = services.dialogues_import(
            stream=io.BytesIO(dump(records)), source_name=f"fed-{design}.json", owner=user
        ).corpus
        experiment = services.experiment_create(owner=user, title=f"Dialogues {design}")
        study = services.study_create(
            experiment=experiment,
            title=f"dialogues {design}",
            design=design,
            unit="dialogue",
            raters_per_item=1,
            items_per_assignment=3,
            platform="prolific",
            design_config={"points": 5} if design == "likert" else None,
        )
        services.study_items_build(
            study=study, corpus=corpus, limit=3, **({"reference_conversation": "fed-d1"} if design == "rme" else {})
        )
        services.study_publish(study=study)
        return study

    return build


@pytest.mark.parametrize(("design", "viewport"), [("likert", (390, 844)), ("rme", (1200, 900))])
def test_rating_whole_dialogues_in_the_browser(live_server, browser, screenshot, dialogue_study, design, viewport):
    study = dialogue_study(design)
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    worker = f"d-{design}"
    begin(page, live_server, study, worker)
    assignment = Assignment.objects.get(rater__external_id=worker)
    entered = {}
    for step in range(3):
        slot = assignment.assignment_items.select_related("item__conversation").get(position=step)
        conversation = slot.item.conversation
        dialogue = page.get_by_test_id("dialogue")
        turns = dialogue.locator("li.turn")
        assert turns.count() == len(conversation.turns)  # the whole conversation, its last turn too
        assert turns.last.inner_text().endswith(conversation.turns[-1]["text"])
        sides = [("side-a" in (turns.nth(i).get_attribute("class") or "")) for i in range(turns.count())]
        first = conversation.turns[0]["speaker"]
        assert sides == [t["speaker"] == first for t in conversation.turns]  # sides follow the speaker
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
            field = f"r{conversation.pk}-{criterion}"
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
