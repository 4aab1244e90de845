"""An LLM judge: a chat model over the researcher's OpenAI-compatible endpoint rates each response (turn
level) or whole dialogue on one criterion of their study, in G-Eval's form (Liu et al. 2023; the MT-Bench
judge of Zheng et al. 2023 and Prometheus are judges of the same kind). The prompt, parsing and calls are
``metrics.judging``; the judge's endpoint, criterion and limits are its model's ``config``
(``metrics.scoring.judges.judge_model_create``).

A refusal, an unparseable answer or a failed call is *missing* (None): no score is stored for it and the
run's log counts each reason, never a 0. Temperature 0; with ``logprobs`` the score is the
probability-weighted expectation over the scale (G-Eval eq. 1). Tokens and cost are counted per run;
cached answers cost nothing again."""
from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

from metrics.implementations.base import MetricImplementation, ScoringInput


@dataclass
class LLMJudge(MetricImplementation):
    key: ClassVar[str] = "llm_judge"
    name: ClassVar[str] = "LLM judge"
    level: ClassVar[str] = "turn"
    kind: ClassVar[str] = "judge"
    description: ClassVar[str] = ("A chat model over your OpenAI-compatible endpoint rates each response or dialogue "
                                  "on one of your study's criteria (G-Eval-style prompt, temperature 0).")

    missing: Counter = field(default_factory=Counter)
    stop: threading.Event = field(default_factory=threading.Event)  # set by the run's lease once it is cancelled
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: int = 0

    @property
    def scores_conversations(self) -> bool:
        return self.config.get("level") == "dialogue"

    @property
    def batch_size(self) -> int:
        return max(4, 2 * int(self.config.get("concurrency", 4)))

    def _judge(self, inputs) -> list[float | None]:
        from metrics.judging.prompt import JudgeCriterion
        from metrics.judging.run import judge_all
        from metrics.judging.services import JudgeCache, judge_endpoint_for

        endpoint, allowed = judge_endpoint_for(self.config)
        results = judge_all(endpoint, JudgeCriterion.from_dict(self.config["criterion"]), inputs, cache=JudgeCache(),
                            logprobs=bool(self.config.get("logprobs")), allowed=allowed, stop=self.stop.is_set)
        for result in results:
            self.prompt_tokens += result.prompt_tokens
            self.completion_tokens += result.completion_tokens
            self.cached += result.cached
            if result.judgment.value is None:  # a failed call by its reason (timeout, not_json, too_deep, ...)
                self.missing[result.reason if result.judgment.missing == "error" and result.reason
                             else result.judgment.missing] += 1
        return [r.judgment.value for r in results]

    def score(self, batch: list[ScoringInput]) -> list[float | None]:  # type: ignore[override]
        from metrics.judging.run import JudgeInput

        return self._judge([JudgeInput(tuple(item.turns), item.response or "") for item in batch])

    def score_dialogues(self, dialogues: list[list[str]], speakers=None) -> list[float | None]:  # type: ignore[override]
        from metrics.judging.run import JudgeInput

        speakers = speakers or [None] * len(dialogues)
        return self._judge([JudgeInput(tuple(d), None, tuple(s) if s else None)
                            for d, s in zip(dialogues, speakers, strict=True)])

    def run_notes(self) -> str:
        from metrics.judging.services import cost_of

        cost = cost_of(self.config, self.prompt_tokens, self.completion_tokens)
        parts = [f"; judge: {self.prompt_tokens} prompt + {self.completion_tokens} completion tokens"
                 f" (cost {cost:.4f}), {self.cached} answer(s) from the cache"]
        if self.missing:
            parts.append("; missing, no score stored: " + ", ".join(f"{k} {v}" for k, v in sorted(self.missing.items())))
        return "".join(parts)
