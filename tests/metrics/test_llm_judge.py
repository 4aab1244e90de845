"""The LLM judge (metrics.judging) against a real OpenAI-compatible judge server *process*
(``python -m metrics.judging.local_judge``) answering well, with log-probabilities, malformed, with a
refusal, slowly, with 429 and 503, and with bytes that are not JSON: prompts from the criterion, strict
parsing (missing, never 0), G-Eval's probability-weighted score, retries and the deadline, the cache,
concurrency and the rate limit, and the SSRF guard."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from metrics.judging.client import JudgeEndpoint, JudgeError, RateLimit, complete, complete_many
from metrics.judging.local_judge import rule_score
from metrics.judging.parse import judgment_parse
from metrics.judging.prompt import JudgeCriterion, judge_messages, prompt_text
from metrics.judging.run import JudgeInput, judge_all
from studies.chat.addresses import networks_parse

ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = networks_parse(["127.0.0.1/32"])
COHERENCE = JudgeCriterion(name="coherence", question="Is the response coherent with the conversation?",
                           help="It follows from what was said.", points=(1, 2, 3, 4, 5),
                           low_label="incoherent", high_label="fully coherent")
TOPIC = JudgeCriterion(name="topic", question="What is the response about?", labels=("weather", "food", "other"))


@pytest.fixture(scope="module")
def judge_server():
    """The judge server as its own process on a free port; yields the base URL, killed at the end."""
    process = subprocess.Popen([sys.executable, "-m", "metrics.judging.local_judge", "--port", "0",
                                "--slow-seconds", "3"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    assert line.startswith("listening on "), line
    yield f"http://127.0.0.1:{int(line.split()[-1])}"
    process.kill()
    process.wait()


def endpoint(base: str, behaviour: str = "good", **changes) -> JudgeEndpoint:
    return JudgeEndpoint(url=f"{base}/{behaviour}/v1", model="rule-judge", **changes)


def ask(base: str, behaviour: str = "good", criterion=COHERENCE, **options):
    messages = judge_messages(criterion, turns=["Hi, how are you?", "Fine. Any plans today?"],
                              response="I will walk to the market and buy fresh bread and some cheese for lunch.")
    return complete(endpoint(base, behaviour, retries=options.pop("retries", 4)), messages, allowed=LOOPBACK, **options)


# --- the prompt ---------------------------------------------------------------------------------------

def test_llm_judge_prompt_carries_the_criterion_scale_and_steps():
    messages = judge_messages(COHERENCE, turns=["Hello", "Hi there"], response="How are you?")
    user = messages[-1]["content"]
    assert messages[0]["role"] == "system"
    assert "coherence: Is the response coherent with the conversation? It follows from what was said." in user
    assert "from 1 to 5 (1 = incoherent; 5 = fully coherent)" in user
    assert "Evaluation steps:" in user and "A: Hello\nB: Hi there" in user and "\nResponse:\nHow are you?" in user
    assert user.rstrip().endswith("Score: <number>")


def test_llm_judge_prompt_for_a_dialogue_and_for_labels():
    dialogue = judge_messages(TOPIC, turns=["Is it raining?", "Yes, all day."], speakers=["user", "bot"])[-1]["content"]
    assert "Dialogue:\nuser: Is it raining?\nbot: Yes, all day." in dialogue and "Response:" not in dialogue
    assert 'one of these labels: "weather", "food", "other".' in dialogue and dialogue.rstrip().endswith("Label: <label>")


def test_llm_judge_prompt_is_deterministic_and_refuses_a_criterion_without_question():
    one = prompt_text(judge_messages(COHERENCE, turns=["a"], response="b"))
    assert one == prompt_text(judge_messages(COHERENCE, turns=["a"], response="b"))
    assert one != prompt_text(judge_messages(COHERENCE, turns=["a"], response="c"))
    with pytest.raises(ValueError, match="question"):
        JudgeCriterion(name="x", question="  ")
    with pytest.raises(ValueError, match="labels"):
        JudgeCriterion(name="x", question="q", labels=("Yes", "yes"))
    assert JudgeCriterion.from_dict(COHERENCE.as_dict()) == COHERENCE


# --- strict parsing -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "value"), [
    ("Reasoning.\nScore: 4", 4.0), ("**Score:** 2", 2.0), ("score = 5", 5.0), ("Score: 3.0", 3.0)])
def test_llm_judge_parses_the_answer_form(text, value):
    assert judgment_parse(text, COHERENCE).value == value


@pytest.mark.parametrize(("text", "missing"), [
    ("I would say it is fine, maybe a four.", "unparseable"),
    ("I'm sorry, but I can't help with rating this.", "refused"),
    ("", "empty"), ("Score: 9", "out_of_scale"), ("Score: 3.5", "unparseable"),
    ("Score: 4\nThank you for asking!", "unparseable"), ("Label: food", "unparseable")])
def test_llm_judge_missing_never_zero(text, missing):
    got = judgment_parse(text, COHERENCE)
    assert got.value is None and got.missing == missing


def test_llm_judge_labels_case_insensitive_and_unknown_is_missing():
    assert judgment_parse("Label: Weather", TOPIC).label == "weather"
    assert judgment_parse("Label: Weather", TOPIC).value == 0.0
    assert judgment_parse("Label: sport", TOPIC).missing == "out_of_scale"
    assert judgment_parse("Score: 2", TOPIC).missing == "unparseable"


def test_llm_judge_probability_weighted_score_is_g_evals_expectation():
    top = [{"token": "3", "logprob": math.log(0.5)}, {"token": " 4", "logprob": math.log(0.3)},
           {"token": "2", "logprob": math.log(0.1)}, {"token": "x", "logprob": math.log(0.1)}]
    logprobs = {"content": [{"token": "Score", "logprob": 0.0}, {"token": " 3", "logprob": math.log(0.5), "top_logprobs": top}]}
    got = judgment_parse("Score: 3", COHERENCE, logprobs)
    assert got.weighted and got.stated == 3.0
    assert got.value == pytest.approx((3 * 0.5 + 4 * 0.3 + 2 * 0.1) / 0.9, abs=1e-12)
    assert got.probabilities == pytest.approx({"2": 0.1 / 0.9, "3": 0.5 / 0.9, "4": 0.3 / 0.9})
    # no log-probabilities, or none at the score's token: the stated point
    assert judgment_parse("Score: 3", COHERENCE, {"content": [{"token": "7", "logprob": 0.0}]}).weighted is False
    assert judgment_parse("Score: 3", COHERENCE, None).value == 3.0


# --- the client against the real server ----------------------------------------------------------------

def test_llm_judge_client_good_answer_tokens_and_request(judge_server):
    got = ask(judge_server)
    assert got.attempts == 1 and got.prompt_tokens > 50 and got.completion_tokens > 0
    expected = rule_score("\nResponse:\nI will walk to the market and buy fresh bread and some cheese for lunch.\n\nEvaluation form")
    assert judgment_parse(got.text, COHERENCE).value == float(expected) == 4.0


def test_llm_judge_client_sends_temperature_zero_and_the_key(judge_server):
    from metrics.judging import local_judge

    with local_judge.LocalJudge() as judge:
        complete(JudgeEndpoint(url=judge.url(), model="m", key="sk-secret"),
                 judge_messages(COHERENCE, turns=["a"], response="b"), allowed=LOOPBACK)
        (_, headers, body), = judge.requests
    assert body["temperature"] == 0.0 and body["model"] == "m" and "logprobs" not in body
    assert headers["Authorization"] == "Bearer sk-secret"


def test_llm_judge_client_retries_429_honouring_retry_after(judge_server):
    pauses = []
    got = ask(judge_server, "ratelimit", sleep=pauses.append)
    assert got.attempts == 2 and pauses == [0.05]


def test_llm_judge_client_retries_5xx_with_backoff(judge_server):
    pauses = []
    got = ask(judge_server, "flaky", sleep=pauses.append)
    assert got.attempts == 2 and pauses == [0.5]


def test_llm_judge_client_slow_judge_stops_at_the_deadline(judge_server):
    with pytest.raises(JudgeError) as caught:
        ask(judge_server, "slow", deadline_seconds=0.5)
    assert caught.value.kind == "timeout"


@pytest.mark.parametrize("part", ["body", "headers"])
def test_llm_judge_client_drip_feeding_judge_is_cut_at_the_whole_call_deadline(part):
    """The judge shares the chat client's POST (``studies.chat.http_post``): a server that sends one byte every
    half second, each within the 1 s read timeout, is cut by the watchdog at the call's 2 s deadline (the
    judge's own loop saw the deadline only between body reads, so dripped headers ran about 40 s)."""
    import time

    from studies.chat.local_bot import LocalBot

    with LocalBot(drip_seconds=0.5) as bot:
        url = bot.url("drip", protocol="openai") + ("?part=headers" if part == "headers" else "")
        started = time.monotonic()
        with pytest.raises(JudgeError) as caught:
            complete(JudgeEndpoint(url=url, model="m", timeout=1.0, retries=2), [{"role": "user", "content": "hi"}],
                     allowed=LOOPBACK, deadline_seconds=2.0)
        elapsed = time.monotonic() - started
    assert caught.value.kind == "timeout" and elapsed < 3.5


