"""Chat load beside the rater path: does a slow bot slow the site?

    python benchmarks/chat_load.py --raters 30 --bot-latency 2 --workers 3 [--kills 0] [--seconds 40] [--stagger S]

The server as deployed: a fresh PostgreSQL database (``--database``, dropped and created), migrated;
gunicorn with ``config/gunicorn.py`` (the compose file's server) and ``--workers``, under
``config.settings.production`` (the same environment as benchmarks/http_load.py, plus the loopback bot
allowed); the project's local bot (studies.chat.local_bot, its ``slow`` bot) answering after
``--bot-latency`` seconds, in a process of its own (like a real bot).

Two studies on Mechanical Turk: a Likert study (4 responses x 2 criteria per item, as http_load) and a
Likert chat study. Three phases of ``--seconds`` each on the same server:

1. baseline: ``raters/2`` raters rate Likert items (benchmarks/http_rater.py: each reads its forms from
   the page and rates item after item);
2. with chatters: ``raters/2`` new raters rate the same way while ``raters/2`` chatters each chat as the
   page's script does (POST the message as JSON with its client id, then look at the state when the
   system's replies so far took, then every 0.5 s, until the reply is shown, and send the next message
   at once), then end the chat and rate it. The chatters' first messages are spread over ``--stagger``
   seconds (default one turn: the bot's latency + 0.5 s): real raters do not press "send" in the same
   millisecond, and with a bot of fixed latency chatters who start together stay in lockstep, their turns
   reaching the server in bursts of ``raters/2`` (``--stagger 0`` measures that worst case). ``--kills``
   workers get SIGKILL halfway through; a request whose connection dies is sent again unchanged;
3. the baseline again (new raters): on a shared machine the load from elsewhere drifts, so phase 2 is
   compared with the mean of the baselines around it.

``turn_p95_s``: from sending a message until its reply is on the page. ``rating_p95_s``: a rating
page's time, from the submit until the next item's form is on screen (the item cycle), in phase 2;
``rating_p95_ratio``: that over the mean of phases 1 and 3. ``lost``: acknowledged messages not stored (or stored twice,
or never answered) plus acknowledged ratings not stored with their value (both studies). Prints the
figures as JSON, the last line being the summary object."""
from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from argparse import Namespace
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.http_load import (  # noqa: E402
    Gunicorn,
    children_of,
    concord_build,
    concord_verify,
    free_port,
    mturk_id,
    percentiles,
    recreate_database,
)
from benchmarks.http_rater import RETRYABLE, Deadline, Rater, StartLine, Stats  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LINES = ["Hello!", "I like long walks by the sea.", "I feel a bit tired today.", "What is the weather like?",
         "My name is Sam.", "Do you enjoy music?", "I love cooking pasta.", "Tell me something new."]
POLL_SECONDS = 0.5  # static/concord/chat.js's POLL_MS


class ChatStats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.turn_s: list[float] = []
        self.messages: list[dict] = []  # acknowledged: token, client_id, text
        self.unanswered: list[dict] = []
        self.refusals: Counter = Counter()
        self.rated: list[dict] = []  # acknowledged chat ratings: token, position
        self.errors: list[str] = []
        self.polls = 0

    def add(self, name: str, value) -> None:
        with self.lock:
            getattr(self, name).append(value)


