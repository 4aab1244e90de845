"""The rater's chat page and its JSON interface through Django's test client and the real local bot:
without JavaScript (forms, POST-redirect-GET, a refused message shown again in the box) and with it
(JSON answers); form tokens; the system's name never on the page. The researcher's endpoint pages never
render a key."""
import re

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from studies.models import Chat, ChatTurn, System, SystemEndpoint
from studies.rating import form_tokens
from tests.studies.chat.helpers import bot_system, chat_study, started_assignment

pytestmark = pytest.mark.django_db
JSON = {"HTTP_ACCEPT": "application/json"}


@pytest.fixture
def chat_slot(user, local_bot, loopback_allowed):
    bot_system("secret-bot-name", local_bot.url("rule"), key="sk-views-secret")
    study = chat_study(user, ["secret-bot-name"])
    assignment = started_assignment(study)
    return assignment, 0


def _urls(assignment, position):
    args = [assignment.token, position]
    return {name: reverse(f"chat:{name}", args=args) for name in ("page", "turn", "retry", "end", "state")}


def _token(assignment):
    return form_tokens.form_token(assignment.token, "chat")


def test_chat_page_without_javascript_round_trip(client, chat_slot):
    assignment, position = chat_slot
    urls = _urls(assignment, position)
    page = client.get(urls["page"])
    assert page.status_code == 200
    html = page.content.decode()
    assert "secret-bot-name" not in html and "sk-views-secret" not in html
    client_id = re.search(r'name="client_id" value="([0-9a-f]{32})"', html).group(1)
    sent = client.post(urls["turn"], {"form_token": _token(assignment), "client_id": client_id, "text": "hello"})
    assert sent.status_code == 302 and sent["Location"] == urls["page"]
    again = client.post(urls["turn"], {"form_token": _token(assignment), "client_id": client_id, "text": "hello"})
    assert again.status_code == 302  # a reloaded form re-posts: stored once
    assert ChatTurn.objects.filter(role="user").count() == 1
    shown = client.get(urls["page"]).content.decode()
    assert "Hello! What would you like to talk about today?" in shown
    too_long = client.post(urls["turn"], {"form_token": _token(assignment), "client_id": "x2", "text": "y" * 600})
    assert too_long.status_code == 400
    assert "at most 500 characters" in too_long.content.decode()
    assert "y" * 600 in too_long.content.decode()  # what the rater typed is still in the box
    early_end = client.post(urls["end"], {"form_token": _token(assignment)})
    assert early_end.status_code == 409 and "at least 2 turns" in early_end.content.decode()


def test_chat_json_interface(client, chat_slot):
    assignment, position = chat_slot
    urls = _urls(assignment, position)
    client.get(urls["page"])
    state = client.post(urls["turn"], {"form_token": _token(assignment), "client_id": "a", "text": "I like tea"},
                        **JSON).json()
    assert [t["text"] for t in state["sides"][0]["turns"]] == ["I like tea", "What do you like most about tea?"]
    assert state["exchanges"] == 1 and not state["can_end"]
    state = client.post(urls["turn"], {"form_token": _token(assignment), "client_id": "b", "text": "bye"}, **JSON).json()
    assert state["can_end"]
    ended = client.post(urls["end"], {"form_token": _token(assignment)}, **JSON).json()
    assert ended["ended"] and ended["urls"]["rate"] == reverse("raters:item", args=[assignment.token, position])
    refused = client.post(urls["turn"], {"form_token": _token(assignment), "client_id": "c", "text": "more"}, **JSON)
    assert refused.status_code == 409 and refused.json()["error"] == "this chat has ended"
    assert client.get(urls["state"], **JSON).json()["ended"]
    assert Chat.objects.get().end_reason == Chat.EndReason.RATER
    # Once ended, the chat page sends the rater on to rating the conversation.
    assert client.get(urls["page"])["Location"] == reverse("raters:item", args=[assignment.token, position])