def test_llm_judge_client_garbage_is_a_reply_error_not_retried(judge_server):
    with pytest.raises(JudgeError) as caught:
        ask(judge_server, "garbage")
    assert caught.value.kind == "reply" and caught.value.attempts == 1


def test_llm_judge_client_gives_up_after_its_retries(judge_server):
    with pytest.raises(JudgeError) as caught:
        ask(judge_server, "nosuchjudge", retries=2)
    assert caught.value.kind == "status" and caught.value.status == 404 and caught.value.attempts == 1


def test_llm_judge_endpoint_address_refused_sends_nothing():
    from metrics.judging import local_judge

    with local_judge.LocalJudge() as judge:
        with pytest.raises(JudgeError) as caught:  # loopback is not allowed unless the deployment says so
            complete(JudgeEndpoint(url=judge.url(), model="m", key="k"), judge_messages(COHERENCE, turns=["a"], response="b"))
        assert caught.value.kind == "address" and judge.requests == []
        for url in ("http://10.0.0.1/v1", "http://169.254.169.254/v1", "http://[::1]:9/v1"):
            with pytest.raises(JudgeError, match="refused"):
                complete(JudgeEndpoint(url=url, model="m"), [{"role": "user", "content": "x"}])


def test_llm_judge_rate_limit_spaces_the_starts():
    now = [100.0]
    waits = []
    limit = RateLimit(120, clock=lambda: now[0], sleep=waits.append)
    for _ in range(3):
        limit.wait()
    assert waits == [0.5, 1.0]  # 120 a minute: one every 0.5 s from the first
    assert RateLimit(0, clock=lambda: 0.0, sleep=waits.append).interval == 0.0


