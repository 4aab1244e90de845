"""Judging many inputs: prompts built, the cache asked first, the rest sent within the endpoint's limits,
every answer parsed strictly. A cached answer is the raw completion (text, log-probabilities, tokens),
so a change of parsing never needs a new call; the key is (endpoint URL, model, settings, prompt), and
the prompt holds the judged text."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from metrics.judging.client import Completion, JudgeEndpoint, JudgeError, complete_many
from metrics.judging.parse import Judgment, judgment_parse
from metrics.judging.prompt import JudgeCriterion, judge_messages, prompt_text


class JudgeCacheLike(Protocol):
    """What ``judge_all`` asks of a cache: a dict, or ``metrics.judging.services.JudgeCache``."""

    def get(self, key: str, default=None) -> dict | None: ...
    def __getitem__(self, key: str) -> dict: ...
    def __setitem__(self, key: str, value: dict) -> None: ...


@dataclass(frozen=True)
class JudgeInput:
    """A response given its context (``response`` set) or a whole dialogue (``response`` None)."""

    turns: tuple[str, ...]
    response: str | None = None
    speakers: tuple[str, ...] | None = None


@dataclass(frozen=True)
class JudgeResult:
    judgment: Judgment
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    error: str = ""  # the call failed (the judgment is then missing with missing="error")
    reason: str = ""  # why, in a word: the failure's ``JudgeError.reason`` (timeout, not_json, too_deep, ...)


def cache_key(endpoint: JudgeEndpoint, prompt: str, *, logprobs: bool, temperature: float, max_tokens: int) -> str:
    material = json.dumps([endpoint.request_url, endpoint.model, logprobs, temperature, max_tokens, prompt])
    return hashlib.sha256(material.encode()).hexdigest()


def judge_all(endpoint: JudgeEndpoint, criterion: JudgeCriterion, inputs: Sequence[JudgeInput], *,
              cache: JudgeCacheLike | None = None, logprobs: bool = False, temperature: float = 0.0,
              max_tokens: int = 256, on_done: Callable[[int], None] | None = None, **call_options) -> list[JudgeResult]:
    """One JudgeResult per input, in order. Failed calls are missing (``error`` says why) and not cached,
    so a later run asks again; refusals and unparseable answers are cached (asking again at temperature 0
    gives the same answer) and missing."""
    cache = {} if cache is None else cache
    prompts = [judge_messages(criterion, turns=list(i.turns), response=i.response,
                              speakers=list(i.speakers) if i.speakers else None) for i in inputs]
    keys = [cache_key(endpoint, prompt_text(p), logprobs=logprobs, temperature=temperature, max_tokens=max_tokens)
            for p in prompts]
    if hasattr(cache, "preload"):  # a database-backed cache answers the whole batch in one query
        cache.preload(keys)
    todo = [n for n, key in enumerate(keys) if cache.get(key) is None]
    cached_count = len(inputs) - len(todo)
    if on_done and cached_count:
        on_done(cached_count)
    answers = complete_many(endpoint, [prompts[n] for n in todo], logprobs=logprobs, temperature=temperature,
                            max_tokens=max_tokens,
                            on_done=(lambda done: on_done(cached_count + done)) if on_done else None, **call_options)
    fresh: dict[int, Completion | JudgeError] = dict(zip(todo, answers, strict=True))
    results = []
    for n, key in enumerate(keys):
        answer = fresh.get(n)
        if isinstance(answer, JudgeError):
            results.append(JudgeResult(Judgment(None, missing="error"), error=f"{answer.kind}: {answer}",
                                       reason=answer.reason))
            continue
        if answer is not None:
            cache[key] = {"text": answer.text, "logprobs": answer.logprobs, "prompt_tokens": answer.prompt_tokens,
                          "completion_tokens": answer.completion_tokens}
        stored = cache[key]
        results.append(JudgeResult(judgment_parse(stored["text"], criterion, stored.get("logprobs") if logprobs else None),
                                   prompt_tokens=stored.get("prompt_tokens", 0) if answer is not None else 0,
                                   completion_tokens=stored.get("completion_tokens", 0) if answer is not None else 0,
                                   cached=answer is None))
    return results
