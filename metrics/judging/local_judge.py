"""A rule-based OpenAI-compatible judge server on loopback, for the tests and the demo (standard
library only, no Django). ``POST /<behaviour>/v1/chat/completions``; the behaviour is the first path
segment:

- ``good``: answers ``<a reason>\\nScore: N`` where N is ``rule_score`` of the prompt (a label prompt gets
  ``Label: <first label>`` unless the response mentions a later one); ``usage`` counts words as tokens;
- ``logprobs``: as ``good``, with OpenAI ``logprobs.content`` whose score token has ``top_logprobs`` over
  the scale (``PROBABILITIES``: .6 on N, .2 on each neighbour within the scale, renormalised);
- ``malformed``: ``I would say it is fine, maybe a four.`` (no answer form);
- ``refuse``: ``I'm sorry, but I can't help with rating this.``;
- ``out_of_scale``: ``Score: 9``;
- ``slow``: ``good`` after ``slow_seconds``;
- ``ratelimit``: HTTP 429 with ``Retry-After: 0.05`` on the first request of each prompt, then ``good``;
- ``flaky``: HTTP 503 on the first request of each prompt, then ``good``;
- ``garbage``: HTTP 200 with bytes that are not JSON;
- ``surrogate``: ``good`` whose content holds a lone surrogate (``\\ud800``, valid JSON, not storable text);
- ``deep``: HTTP 200 with JSON arrays nested 100,000 deep;
- ``drip``: ``good``, its body sent one byte every ``drip_seconds``;
- ``mixed``: per prompt, the behaviour its text names as ``judge:<behaviour>`` (``good`` where none).

Run on its own: ``python -m metrics.judging.local_judge --port 8766`` (prints ``listening on PORT``)."""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOST = "127.0.0.1"
BEHAVIOURS = ("good", "logprobs", "malformed", "refuse", "out_of_scale", "slow", "ratelimit", "flaky", "garbage",
              "surrogate", "deep", "drip", "mixed")
MARKER = re.compile(r"judge:([a-z_]+)")
SCALE = re.compile(r"Score on a scale of whole numbers from (-?\d+) to (-?\d+)")
LABELS = re.compile(r"Answer with exactly one of these labels: (.+)\.$", re.M)
RESPONSE = re.compile(r"\nResponse:\n(.*?)\n\nEvaluation form", re.S)
DIALOGUE = re.compile(r"\nDialogue:\n(.*?)\n\nEvaluation form", re.S)