class Chatter:
    """One rater who chats: enters through the MTurk link, consents, chats until ``stop_at`` (as
    static/concord/chat.js does), ends the chat and rates it."""

    def __init__(self, *, index: int, port: int, start_url: str, stats: ChatStats, line: StartLine,
                 deadline: float, delay: float = 0.0) -> None:
        self.index, self.port, self.stats, self.line, self.delay = index, port, stats, line, delay
        self.rater = Rater(index=10_000 + index, host="127.0.0.1", port=port, start_url=start_url, items=1,
                           stats=Stats(), deadline=deadline)
        self.stop_at = deadline

    def json(self, method: str, url: str, fields: dict | None = None, token: str = "") -> tuple[int, dict, dict]:
        body = urlencode(fields).encode() if fields is not None else None
        for attempt in range(12):
            if time.monotonic() > self.rater.deadline + 60:
                raise Deadline("the run's time is up")
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            try:
                headers = {"Accept": "application/json", "Connection": "close"}
                if body is not None:
                    headers |= {"Content-Type": "application/x-www-form-urlencoded", "X-Concord-Form-Token": token}
                connection.request(method, url, body=body, headers=headers)
                response = connection.getresponse()
                raw = response.read()
                if response.status >= 500:
                    raise ConnectionError(f"{response.status}")
                return response.status, json.loads(raw or b"{}"), dict(response.headers)
            except (*RETRYABLE, ValueError):
                time.sleep(min(0.1 * 2 ** attempt, 2.0))  # a killed worker: send the same request again
            finally:
                connection.close()
        raise ConnectionError(f"{method} {url}: no answer")

    def run(self) -> None:
        try:
            self._run()
        except Exception as error:  # noqa: BLE001 - reported, never raised from a thread
            self.stats.add("errors", f"chatter {self.index}: {type(error).__name__}: {error}")
        finally:
            self.line.arrive(self.rater)

    def _run(self) -> None:
        r = self.rater
        page = r.follow(r.request("GET", r.start_url))
        for _ in range(5):
            if 'id="chat"' in page.body:
                break
            kind, form, action = r.pick(page) or (None, None, None)
            if kind != "consent":
                raise RuntimeError(f"no chat page: {page.url} {page.status}")
            page = r.follow(r.request("POST", action, r.fill(kind, form)))
        attrs = dict(re.findall(r'data-(state-url|turn-url|end-url|form-token)="([^"]+)"', page.body))
        token_match = re.search(r"/r/a/([^/]+)/items/(\d+)/", attrs["turn-url"])
        token, position = token_match.group(1), int(token_match.group(2))
        self.line.arrive(r)
        self.line.wait(self.stop_at)
        time.sleep(self.delay)  # --stagger: raters do not all send their first message in the same instant
        n = 0
        while time.monotonic() < self.stop_at:
            client_id, text = f"bench-{self.index}-{n}", LINES[(self.index + n) % len(LINES)]
            started = time.perf_counter()
            status, state, headers = self.json("POST", attrs["turn-url"], {
                "form_token": attrs["form-token"], "client_id": client_id, "text": text}, attrs["form-token"])
            if status == 429:
                self.stats.refusals["too fast"] += 1
                time.sleep(float(headers.get("Retry-After", 2)))
                continue
            if status != 200:
                self.stats.refusals[state.get("error", str(status))[:60]] += 1
                state = state.get("state") or {}
                if not state.get("waiting"):
                    break
            else:
                self.stats.add("messages", {"token": token, "client_id": client_id, "text": text})
            n += 1
            pause = min(10.0, max(POLL_SECONDS, (state.get("reply_expected_ms") or 1000) / 1000 + 0.1))
            while state.get("waiting") and time.monotonic() < self.stop_at + 40:
                time.sleep(pause)  # as chat.js: first when the replies so far came, then every 0.5 s
                pause = POLL_SECONDS
                _, polled, _ = self.json("GET", attrs["state-url"] + "?waiting=1")
                self.stats.polls += 1
                state = state if polled.get("unchanged") else polled
            turns = (state.get("sides") or [{}])[0].get("turns", [])
            if status == 200 and turns and turns[-1]["role"] == "system":
                self.stats.add("turn_s", time.perf_counter() - started)
            elif status == 200:
                self.stats.add("unanswered", {"token": token, "client_id": client_id, "state": str(state)[:200]})
            if not state.get("can_send"):
                break
        status, state, _ = self.json("POST", attrs["end-url"], {"form_token": attrs["form-token"]}, attrs["form-token"])
        if status != 200 or not state.get("ended"):
            raise RuntimeError(f"the chat did not end: {status} {str(state)[:200]}")
        r.deadline = time.monotonic() + 60
        page = r.follow(r.request("GET", state["urls"]["rate"]))
        picked = r.pick(page)
        if not picked or picked[0] != "item":
            raise RuntimeError(f"no rating form after the chat: {page.url}")
        answer = r.request("POST", picked[2], r.fill("item", picked[1]))
        if answer.status < 400:
            self.stats.add("rated", {"token": token, "position": position})


class Go:
    """The chatters' start line (in their own process): they arrive at their chat page, then wait for
    the raters' line to open."""

    def __init__(self, event, stop_at) -> None:
        self.event, self.stop_at = event, stop_at

    def arrive(self, _rater) -> None:
        pass

    def wait(self, _deadline: float) -> None:
        self.event.wait(timeout=300)