def test_chat_posts_need_the_form_token(client, chat_slot):
    assignment, position = chat_slot
    urls = _urls(assignment, position)
    client.get(urls["page"])
    refused = client.post(urls["turn"], {"client_id": "a", "text": "hi"}, **JSON)
    assert refused.status_code == 403
    other = form_tokens.form_token(assignment.token, "item")
    assert client.post(urls["turn"], {"form_token": other, "text": "hi"}).status_code == 403
    assert not ChatTurn.objects.exists()
    header = client.post(urls["turn"], {"client_id": "h", "text": "hi"}, HTTP_X_CONCORD_FORM_TOKEN=_token(assignment),
                         **JSON)
    assert header.status_code == 200


def test_chat_rate_limit_answers_429_with_retry_after(client, user, local_bot, loopback_allowed):
    bot_system("rulebot", local_bot.url("rule"))
    study = chat_study(user, ["rulebot"], unit_config={"messages_per_minute": 1})
    assignment = started_assignment(study)
    urls = _urls(assignment, 0)
    client.get(urls["page"])
    client.post(urls["turn"], {"form_token": _token(assignment), "client_id": "1", "text": "one"}, **JSON)
    limited = client.post(urls["turn"], {"form_token": _token(assignment), "client_id": "2", "text": "two"}, **JSON)
    assert limited.status_code == 429 and int(limited["Retry-After"]) >= 1
    assert limited.json()["field"] == "text"


def test_chat_failing_bot_is_reported_to_the_rater_without_details(client, user, local_bot, loopback_allowed):
    bot_system("broken", local_bot.url("error"), retries=0)
    study = chat_study(user, ["broken"])
    assignment = started_assignment(study)
    urls = _urls(assignment, 0)
    client.get(urls["page"])
    state = client.post(urls["turn"], {"form_token": _token(assignment), "client_id": "1", "text": "hi"}, **JSON).json()
    side = state["sides"][0]
    assert side["status"] == "failed" and side["error"] == "The system answered with an error."
    assert state["can_retry"] and state["can_end"] and "HTTP 500" not in str(state)
    page = client.get(urls["page"]).content.decode()
    assert "The system answered with an error." in page and "HTTP 500" not in page
    assert client.post(urls["retry"], {"form_token": _token(assignment)}, **JSON).json()["can_retry"]
    assert client.post(urls["end"], {"form_token": _token(assignment)})["Location"].endswith("/items/0/")


def test_chat_page_of_another_unit_is_not_found(client, user, corpus):
    from studies.authoring import services

    experiment = services.experiment_create(owner=user, title="plain")
    study = services.study_create(experiment=experiment, title="likert", design="likert", raters_per_item=1,
                                  items_per_assignment=1)
    services.study_items_build(study=study, corpus=corpus, systems=["seq2seq"], limit=1)
    assignment = started_assignment(study)
    assert client.get(_urls(assignment, 0)["page"]).status_code == 404