def rule_score(prompt: str) -> int | str:
    """The rule judge's answer: on a scale low..high, low + (words in the judged text // 5), capped at
    high (longer = better, a crude but predictable rule); for labels, the first label the text names,
    else the first label."""
    judged = RESPONSE.search(prompt) or DIALOGUE.search(prompt)
    text = judged.group(1) if judged else ""
    if labels := LABELS.search(prompt):
        options = re.findall(r'"([^"]*)"', labels.group(1))
        named = [o for o in options if o.lower() in text.lower()]
        return named[0] if named else options[0]
    scale = SCALE.search(prompt)
    low, high = (int(scale.group(1)), int(scale.group(2))) if scale else (1, 5)
    return min(high, low + len(text.split()) // 5)


def _probabilities(point: int, low: int, high: int) -> dict[int, float]:
    raw = {point: 0.6, **{p: 0.2 for p in (point - 1, point + 1) if low <= p <= high}}
    total = sum(raw.values())
    return {p: v / total for p, v in raw.items()}


class LocalJudge:
    """The server on a free port; ``requests`` keeps (behaviour, headers, body) of every request."""

    def __init__(self, *, port: int = 0, slow_seconds: float = 3.0, drip_seconds: float = 0.5):
        self.slow_seconds, self.drip_seconds = slow_seconds, drip_seconds
        self.requests: list[tuple[str, dict, dict]] = []
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):  # noqa: N802 - the standard library's name
                behaviour = self.path.strip("/").split("/")[0]
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                with judge.lock:
                    judge.requests.append((behaviour, dict(self.headers), body))
                if behaviour == "mixed":
                    named = MARKER.search(json.dumps(body.get("messages")))
                    behaviour = named.group(1) if named and named.group(1) in BEHAVIOURS else "good"
                status, headers, payload = judge.answer(behaviour, body)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if behaviour != "drip":
                    self.wfile.write(payload)
                    return
                for n in range(len(payload)):  # until the client hangs up
                    try:
                        self.wfile.write(payload[n:n + 1])
                        self.wfile.flush()
                    except OSError:
                        return
                    time.sleep(judge.drip_seconds)

        self.server = ThreadingHTTPServer((HOST, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, behaviour: str = "good") -> str:
        return f"http://{HOST}:{self.port}/{behaviour}/v1"

    def __enter__(self) -> LocalJudge:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _first_time(self, behaviour: str, body: dict) -> bool:
        key = behaviour + hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
        with self.lock:
            self.seen[key] = self.seen.get(key, 0) + 1
            return self.seen[key] == 1

    def answer(self, behaviour: str, body: dict) -> tuple[int, dict, bytes]:
        json_type = {"Content-Type": "application/json"}
        if behaviour not in BEHAVIOURS:
            return 404, json_type, b'{"error": "no such judge"}'
        if behaviour == "garbage":
            return 200, json_type, b"\x00not json"
        if behaviour == "deep":
            return 200, json_type, b"[" * 100_000 + b"]" * 100_000
        if behaviour == "ratelimit" and self._first_time(behaviour, body):
            return 429, {**json_type, "Retry-After": "0.05"}, b'{"error": {"message": "rate limited"}}'
        if behaviour == "flaky" and self._first_time(behaviour, body):
            return 503, json_type, b'{"error": "overloaded"}'
        if behaviour == "slow":
            time.sleep(self.slow_seconds)
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [] if isinstance(m, dict))
        verdict = rule_score(prompt)
        form = f"Label: {verdict}" if isinstance(verdict, str) else f"Score: {verdict}"
        text = {"malformed": "I would say it is fine, maybe a four.",
                "refuse": "I'm sorry, but I can't help with rating this.",
                "out_of_scale": "The response is fine.\nScore: 9",
                "surrogate": f"The response \ud800 was judged by rule.\n{form}"}.get(
            behaviour, f"The response was judged by rule.\n{form}")
        choice: dict = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        if behaviour == "logprobs" and body.get("logprobs") and isinstance(verdict, int):
            scale = SCALE.search(prompt)
            low, high = (int(scale.group(1)), int(scale.group(2))) if scale else (1, 5)
            top = [{"token": str(p), "logprob": math.log(v)} for p, v in _probabilities(verdict, low, high).items()]
            choice["logprobs"] = {"content": [
                {"token": "Score", "logprob": -0.01, "top_logprobs": []},
                {"token": ":", "logprob": -0.001, "top_logprobs": []},
                {"token": " " + str(verdict), "logprob": math.log(0.6), "top_logprobs": top}]}
        words = len(prompt.split())
        payload = {"id": "judge-1", "object": "chat.completion", "model": body.get("model", ""), "choices": [choice],
                   "usage": {"prompt_tokens": words, "completion_tokens": len(text.split()),
                             "total_tokens": words + len(text.split())}}
        return 200, json_type, json.dumps(payload).encode()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A rule-based OpenAI-compatible judge on 127.0.0.1")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--slow-seconds", type=float, default=3.0)
    parser.add_argument("--drip-seconds", type=float, default=0.5)
    args = parser.parse_args(argv)
    judge = LocalJudge(port=args.port, slow_seconds=args.slow_seconds, drip_seconds=args.drip_seconds)
    print(f"listening on {judge.port}", flush=True)
    try:
        judge.server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        judge.server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