def chat_process(port: int, starts: list[str], ready, go, stop_at, out, stagger: float = 0.0) -> None:
    """The chatters, in a process of their own: the raters' HTML parsing in the load generator would
    otherwise delay the chatters' clocks (one interpreter lock), and every turn would look slower."""
    stats = ChatStats()
    line = Go(go, stop_at)
    chatters = [Chatter(index=i, port=port, start_url=url, stats=stats, line=line,
                        deadline=time.monotonic() + 300, delay=stagger * i / len(starts)) for i, url in enumerate(starts)]
    threads = [threading.Thread(target=c.run, daemon=True) for c in chatters]
    for thread in threads:
        thread.start()
    ready.set()
    go.wait(timeout=300)
    for chatter in chatters:
        chatter.stop_at = stop_at.value
    for thread in threads:
        thread.join(timeout=max(0.0, stop_at.value - time.monotonic()) + 120)
    out.put({"turn_s": stats.turn_s, "messages": stats.messages, "unanswered": stats.unanswered,
             "refusals": dict(stats.refusals), "rated": stats.rated, "errors": stats.errors, "polls": stats.polls})


def phase(*, port: int, likert_starts: list[str], chat_starts: list[str], seconds: float, server: Gunicorn,
          kills: int, stagger: float = 0.0) -> dict:
    """Raters (and chatters) for ``seconds`` from the moment all raters have reached their first form."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    stats, chat_stats = Stats(), ChatStats()
    line = StartLine(len(likert_starts))
    setup_bound = time.monotonic() + 300
    raters = [Rater(index=i, host="127.0.0.1", port=port, start_url=url, items=100_000, stats=stats,
                    deadline=setup_bound, ready=line) for i, url in enumerate(likert_starts)]
    threads = [threading.Thread(target=x.run, daemon=True) for x in raters]
    ready, go, stop_at, out = context.Event(), context.Event(), context.Value("d", 0.0), context.Queue()
    chat = context.Process(target=chat_process, args=(port, chat_starts, ready, go, stop_at, out, stagger), daemon=True) \
        if chat_starts else None
    load = os.getloadavg()[0]
    if chat:
        chat.start()
    for thread in threads:
        thread.start()
    line.wait(setup_bound)
    opened = line.opened_at or time.monotonic()
    for rater in raters:
        rater.deadline = opened + seconds
    stop_at.value = opened + seconds  # time.monotonic() is one clock for the whole machine
    go.set()
    killed = []
    if kills:
        time.sleep(max(0.0, opened + seconds / 2 - time.monotonic()))
        for pid in children_of(server.process.pid)[:kills]:
            os.kill(pid, signal.SIGKILL)
            killed.append({"pid": pid, "at_s": round(time.monotonic() - opened, 1)})
    for thread in threads:
        thread.join(timeout=max(0.0, opened + seconds - time.monotonic()) + 120)
    if chat:
        found = out.get(timeout=180)
        chat.join(timeout=30)
        chat_stats.turn_s, chat_stats.messages, chat_stats.unanswered = found["turn_s"], found["messages"], found["unanswered"]
        chat_stats.refusals, chat_stats.rated, chat_stats.errors = Counter(found["refusals"]), found["rated"], found["errors"]
        chat_stats.polls = found["polls"]
    return {"stats": stats, "chat": chat_stats, "killed": killed, "load_before": round(load, 2),
            "load_after": round(os.getloadavg()[0], 2), "threads_still_running": sum(t.is_alive() for t in threads)}


def chat_verify(study_pk: int, chat: ChatStats) -> dict:
    """Acknowledged messages against the stored turns; acknowledged chat ratings against the slots."""
    from studies.models import AssignmentItem, ChatTurn, Rating

    stored = Counter(ChatTurn.objects.filter(chat__item__study_id=study_pk, role="user", chat__position=0)
                     .values_list("chat__assignment__token", "client_id", "text"))
    missing = [m for m in chat.messages if stored[(m["token"], m["client_id"], m["text"])] == 0]
    doubled = sum(n - 1 for n in stored.values() if n > 1)
    replies = dict(Counter(ChatTurn.objects.filter(chat__item__study_id=study_pk).values_list("role", flat=True)))
    rated_slots = {(t, p) for t, p in AssignmentItem.objects.filter(
        assignment__study_id=study_pk, answered_at__isnull=False).values_list("assignment__token", "position")}
    ratings_missing = [r for r in chat.rated if (r["token"], r["position"]) not in rated_slots]
    return {"messages_acknowledged": len(chat.messages), "messages_lost": len(missing), "messages_doubled": doubled,
            "messages_unanswered": len(chat.unanswered), "turns_stored": replies,
            "chat_ratings_acknowledged": len(chat.rated), "chat_ratings_lost": len(ratings_missing),
            "chat_ratings_stored": Rating.objects.filter(assignment__study_id=study_pk).count(),
            "lost_examples": (missing + ratings_missing)[:3], "unanswered_examples": chat.unanswered[:3]}


def summary(result: dict) -> dict:
    stats: Stats = result["stats"]
    chat: ChatStats = result["chat"]
    return {"rating_cycle_ms": {**percentiles(stats.cycle_ms, 50, 95), "n": len(stats.cycle_ms)},
            "rating_submit_ms": {**percentiles(stats.submit_ms, 50, 95), "n": len(stats.submit_ms)},
            "turn_s": {k: (round(v / 1000, 2) if v is not None else None)
                       for k, v in percentiles([t * 1000 for t in chat.turn_s], 50, 95).items()}
            | {"n": len(chat.turn_s)},
            "rated_items": len(stats.acknowledged), "server_errors": len(stats.server_errors),
            "client_errors": len(stats.client_errors), "retried_requests": stats.retries,
            "chat_refusals": dict(chat.refusals), "state_polls": chat.polls, "chat_errors": chat.errors[:5], "killed": result["killed"],
            "load_average_before_after": [result["load_before"], result["load_after"]],
            "threads_still_running": result["threads_still_running"]}


def build(args) -> dict:
    """Both studies, the bot's system (in this process; the server reads them from the database)."""
    likert = concord_build(Namespace(responses=4, criteria=["readability", "coherence"], points=6,
                                     raters_per_item=2 * args.raters, items_per_rater=args.items_per_rater),
                           args.items_per_rater + 10)
    from django.contrib.auth import get_user_model

    from studies.authoring import services as authoring
    from studies.chat import endpoints
    from studies.models import System

    owner = get_user_model().objects.get(username="bench-owner")
    system, _ = System.objects.get_or_create(name="slowbot")
    endpoints.endpoint_set(owner=owner, system=system, protocol="concord", url=args.bot_url,
                           timeout_seconds=min(60.0, args.bot_latency + 10), retries=1)
    experiment = authoring.experiment_create(owner=owner, title="chat load")
    study = authoring.study_create(experiment=experiment, title="chat", design="likert", unit="chat",
                                   raters_per_item=args.raters, items_per_assignment=1, platform="mturk",
                                   unit_config={"min_turns": 1, "max_turns": 50, "messages_per_minute": 120})
    authoring.study_items_build(study=study, systems=["slowbot"])
    study = authoring.study_publish(study=study)
    from django.db import connection

    connection.close()
    return {"likert": likert, "chat": {"slug": study.slug, "pk": study.pk}}