def test_chat_endpoint_pages_never_render_the_key(client, user, local_bot, loopback_allowed):
    assert client.get(reverse("chat:endpoint_list")).status_code == 302  # login first
    user.user_permissions.add(Permission.objects.get(codename="change_systemendpoint"))
    client.force_login(user)
    created = client.post(reverse("chat:endpoint_new"), {
        "system": "My Bot", "protocol": "openai", "url": local_bot.url("rule", "openai"), "model_name": "m",
        "key": "sk-do-not-show-me", "timeout_seconds": 5, "retries": 1})
    assert created.status_code == 302
    endpoint = SystemEndpoint.objects.get(system__name="my-bot")
    assert endpoint.owner == user
    assert endpoint.key_encrypted and "sk-do-not-show-me" not in endpoint.key_encrypted
    for url in (reverse("chat:endpoint_list"), reverse("chat:endpoint_edit", args=[endpoint.pk])):
        html = client.get(url).content.decode()
        assert "sk-do-not-show-me" not in html and endpoint.key_encrypted not in html
        assert "stored" in html
    tried = client.post(reverse("chat:endpoint_try", args=[endpoint.pk]), follow=True).content.decode()
    assert "Hello! What would you like to talk about today?" in tried
    assert local_bot.requests[-1]["headers"]["Authorization"] == "Bearer sk-do-not-show-me"
    # Saving again without a key keeps it; a refused address is named on the form.
    client.post(reverse("chat:endpoint_edit", args=[endpoint.pk]), {
        "system": "my-bot", "protocol": "openai", "url": local_bot.url("rule", "openai"), "timeout_seconds": 5,
        "retries": 1})
    assert SystemEndpoint.objects.get(pk=endpoint.pk).key_encrypted == endpoint.key_encrypted
    refused = client.post(reverse("chat:endpoint_edit", args=[endpoint.pk]), {
        "system": "my-bot", "protocol": "concord", "url": "http://169.254.169.254/latest", "timeout_seconds": 5,
        "retries": 1})
    assert refused.status_code == 400 and "link-local" in refused.content.decode()
    assert System.objects.filter(name="my-bot").count() == 1


def test_chat_transcripts_export_with_timing_and_no_secrets(client, user, other_user, chat_slot, local_bot):
    import json

    from studies.chat import services as chat

    assignment, position = chat_slot
    item_id = assignment.assignment_items.get(position=position).item_id
    chat.chat_open(assignment=assignment, item_id=item_id)
    chat.chat_turn_post(assignment=assignment, item_id=item_id, text="I feel great", client_id="1")
    url = reverse("chat:transcripts_export", args=[assignment.study.slug])
    client.force_login(other_user)
    assert client.get(url).status_code == 404  # not their study
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    body = b"".join(response.streaming_content).decode()
    [line] = [json.loads(x) for x in body.splitlines()]
    assert line["system"] == "secret-bot-name" and line["status"] == "open"
    assert line["rater"].startswith("R-")  # a pseudonym unless raw ids are asked for
    assert [(t["speaker"], t["text"]) for t in line["turns"]] == [("user", "I feel great"),
                                                                 ("system", "Why do you feel great?")]
    assert all(t["time"] and t["seconds"] is not None for t in line["turns"])
    assert "sk-views-secret" not in body and local_bot.url("rule") not in body


def test_chat_item_browser_and_ratings_export_show_the_transcripts(client, user, local_bot, loopback_allowed):
    import csv
    import io

    from studies.models import Rating, Study
    from studies.reports import exporting
    from tests.studies.chat.helpers import chat_and_rate

    bot_system("rule-x", local_bot.url("rule"))
    bot_system("parrot-x", local_bot.url("parrot"))
    study = chat_study(user, ["rule-x", "parrot-x"], design="bws", design_config={"tuple_size": 2},
                       unit_config={"systems_per_chat": 2}, raters_per_item=3)
    for n in range(2):
        chat_and_rate(study, f"browser-{n}", seed=n, good_system="rule-x")
    client.force_login(user)
    html = client.get(f"/studies/{study.slug}/browse/").content.decode()
    assert html.count('data-testid="transcripts"') == 1 and "Chats (4) with" in html
    assert "You said: " in html and "parrot-x" in html  # the parrot's turns, and the system named
    cells = re.findall(r'data-testid="judgment">([^<]*)<', html)
    # one line per rater and criterion, a cell per system in the item's order: the rule bot ranked first
    columns = re.search(r"<th>Criterion</th>(.*?)<th>Seconds", html, re.S).group(1)
    first = "rule-x" if columns.index("rule-x") < columns.index("parrot-x") else "parrot-x"
    expected = ["1", "2"] if first == "rule-x" else ["2", "1"]
    assert len(cells) == 2 * 3 * 2 and all(cells[i:i + 2] == expected for i in range(0, len(cells), 2))
    rows = list(csv.DictReader(io.StringIO("".join(exporting.export_lines(Study.objects.filter(pk=study.pk), "csv")))))
    assert len(rows) == Rating.objects.filter(assignment__study=study).count() == 12
    parrot = [r for r in rows if r["system"] == "parrot-x"]
    assert all("You said:" in r["context"] and r["conversation"].startswith("a") for r in parrot)
    assert {r["rank"] for r in parrot} == {"2"} and {r["normalised_value"] for r in parrot} == {"1.0"}


