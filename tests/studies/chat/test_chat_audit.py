"""The chat findings of the security audit, each against the real local bot server: a bot
that drips one byte every half second is cut at the deadline; a reply holding a NUL and a lone
surrogate is cleaned, never a 500 nor a chat stuck "waiting"; the address check refuses every
non-global address by ``ipaddress``'s properties (IPv4-compatible ``::127.0.0.1`` included); "Try it"
says what to do without telling whether a host name resolves."""
import ipaddress
import re
import socket
import threading
import time

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from studies.chat import endpoints
from studies.chat import services as chatting
from studies.chat.addresses import AddressRefused, address_problem, literal_problem, networks_parse, resolve
from studies.chat.client import BotError, Endpoint, bot_reply, text_clean
from studies.chat.local_bot import LocalBot
from studies.models import Chat, ChatTurn, SystemEndpoint
from studies.rating import form_tokens
from tests.studies.chat.conftest import LOOPBACK
from tests.studies.chat.helpers import bot_system, chat_study, started_assignment

TURNS = [{"speaker": "user", "text": "Hello there"}]


@pytest.fixture
def drip_bot():
    with LocalBot(drip_seconds=0.5) as bot:
        yield bot


@pytest.mark.parametrize("part", ["body", "headers"])
def test_a_drip_feeding_bot_is_cut_at_the_deadline(drip_bot, part):
    """Each byte comes within the 1 s read timeout, so only one deadline over the whole call stops it
    (on 80aa140 the call ran until the bot finished, about 20 s)."""
    url = drip_bot.url("drip") + ("?part=headers" if part == "headers" else "")
    endpoint = Endpoint(protocol="concord", url=url, timeout=1.0, retries=2)
    started = time.monotonic()
    with pytest.raises(BotError) as caught:
        bot_reply(endpoint, TURNS, allowed=LOOPBACK, deadline_seconds=2.0)
    elapsed = time.monotonic() - started
    assert caught.value.kind == "timeout"
    assert caught.value.rater_message == "The system did not answer in time."
    assert elapsed < 3.5 and caught.value.seconds < 3.5  # the 2 s deadline, not the bot's 20 s


def test_text_clean_keeps_what_a_database_can_hold():
    assert text_clean("a\x00b\ud800c\tdone\n") == "ab\ufffdc\tdone\n"
    assert text_clean("fine ünïcode ✓") == "fine ünïcode ✓"


@pytest.mark.django_db
def test_a_reply_with_nul_and_a_lone_surrogate_is_cleaned_and_the_chat_goes_on(client, user, local_bot,
                                                                                loopback_allowed):
    bot_system("odd-bot", local_bot.url("odd"), owner=user, retries=0)
    study = chat_study(user, ["odd-bot"])
    assignment = started_assignment(study)
    item_id = study.items.get().pk
    chatting.chat_open(assignment=assignment, item_id=item_id)
    turn = reverse("chat:turn", args=[assignment.token, 0])
    answered = client.post(turn, {"form_token": form_tokens.form_token(assignment.token, "chat"), "client_id": "c1",
                                  "text": "hello"}, HTTP_ACCEPT="application/json")
    assert answered.status_code == 200
    [chat] = Chat.objects.filter(assignment=assignment)
    assert chat.status == Chat.Status.OPEN
    reply = ChatTurn.objects.get(chat=chat, role="system")
    assert reply.text == "ab\ufffd"
    assert chat.conversation.turns[-1]["text"] == "ab\ufffd"
    state = client.get(reverse("chat:state", args=[assignment.token, 0]), HTTP_ACCEPT="application/json")
    assert state.status_code == 200 and state.json()["sides"][0]["status"] == "open"


def test_a_reply_of_nothing_but_control_characters_is_a_reply_failure(local_bot):
    from studies.chat.client import reply_text

    with pytest.raises(BotError) as caught:
        reply_text("concord", {"reply": "\x00\x01"})
    assert caught.value.kind == "reply" and caught.value.rater_message == "The system's answer could not be read."


@pytest.mark.parametrize("address", [
    "::127.0.0.1", "::7f00:1", "::10.0.0.1", "::8.8.8.8", "::ffff:127.0.0.1", "::ffff:10.1.2.3",
    "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::808:808", "2002:7f00:1::1", "2002:a00:1::",
    "2001::1", "2001:db8::1", "100::1", "::", "::1", "fe80::1", "fec0::1", "fc00::1", "ff02::1",
    "127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.0.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
    "198.18.0.1", "192.0.2.1", "240.0.0.1", "255.255.255.255", "224.0.0.1",
])
def test_every_non_global_address_is_refused(address):
    assert address_problem(ipaddress.ip_address(address)) is not None


def test_the_ipv4_compatible_form_is_refused_even_when_its_ipv4_network_is_allowed():
    allowed = networks_parse(["127.0.0.0/8"])
    assert "IPv4-compatible" in address_problem(ipaddress.ip_address("::127.0.0.1"), allowed)
    assert address_problem(ipaddress.ip_address("::ffff:127.0.0.1"), allowed) is None  # the configured network
    assert address_problem(ipaddress.ip_address("127.0.0.1"), allowed) is None
    assert literal_problem("http://[::127.0.0.1]:8777/", allowed) is not None