def entry_urls(slug: str, count: int, rng) -> list[str]:
    return [f"/r/{slug}/?workerId={mturk_id(rng, 14, 'A')}&assignmentId={mturk_id(rng, 30)}"
            f"&hitId={mturk_id(rng, 30)}&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com" for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raters", type=int, default=30, help="half rate Likert items, half chat")
    parser.add_argument("--bot-latency", type=float, default=2.0, help="seconds before the bot answers")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers")
    parser.add_argument("--kills", type=int, default=0, help="workers to SIGKILL halfway through phase 2")
    parser.add_argument("--seconds", type=float, default=40.0, help="length of each phase")
    # enough that no rater runs out of items within a phase (a quiet box rates about 10 items a second each)
    parser.add_argument("--items-per-rater", type=int, default=600)
    parser.add_argument("--postgres", default="postgres://postgres:postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="concord_chatload")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stagger", type=float, default=None,
                        help="seconds over which the chatters send their first messages (default: one turn, "
                             "bot latency + 0.5 s; 0: all at once, in lockstep)")
    args = parser.parse_args()
    if "127.0.0.1" not in args.postgres and "localhost" not in args.postgres:
        parser.error("--postgres: only a loopback server")
    if args.stagger is None:
        args.stagger = args.bot_latency + POLL_SECONDS
    if args.raters < 2:
        parser.error("--raters: at least 2 (half rate, half chat)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))
    import random

    workdir = Path(tempfile.mkdtemp(prefix="concord-chat-load-"))
    bot_port = free_port()  # the bot in a process of its own, like a real one
    bot = subprocess.Popen([sys.executable, "-m", "studies.chat.local_bot", "--port", str(bot_port),
                            "--slow-seconds", str(args.bot_latency)], cwd=ROOT, stdout=subprocess.DEVNULL)
    args.bot_url = f"http://127.0.0.1:{bot_port}/slow/chat"
    env = {**os.environ, "DATABASE_URL": recreate_database(args.postgres, args.database),
           "DJANGO_SETTINGS_MODULE": "config.settings.production", "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
           "ALLOWED_HOSTS": "127.0.0.1", "SECURE_COOKIES": "0", "SECURE_SSL_REDIRECT": "0",
           "SECURE_HSTS_SECONDS": "0", "CONCORD_VAR_DIR": str(workdir / "concord-var"),
           "CONCORD_CHAT_ALLOWED_NETWORKS": "127.0.0.1/32"}
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "DJANGO_SECRET_KEY", "ALLOWED_HOSTS",
                                           "SECURE_COOKIES", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS",
                                           "CONCORD_VAR_DIR", "CONCORD_CHAT_ALLOWED_NETWORKS")})
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env,
                   check=True, timeout=300)
    import django

    django.setup()
    studies = build(args)
    rng = random.Random(args.seed)
    half, chatters = args.raters - args.raters // 2, args.raters // 2
    port = free_port()
    gunicorn = Path(sys.executable).with_name("gunicorn")
    command = [str(gunicorn), "-c", "config/gunicorn.py", "--workers", str(args.workers),
               "--bind", f"127.0.0.1:{port}"]
    server = Gunicorn(command, env=env, cwd=ROOT, log=workdir / "gunicorn.log", workers=args.workers)
    likert_slug = studies["likert"]["slug"]
    try:
        ready = server.wait_ready(port, f"/r/{likert_slug}/")
        alone = phase(port=port, likert_starts=entry_urls(likert_slug, half, rng), chat_starts=[],
                      seconds=args.seconds, server=server, kills=0)
        beside = phase(port=port, likert_starts=entry_urls(likert_slug, half, rng),
                       chat_starts=entry_urls(studies["chat"]["slug"], chatters, rng), seconds=args.seconds,
                       server=server, kills=args.kills, stagger=args.stagger)
        after = phase(port=port, likert_starts=entry_urls(likert_slug, half, rng), chat_starts=[],
                      seconds=args.seconds, server=server, kills=0)
        server_ms = server.server_times()
    finally:
        server.stop()
        bot.terminate()
        bot.wait(timeout=15)
    acknowledged = Stats()
    acknowledged.acknowledged = alone["stats"].acknowledged + beside["stats"].acknowledged + after["stats"].acknowledged
    ratings = concord_verify(studies["likert"]["pk"], acknowledged)
    chats = chat_verify(studies["chat"]["pk"], beside["chat"])
    first, second, third = summary(alone), summary(beside), summary(after)
    lost = (ratings["lost"] + ratings["duplicated"] + chats["messages_lost"] + chats["messages_doubled"]
            + chats["messages_unanswered"] + chats["chat_ratings_lost"])
    baselines = [p for p in (first["rating_cycle_ms"]["p95"], third["rating_cycle_ms"]["p95"]) if p]
    p95_alone = sum(baselines) / len(baselines) if baselines else None
    p95_beside = second["rating_cycle_ms"]["p95"]
    print(json.dumps({
        "benchmark": f"chat load: {half} raters rating beside {chatters} chatting with a {args.bot_latency:g} s bot, "
                     f"gunicorn -c config/gunicorn.py --workers {args.workers}, {args.kills} SIGKILL(s), "
                     f"{args.seconds:g} s per phase (alone, with chatters, alone)",
        "settings": vars(args), "machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "server": {"command": " ".join(command[1:]), "first_answer_after_start_s": round(ready, 1),
                   "settings": "config.settings.production, PostgreSQL", "log": str(server.log_path),
                   "ms_by_request": server_ms},
        "phase_1_raters_alone": first, "phase_2_with_chatters": second, "phase_3_raters_alone_again": third,
        "integrity": {"likert": ratings, "chat": chats},
    }, indent=2, default=str))
    print(json.dumps({
        "bot_latency_s": args.bot_latency, "raters": args.raters, "workers": args.workers, "kills": args.kills,
        "stagger_s": args.stagger, "turn_p50_s": second["turn_s"]["p50"], "turn_p95_s": second["turn_s"]["p95"], "turns": second["turn_s"]["n"],
        "rating_p95_s": round(p95_beside / 1000, 3) if p95_beside else None,
        "rating_p95_alone_s": round(p95_alone / 1000, 3) if p95_alone else None,
        "rating_p95_ratio": round(p95_beside / p95_alone, 2) if p95_alone and p95_beside else None,
        "lost": lost, "load_average_1m": round(os.getloadavg()[0], 2),
    }))


if __name__ == "__main__":
    main()