def test_chat_report_section_counts_chats_failures_and_reply_times(client, user, local_bot, loopback_allowed,
                                                                    make_study):
    from studies.chat import selectors as chat_selectors
    from studies.models import ChatTurn
    from tests.studies.chat.helpers import chat_and_rate

    bot_system("sum-rule", local_bot.url("rule"))
    bot_system("sum-flaky", local_bot.url("flaky"), retries=1)  # every reply needs a second try
    study = chat_study(user, ["sum-rule", "sum-flaky"], raters_per_item=3, items_per_assignment=2)
    for n in range(2):
        chat_and_rate(study, f"summary-{n}", seed=n, good_system="sum-rule")
    rows = {r["system"]: r for r in chat_selectors.chat_summary([study])}
    for system in ("sum-rule", "sum-flaky"):
        replies = ChatTurn.objects.filter(chat__system__name=system, role="system")
        assert rows[system]["chats"] == rows[system]["ended"] == 2
        assert rows[system]["replies_per_chat"] == replies.count() / 2
        assert rows[system]["reply_seconds_max"] == max(replies.values_list("seconds", flat=True))
    assert set(ChatTurn.objects.filter(chat__system__name="sum-flaky", role="system")
               .values_list("attempts", flat=True)) == {2}  # the retry answered, the rater saw no failure
    assert rows["sum-flaky"]["failed_calls"] == rows["sum-flaky"]["ended_after_failure"] == 0
    client.force_login(user)
    html = client.get(f"/studies/{study.slug}/report/").content.decode()
    assert 'data-testid="chat-summary"' in html and "every conversation has one rater" in html
    plain = make_study("likert")
    assert 'data-testid="chat-summary"' not in client.get(f"/studies/{plain.slug}/report/").content.decode()


def test_chat_start_page_says_raters_will_chat(client, user, local_bot, loopback_allowed):
    """The start page of a chat study says the rater chats first, then judges the conversation."""
    bot_system("rule", local_bot.url("rule"))
    study = chat_study(user, ["rule"])
    assignment = started_assignment(study)
    assignment.consented_at = None
    assignment.save(update_fields=["consented_at"])
    page = client.get(reverse("raters:start", args=[assignment.token])).content.decode()
    assert "first chat with a dialogue system" in page


def test_a_single_chat_is_rated_as_the_conversation_without_a_letter(client, chat_slot):
    """One chat is "Conversation", not "Conversation A" (letters only where there are several),
    on the chat page and on the rating page after it."""
    from studies.chat import services as chatting

    assignment, position = chat_slot
    item_id = assignment.assignment_items.get(position=position).item_id
    chat_page = client.get(_urls(assignment, position)["page"]).content.decode()
    assert 'aria-label="Conversation"' in chat_page and "Conversation A" not in chat_page
    chatting.chat_open(assignment=assignment, item_id=item_id)
    for n, text in enumerate(["Hello!", "What is the weather like?"]):
        chatting.chat_turn_post(assignment=assignment, item_id=item_id, text=text, client_id=f"c{n}")
    chatting.chat_end(assignment=assignment, item_id=item_id)
    page = client.get(reverse("raters:item", args=[assignment.token, position]))
    html = page.content.decode()
    assert page.status_code == 200 and "This is the conversation you just had" in html
    assert re.search(r'<span class="row-label">Conversation</span>', html)
    assert 'aria-label="Conversation"' in html and "Conversation A" not in html