@pytest.mark.parametrize("address", ["8.8.8.8", "2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808",
                                     "2002:808:808::1"])
def test_global_addresses_pass(address):
    assert address_problem(ipaddress.ip_address(address)) is None


def _answers(*addresses):
    def resolver(host, port, type=0):  # noqa: A002 - getaddrinfo's keyword
        if not addresses:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
                for a in addresses]
    return resolver


def test_a_name_that_does_not_resolve_and_one_that_resolves_privately_read_the_same():
    """No DNS oracle: nothing in the refusal tells the two apart (nor the private address)."""
    messages = []
    for resolver in (_answers(), _answers("10.20.30.40"), _answers("8.8.8.8", "169.254.169.254"),
                     _answers("::ffff:127.0.0.1")):
        with pytest.raises(AddressRefused) as caught:
            resolve("intranet.example", 80, resolver=resolver)
        messages.append((caught.value.kind, str(caught.value)))
    assert len(set(messages)) == 1
    assert "10.20.30.40" not in messages[0][1] and "resolve" in messages[0][1]


@pytest.mark.django_db
def test_try_it_says_what_to_do_and_is_no_dns_lookup_tool(client, user, local_bot, loopback_allowed, monkeypatch):
    user.user_permissions.add(Permission.objects.get(codename="change_systemendpoint"))
    client.force_login(user)
    # Saving a host name looks nothing up: a name that resolves nowhere and one that resolves to a private
    # address are both saved (the check runs at each call, with one message).
    for i, name in enumerate(("nowhere.invalid", "localhost")):
        saved = client.post(reverse("chat:endpoint_new"), {
            "system": f"bot-{i}", "protocol": "concord", "url": f"http://{name}:9/chat", "timeout_seconds": 1,
            "retries": 0})
        assert saved.status_code == 302
        client.get(saved["Location"])  # shows (and clears) "saved"
    shown = []
    loopback_allowed.CHAT_ALLOWED_NETWORKS = []  # localhost (127.0.0.1) is refused here
    for i, name in enumerate(("nowhere.invalid", "localhost")):
        endpoint = SystemEndpoint.objects.get(system__name=f"bot-{i}")
        page = client.post(reverse("chat:endpoint_try", args=[endpoint.pk]), follow=True).content.decode()
        page = page.replace(name, "HOST").replace(f"bot-{i}", "SYSTEM")
        shown.append(re.search(r'<p class="message[^>]*>(.*?)</p>', page).group(1))
        assert "does not resolve to an address endpoints may use" in page and "127.0.0.1" not in page
    assert shown[0] == shown[1]
    loopback_allowed.CHAT_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    # A literal refused address is named with its reason at once (no lookup involved).
    refused = client.post(reverse("chat:endpoint_new"), {
        "system": "literal", "protocol": "concord", "url": "http://[::127.0.0.1]:8777/", "timeout_seconds": 1,
        "retries": 0})
    assert refused.status_code == 400 and "IPv4-compatible" in refused.content.decode()
    # A failure the researcher can act on says what to do.
    erroring = bot_system("err-bot", local_bot.url("error"), owner=user, retries=0)
    endpoint = SystemEndpoint.objects.get(system=erroring)
    page = client.post(reverse("chat:endpoint_try", args=[endpoint.pk]), follow=True).content.decode()
    assert "HTTP 500" in page and "What to do" in page


def test_try_message_names_an_action_per_failure():
    assert "check the key" in endpoints.try_message(BotError("status", "HTTP 401: no", status=401)).lower() \
        or "refused the key" in endpoints.try_message(BotError("status", "HTTP 401: no", status=401))
    assert "timeout per attempt" in endpoints.try_message(BotError("timeout", "no answer within 1.0 s"))
    assert "/v1" in endpoints.try_message(BotError("status", "HTTP 404: nope", status=404))


@pytest.mark.django_db
def test_a_nul_in_a_chat_message_is_a_400_naming_the_field(client, user, local_bot, loopback_allowed):
    bot_system("nul-bot", local_bot.url("rule"), owner=user)
    study = chat_study(user, ["nul-bot"])
    assignment = started_assignment(study)
    chatting.chat_open(assignment=assignment, item_id=study.items.get().pk)
    sent = client.post(reverse("chat:turn", args=[assignment.token, 0]), {
        "form_token": form_tokens.form_token(assignment.token, "chat"), "client_id": "n1", "text": "hi\x00there"},
        HTTP_ACCEPT="application/json")
    assert sent.status_code == 400 and sent.json()["field"] == "text"
    assert not ChatTurn.objects.exists() and local_bot.requests == []


def test_a_name_server_that_does_not_answer_counts_against_the_deadline():
    release = threading.Event()

    def stuck(host, port, type=0):  # noqa: A002 - getaddrinfo's keyword
        release.wait(30)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("8.8.8.8", port))]

    endpoint = Endpoint(protocol="concord", url="http://bot.stuck.test/chat", timeout=5, retries=3)
    started = time.monotonic()
    try:
        with pytest.raises(BotError) as caught:
            bot_reply(endpoint, TURNS, deadline_seconds=0.6, resolver=stuck)
    finally:
        release.set()
    assert caught.value.kind == "timeout" and time.monotonic() - started < 2.0
