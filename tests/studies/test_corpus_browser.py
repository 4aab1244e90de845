"""The corpus browser, pages and API: a researcher's corpora, their conversations found by text, system and
speaker a page at a time, one conversation as raters would see it with its system, judged speaker, persona
and settings; another researcher's corpus and its conversations are a 404 everywhere."""
import io
import json

import pytest
from django.test import Client

from studies.corpora import browsing
from studies.corpora import services as corpus_imports
from tests import parlai_files
from tests.api.test_convention import client_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def selfchats(user):
    data = parlai_files.jsonl(parlai_files.selfchat_lines(n=3))
    return corpus_imports.dialogues_import(stream=io.BytesIO(data), source_name="model2.blended_skill_talk.jsonl",
                                           owner=user).corpus


@pytest.fixture
def modelchat(user):
    data = json.dumps(parlai_files.modelchat_record(), indent=4).encode()
    return corpus_imports.dialogues_import(stream=io.BytesIO(data), source_name="chat_1_live.json", owner=user).corpus


@pytest.fixture
def bobs_corpus(other_user):
    data = parlai_files.jsonl(parlai_files.selfchat_lines(model="BobBot"))
    return corpus_imports.dialogues_import(stream=io.BytesIO(data), source_name="bob.blended_skill_talk.jsonl",
                                           owner=other_user).corpus


def test_corpus_browser_lists_own_corpora_in_the_navigation(researcher, corpus, selfchats, bobs_corpus):
    page = researcher.get("/corpora/").content.decode()
    assert "<h1>Corpora</h1>" in page and 'href="/corpora/"' in page  # the navigation links it
    assert f'href="/corpora/{corpus.slug}/"' in page and f'href="/corpora/{selfchats.slug}/"' in page
    assert bobs_corpus.slug not in page


def test_corpus_browser_search_by_text_system_and_speaker(corpus, selfchats):
    assert [c.external_id for c in browsing.conversations_found(corpus, text="NUMBER 3")] == ["c3"]
    assert [c.external_id for c in browsing.conversations_found(corpus, text="thanks for asking 4")] == ["c4"]
    assert browsing.conversations_found(corpus, system="hred").count() == 6
    assert browsing.conversations_found(corpus, system="model2").count() == 0
    assert browsing.conversations_found(selfchats, system="model2").count() == 3
    assert browsing.conversations_found(selfchats, speaker="TransformerGenerator_2").count() == 3
    assert browsing.conversations_found(selfchats, speaker="TransformerGenerator").count() == 0  # exact names
    assert [c.external_id for c in browsing.conversations_found(selfchats, text="spare time ? (1)",
                                                                speaker="TransformerGenerator_1")] == ["model2-2"]


def test_corpus_browser_page_filters_and_pages(researcher, user):
    lines = [{"id": f"d{i:02d}", "turns": [{"speaker": "bot" if i % 2 else "user", "text": f"turn {i}"}, "ok"],
              "responses": {"seq2seq": f"reply {i}"}} for i in range(30)]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    corpus = corpus_imports.dialogues_import(stream=io.BytesIO(data), source_name="paged.jsonl", owner=user,
                                             systems=["seq2seq"]).corpus
    page = researcher.get(f"/corpora/{corpus.slug}/").content.decode()
    assert page.count('data-testid="conversation-row"') == browsing.PAGE_SIZE and "page 1 of 2" in page
    second = researcher.get(f"/corpora/{corpus.slug}/?page=2").content.decode()
    assert second.count('data-testid="conversation-row"') == 30 - browsing.PAGE_SIZE
    found = researcher.get(f"/corpora/{corpus.slug}/?speaker=bot&q=turn").content.decode()
    assert found.count('data-testid="conversation-row"') == 15 and "(15 conversations found)" in found


def test_corpus_browser_conversation_shows_system_persona_and_settings(researcher, modelchat):
    conversation = modelchat.conversations.get()
    page = researcher.get(f"/corpora/{modelchat.slug}/conversations/{conversation.pk}/").content.decode()
    assert "<h1>Conversation" in page
    assert 'data-testid="conversation-system">blender_90M<' in page
    assert page.count('class="turn side-a judged"') == 2  # the bot's turns: judged, on the system's side
    assert "i am a chef.\ni live in paris." in page  # bot_persona_strings, one per line
    assert "blended_skill_talk" in page and "Ratatouille" in page


