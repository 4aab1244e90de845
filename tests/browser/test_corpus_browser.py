"""A researcher in a real browser imports ParlAI files from the import page (format detected and named,
warnings by line) and reads the conversations in the corpus browser, reached from the navigation: searched
by speaker and text, one conversation as raters see it with its system and persona."""
import json

import pytest

from tests import parlai_files
from tests.browser.conftest import log_in
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def researcher(live_server, page):
    user = UserFactory(username="rosa")
    user.set_password("pw-rosa-123")
    user.save()
    log_in(page, live_server, "rosa", "pw-rosa-123")
    return user


def test_parlai_import_page_detects_pairings_and_opens_the_corpus_browser(live_server, page, researcher, tmp_path,
                                                                           screenshot):
    path = tmp_path / "pairings.jsonl"
    path.write_bytes(parlai_files.jsonl(parlai_files.pairings_lines(missing_speaker=True)))
    page.click("nav >> text=Import dialogues")
    page.set_input_files("#id_file", str(path))
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/corpora/pairings/")
    assert page.locator("h1").inner_text().startswith("Corpus")
    success = page.locator(".message.success").inner_text()
    assert "Detected format: ParlAI ACUTE-Eval pairings (pairings.jsonl)." in success
    assert "draft ACUTE-Eval study" in success
    warning = page.locator(".message.warning").first.inner_text()
    assert "line 3, dialogue_dicts[0].dialogue[2].id: the turn names no speaker" in warning
    rows = page.locator('[data-testid="conversation-row"]')
    assert rows.count() == 4
    assert "blender_90M, human_evaluator" in rows.first.inner_text()
    screenshot(page, "corpus-browser-pairings")


def test_corpus_browser_searches_and_shows_a_conversation_as_raters_see_it(live_server, page, researcher, tmp_path,
                                                                           screenshot):
    path = tmp_path / "20201229_173200_1_live.json"
    path.write_text(json.dumps(parlai_files.modelchat_record(), indent=4))
    page.click("nav >> text=Import dialogues")
    page.set_input_files("#id_file", str(path))
    page.click("button[type=submit]")
    page.wait_for_url("**/corpora/*/")
    selfchat = tmp_path / "model2.blended_skill_talk.jsonl"
    selfchat.write_bytes(parlai_files.jsonl(parlai_files.selfchat_lines(n=3)))
    page.click("nav >> text=Import dialogues")
    page.set_input_files("#id_file", str(selfchat))
    page.click("button[type=submit]")
    page.wait_for_url("**/corpora/model2blended_skill_talk/")

    page.click("nav >> text=Corpora")
    assert page.locator("h1").inner_text() == "Corpora"
    assert page.locator('[data-testid="corpus-list"] tbody tr').count() == 2
    page.click("text=model2blended_skill_talk")
    page.fill('input[name="q"]', "spare time ? (2)")
    page.select_option('select[name="speaker"]', "TransformerGenerator_1")
    page.click("text=Search")
    page.wait_for_url("**speaker=TransformerGenerator_1**")
    rows = page.locator('[data-testid="conversation-row"]')
    assert rows.count() == 1 and "model2-3" in rows.first.inner_text()

    page.click("nav >> text=Corpora")
    page.click("text=20201229_173200_1_live")
    page.click('[data-testid="conversation-row"] a')
    assert page.locator("h1").inner_text().startswith("Conversation")
    assert page.locator('[data-testid="conversation-system"]').inner_text() == "blender_90M"
    assert page.locator(".turn.judged").count() == 2  # the bot's turns, marked as on the ACUTE-Eval page
    assert "i am a chef." in page.locator('[data-testid="conversation-persona"]').inner_text()
    screenshot(page, "corpus-browser-conversation")