def test_llm_judge_many_at_once_in_order(judge_server):
    texts = ["Yes.", "I think that is a lovely idea for the weekend, really.",
             "Sure, we could go to the market after the rain stops and buy some bread there."]
    prompts = [judge_messages(COHERENCE, turns=["Plans?"], response=t) for t in texts]
    done = []
    got = complete_many(endpoint(judge_server, concurrency=3), prompts, on_done=done.append, allowed=LOOPBACK)
    assert [judgment_parse(c.text, COHERENCE).value for c in got] == [1.0, 3.0, 4.0]
    assert sorted(done) == [1, 2, 3]


# --- judging many: cache, missing, log-probabilities ---------------------------------------------------

def test_llm_judge_all_caches_and_records_missing(judge_server):
    inputs = [JudgeInput(("Plans?",), "Yes."), JudgeInput(("Plans?",), "We could walk along the river and then eat.")]
    cache: dict = {}
    first = judge_all(endpoint(judge_server), COHERENCE, inputs, cache=cache, allowed=LOOPBACK)
    assert [r.judgment.value for r in first] == [1.0, 2.0] and not any(r.cached for r in first)
    assert len(cache) == 2 and sum(r.prompt_tokens for r in first) > 0
    again = judge_all(endpoint(judge_server), COHERENCE, inputs, cache=cache, allowed=LOOPBACK)
    assert [r.judgment.value for r in again] == [1.0, 2.0] and all(r.cached for r in again)
    assert sum(r.prompt_tokens for r in again) == 0  # nothing was paid for twice
    refused = judge_all(endpoint(judge_server, "refuse"), COHERENCE, inputs[:1], allowed=LOOPBACK)
    assert refused[0].judgment.value is None and refused[0].judgment.missing == "refused"


def test_llm_judge_all_failed_calls_are_missing_and_not_cached(judge_server):
    cache: dict = {}
    got = judge_all(endpoint(judge_server, "garbage"), COHERENCE, [JudgeInput(("a",), "b")], cache=cache,
                    allowed=LOOPBACK)
    assert got[0].judgment.value is None and got[0].judgment.missing == "error" and got[0].error.startswith("reply")
    assert cache == {}


def test_llm_judge_all_probability_weighted_with_logprobs(judge_server):
    inputs = [JudgeInput(("Plans?",), "We could walk along the river and then eat.")]  # rule score 2
    weighted = judge_all(endpoint(judge_server, "logprobs"), COHERENCE, inputs, logprobs=True, allowed=LOOPBACK)[0]
    assert weighted.judgment.weighted and weighted.judgment.stated == 2.0
    assert weighted.judgment.value == pytest.approx(1 * 0.2 + 2 * 0.6 + 3 * 0.2, abs=1e-9)
    plain = judge_all(endpoint(judge_server, "logprobs"), COHERENCE, inputs, allowed=LOOPBACK)[0]
    assert plain.judgment.value == 2.0 and not plain.judgment.weighted


def test_llm_judge_labels_through_the_server(judge_server):
    got = judge_all(endpoint(judge_server), TOPIC, [JudgeInput(("Is it raining?",), "The weather is awful today."),
                                                  JudgeInput(("Lunch?",), "Some food would be good.")], allowed=LOOPBACK)
    assert [(r.judgment.label, r.judgment.value) for r in got] == [("weather", 0.0), ("food", 1.0)]