def test_corpus_browser_other_researchers_corpus_is_404(researcher, bobs_corpus, api):
    conversation = bobs_corpus.conversations.first()
    assert researcher.get(f"/corpora/{bobs_corpus.slug}/").status_code == 404
    assert researcher.get(f"/corpora/{bobs_corpus.slug}/conversations/{conversation.pk}/").status_code == 404
    assert api.get(f"/api/corpora/{bobs_corpus.slug}/conversations/").status_code == 404
    assert api.get(f"/api/corpora/{bobs_corpus.slug}/conversations/{conversation.pk}/").status_code == 404


def test_corpus_browser_conversation_of_another_corpus_is_404(researcher, corpus, bobs_corpus, api):
    """A conversation id is found only under its own corpus (Bob's conversation under Alice's slug)."""
    theirs = bobs_corpus.conversations.first()
    assert researcher.get(f"/corpora/{corpus.slug}/conversations/{theirs.pk}/").status_code == 404
    assert api.get(f"/api/corpora/{corpus.slug}/conversations/{theirs.pk}/").status_code == 404


def test_corpus_browser_api_lists_with_filters_and_limit_offset(api, selfchats):
    body = api.get(f"/api/corpora/{selfchats.slug}/conversations/?limit=2").json()
    assert set(body) == {"count", "next", "previous", "results"} and body["count"] == 3
    assert [r["external_id"] for r in body["results"]] == ["model2-1", "model2-2"]
    row = body["results"][0]
    assert row["system"] == "model2" and row["speakers"] == ["TransformerGenerator_1", "TransformerGenerator_2"]
    assert row["turns"] == 4 and row["responses"] == 0
    rest = api.get(f"/api/corpora/{selfchats.slug}/conversations/?limit=2&offset=2").json()
    assert [r["external_id"] for r in rest["results"]] == ["model2-3"]
    found = api.get(f"/api/corpora/{selfchats.slug}/conversations/?q=(2)&speaker=TransformerGenerator_1").json()
    assert [r["external_id"] for r in found["results"]] == ["model2-3"]


def test_corpus_browser_api_refuses_an_unknown_filter(api, selfchats):
    from tests.problems import problem_fields

    response = api.get(f"/api/corpora/{selfchats.slug}/conversations/?speeker=x")
    assert response.status_code == 400 and "speeker" in problem_fields(response)


def test_corpus_browser_api_reads_one_conversation_as_raters_see_it(api, selfchats):
    conversation = selfchats.conversations.order_by("pk").first()
    body = api.get(f"/api/corpora/{selfchats.slug}/conversations/{conversation.pk}/").json()
    assert body["system"] == "model2" and body["judged_speaker"] == "TransformerGenerator_1"
    assert [(t["speaker"], t["judged"]) for t in body["turns"][:2]] == [
        ("TransformerGenerator_1", True), ("TransformerGenerator_2", False)]
    assert body["persona"]["context"][0].startswith("your persona: my hobby is building houses")
    assert body["settings"]["source"] == "parlai-selfchat"


def test_corpus_browser_import_page_redirects_to_the_corpus_naming_the_format(researcher):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("pairings.jsonl", parlai_files.jsonl(parlai_files.pairings_lines(missing_speaker=True)))
    response = researcher.post("/import/", {"file": upload, "format": "auto"}, follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == "/corpora/pairings/"
    assert "Detected format: ParlAI ACUTE-Eval pairings (pairings.jsonl)." in page
    assert "Warning: line 3, dialogue_dicts[0].dialogue[2].id: the turn names no speaker" in page
    assert "draft ACUTE-Eval study" in page


def test_corpus_browser_bob_cannot_list_alices_conversations(selfchats, other_user):
    bob = client_of(other_user)
    assert bob.get(f"/api/corpora/{selfchats.slug}/conversations/").status_code == 404


def test_corpus_browser_search_finds_non_ascii_text_and_speakers(user):
    lines = [{"id": "fr", "turns": [{"speaker": "Zoë", "text": "Un café, s'il vous plaît."}, {"speaker": "bot", "text": "Bien sûr."}],
              "responses": {"seq2seq": "Voilà."}},
             {"id": "en", "turns": [{"speaker": "Zoe", "text": "A coffee, please."}, {"speaker": "bot", "text": "Sure."}],
              "responses": {"seq2seq": "Here."}}]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    corpus = corpus_imports.dialogues_import(stream=io.BytesIO(data), source_name="fr.jsonl", owner=user,
                                             systems=["seq2seq"]).corpus
    assert [c.external_id for c in browsing.conversations_found(corpus, text="café")] == ["fr"]
    assert [c.external_id for c in browsing.conversations_found(corpus, speaker="Zoë")] == ["fr"]
    assert [c.external_id for c in browsing.conversations_found(corpus, speaker="Zoe")] == ["en"]
    assert [c.external_id for c in browsing.conversations_found(corpus, text="voilà")] == ["fr"]
