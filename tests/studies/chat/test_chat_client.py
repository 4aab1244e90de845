"""The bot client against a real bot server on loopback: both protocols, the failing bots (slow,
erroring, garbage, flaky), redirects, keys, and the SSRF guard (refused private and metadata addresses,
redirect hops checked, the checked address is the one connected to)."""
import ipaddress
import socket
import time

import pytest

from studies.chat.addresses import AddressRefused, address_problem, networks_parse, resolve, url_parse
from studies.chat.client import BotError, Endpoint, bot_reply, request_body
from studies.chat.local_bot import rule_reply
from tests.studies.chat.conftest import LOOPBACK

TURNS = [{"speaker": "user", "text": "Hello there"}]


@pytest.mark.parametrize("protocol", ["concord", "openai"])
def test_chat_rule_bot_answers_both_protocols_with_the_whole_dialogue(local_bot, protocol):
    turns = [{"speaker": "user", "text": "hi"}, {"speaker": "system", "text": "Hello!"},
             {"speaker": "user", "text": "I like long walks by the sea."}]
    endpoint = Endpoint(protocol=protocol, url=local_bot.url("rule", protocol), model="rule-1", key="sk-test-123")
    reply = bot_reply(endpoint, turns, conversation_id="c-1", allowed=LOOPBACK)
    assert reply.text == "What do you like most about long walks by the sea?" == rule_reply(turns)
    assert reply.attempts == 1 and 0 <= reply.seconds < 5
    asked = local_bot.requests[-1]
    assert asked["headers"]["Authorization"] == "Bearer sk-test-123"
    assert asked["headers"]["Host"] == f"127.0.0.1:{local_bot.port}"
    if protocol == "openai":
        assert asked["path"] == "/rule/v1/chat/completions"
        assert asked["body"] == {"model": "rule-1", "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "I like long walks by the sea."}]}
    else:
        assert asked["body"] == {"protocol": "concord-chat/1", "model": "rule-1", "conversation_id": "c-1",
                                 "turns": turns}


def test_chat_openai_base_url_gets_the_completions_path():
    assert Endpoint(protocol="openai", url="https://api.example.org/v1").request_url == \
        "https://api.example.org/v1/chat/completions"
    assert Endpoint(protocol="openai", url="https://x.org/v1/chat/completions/").request_url == \
        "https://x.org/v1/chat/completions/"
    assert Endpoint(protocol="concord", url="https://x.org/bot").request_url == "https://x.org/bot"
    assert "key" not in repr(Endpoint(protocol="concord", url="https://x.org/", key="sk-secret")).replace("key=", "")


def test_chat_slow_bot_times_out_within_the_deadline_after_retrying(local_bot):
    endpoint = Endpoint(protocol="concord", url=local_bot.url("slow"), timeout=0.4, retries=1)
    started = time.monotonic()
    with pytest.raises(BotError) as caught:
        bot_reply(endpoint, TURNS, allowed=LOOPBACK, deadline_seconds=5)
    elapsed = time.monotonic() - started
    assert caught.value.kind == "timeout" and caught.value.attempts == 2
    assert caught.value.rater_message == "The system did not answer in time."
    assert elapsed < 2.5  # two 0.4 s attempts and a 0.25 s pause, not the bot's 3 s


def test_chat_deadline_bounds_the_whole_call_whatever_the_retries(local_bot):
    endpoint = Endpoint(protocol="concord", url=local_bot.url("slow"), timeout=5, retries=5)
    started = time.monotonic()
    with pytest.raises(BotError) as caught:
        bot_reply(endpoint, TURNS, allowed=LOOPBACK, deadline_seconds=0.8)
    assert caught.value.kind == "timeout"
    assert time.monotonic() - started < 1.6


def test_chat_erroring_bot_is_retried_then_reported_with_its_status(local_bot):
    endpoint = Endpoint(protocol="openai", url=local_bot.url("error", "openai"), retries=2)
    with pytest.raises(BotError) as caught:
        bot_reply(endpoint, TURNS, allowed=LOOPBACK)
    error = caught.value
    assert (error.kind, error.status, error.attempts) == ("status", 500, 3)
    assert "HTTP 500" in str(error) and error.rater_message == "The system answered with an error."
    assert sum(r["bot"] == "error" for r in local_bot.requests) == 3


def test_chat_garbage_answer_is_a_reply_error(local_bot):
    endpoint = Endpoint(protocol="concord", url=local_bot.url("garbage"), retries=0)
    with pytest.raises(BotError) as caught:
        bot_reply(endpoint, TURNS, allowed=LOOPBACK)
    assert caught.value.kind == "reply" and "not JSON" in str(caught.value)


@pytest.mark.parametrize(("protocol", "payload", "problem"), [
    ("concord", {"answer": "hi"}, '"reply"'),
    ("concord", {"reply": 42}, "int, not text"),
    ("concord", {"reply": "   "}, "empty"),
    ("openai", {"choices": []}, "choices[0]"),
    ("openai", {"choices": [{"message": {"content": None}}]}, "NoneType"),
])
def test_chat_wrong_shaped_answers_name_what_is_missing(protocol, payload, problem):
    from studies.chat.client import reply_text

    with pytest.raises(BotError) as caught:
        reply_text(protocol, payload)
    assert problem in str(caught.value)


def test_chat_flaky_bot_succeeds_on_the_retry(local_bot):
    endpoint = Endpoint(protocol="concord", url=local_bot.url("flaky"), retries=2)
    reply = bot_reply(endpoint, TURNS, allowed=LOOPBACK)
    assert reply.attempts == 2 and reply.text == "Hello! What would you like to talk about today?"


def test_chat_loopback_is_refused_unless_the_deployment_allows_it(local_bot):
    endpoint = Endpoint(protocol="concord", url=local_bot.url("rule"))
    with pytest.raises(BotError) as caught:
        bot_reply(endpoint, TURNS)  # nothing allowed
    assert caught.value.kind == "address" and "loopback" in str(caught.value)
    assert caught.value.attempts == 1 and local_bot.requests == []  # refused before any connection


@pytest.mark.parametrize(("address", "words"), [
    ("169.254.169.254", "link-local"), ("10.0.0.7", "private"), ("192.168.1.1", "private"),
    ("172.16.5.4", "private"), ("100.64.0.1", "not a public"), ("0.0.0.0", "unspecified"),
    ("127.0.0.2", "loopback"), ("::1", "loopback"), ("fe80::1", "link-local"), ("fd12::1", "private"),
    ("::ffff:169.254.169.254", "carries the IPv4 address 169.254.169.254"),
    ("64:ff9b::a00:1", "carries the IPv4 address 10.0.0.1"), ("2002:a9fe:a9fe::", "carries the IPv4 address 169.254.169.254"),
    ("224.0.0.1", "multicast"),
])
def test_chat_private_and_metadata_addresses_are_refused(address, words):
    problem = address_problem(ipaddress.ip_address(address), LOOPBACK)
    assert problem is not None and words in problem


def test_chat_public_and_allowed_addresses_pass():
    assert address_problem(ipaddress.ip_address("8.8.8.8")) is None
    assert address_problem(ipaddress.ip_address("2606:4700::1111")) is None
    assert address_problem(ipaddress.ip_address("127.0.0.1"), LOOPBACK) is None
    assert address_problem(ipaddress.ip_address("::ffff:127.0.0.1"), LOOPBACK) is None  # judged as what it carries
    assert address_problem(ipaddress.ip_address("10.1.2.3"), networks_parse(["10.0.0.0/8"])) is None


def test_chat_metadata_endpoint_is_refused_before_connecting():
    endpoint = Endpoint(protocol="openai", url="http://169.254.169.254/latest/meta-data/")
    with pytest.raises(BotError) as caught:
        bot_reply(endpoint, TURNS, allowed=LOOPBACK)
    assert caught.value.kind == "address" and "169.254.169.254" in str(caught.value)


@pytest.mark.parametrize(("url", "words"), [
    ("ftp://example.org/bot", "http:// or https://"), ("http://user:pw@example.org/", "user name or password"),
    ("http:///nohost", "no host"), ("http://example.org:99999/", "port"), ("", "enter"),
    ("http://exa mple.org/", "spaces"), ("http://example.org/" + "a" * 600, "longer than"),
])
def test_chat_bad_urls_are_named(url, words):
    with pytest.raises(AddressRefused) as caught:
        url_parse(url)
    assert words in str(caught.value)


def test_chat_redirect_to_a_refused_address_is_not_followed(local_bot):
    # 127.0.0.2 is loopback too (and would answer on Linux) but outside the allowed 127.0.0.1/32.
    hop = f"http://127.0.0.2:{local_bot.port}/rule/chat"
    endpoint = Endpoint(protocol="concord", url=f"{local_bot.url('redirect')}?to={hop}", key="sk-keep")
    with pytest.raises(BotError) as caught:
        bot_reply(endpoint, TURNS, allowed=LOOPBACK)
    assert caught.value.kind == "redirect" and "127.0.0.2" in str(caught.value)
    assert [r["bot"] for r in local_bot.requests] == ["redirect"]  # the second hop never happened
    metadata = Endpoint(protocol="concord", url=f"{local_bot.url('redirect')}?to=http://169.254.169.254/")
    with pytest.raises(BotError) as caught:
        bot_reply(metadata, TURNS, allowed=LOOPBACK)
    assert caught.value.kind == "redirect" and "link-local" in str(caught.value)


def test_chat_allowed_redirect_is_followed_and_keeps_the_key_on_the_same_origin(local_bot):
    endpoint = Endpoint(protocol="concord", url=f"{local_bot.url('redirect')}?to=/rule/chat", key="sk-same")
    assert bot_reply(endpoint, TURNS, allowed=LOOPBACK).text.startswith("Hello!")
    assert [r["bot"] for r in local_bot.requests] == ["redirect", "rule"]
    assert local_bot.requests[1]["headers"]["Authorization"] == "Bearer sk-same"
    assert local_bot.requests[1]["body"]["turns"] == TURNS  # the POST body goes on with the hop


def test_chat_key_is_dropped_on_a_redirect_to_another_origin(local_bot):
    with_name = f"http://localhost:{local_bot.port}/rule/chat"  # another host name: another origin

    def resolver(host, port, type=0):  # noqa: A002 - getaddrinfo's keyword
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    endpoint = Endpoint(protocol="concord", url=f"{local_bot.url('redirect')}?to={with_name}", key="sk-private")
    bot_reply(endpoint, TURNS, allowed=LOOPBACK, resolver=resolver)
    assert "Authorization" not in local_bot.requests[-1]["headers"]
    assert local_bot.requests[-1]["headers"]["Host"] == f"localhost:{local_bot.port}"


def test_chat_connects_to_the_address_it_checked_not_a_second_dns_answer(local_bot):
    """DNS rebinding: a name answers a permitted address when checked and a forbidden one afterwards.
    The client asks once and connects to the address it checked, sending the name in the Host header."""
    answers = iter(["127.0.0.1", "10.9.9.9", "10.9.9.9"])
    asked = []

    def rebinding(host, port, type=0):  # noqa: A002 - getaddrinfo's keyword
        asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    endpoint = Endpoint(protocol="concord", url=f"http://bot.rebind.test:{local_bot.port}/rule/chat")
    assert bot_reply(endpoint, TURNS, allowed=LOOPBACK, resolver=rebinding).text.startswith("Hello!")
    assert asked == ["bot.rebind.test"]  # resolved once
    assert local_bot.requests[-1]["headers"]["Host"] == f"bot.rebind.test:{local_bot.port}"


def test_chat_a_name_with_any_private_answer_is_refused():
    def mixed(host, port, type=0):  # noqa: A002
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("8.8.8.8", port)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.1", port))]

    with pytest.raises(AddressRefused) as caught:
        resolve("mixed.test", 80, resolver=mixed)
    assert "mixed.test does not resolve to an address endpoints may use" in str(caught.value)
    assert "10.0.0.1" not in str(caught.value)  # no DNS oracle
    assert resolve("8.8.8.8", 80) == "8.8.8.8"  # a literal needs no lookup


def test_chat_request_body_never_carries_the_key():
    endpoint = Endpoint(protocol="openai", url="https://x.org/v1", model="m", key="sk-never-in-body")
    assert "sk-never" not in str(request_body(endpoint, TURNS, "c"))


def test_chat_refused_connection_is_reported_as_refused_not_as_slow():
    """urllib3 makes a refused connection a kind of connect timeout; the rater and the researcher
    are told the system could not be reached, not that it did not answer in time."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = Endpoint(protocol="concord", url=f"http://127.0.0.1:{port}/bot", retries=0)
    with pytest.raises(BotError) as caught:
        bot_reply(endpoint, TURNS, allowed=LOOPBACK)
    assert caught.value.kind == "connection" and "refused" in str(caught.value).lower()
    assert caught.value.rater_message == "The system could not be reached."
