"""What a chat turn costs through the stack, and why its bot call runs in the web process (in its call
threads, studies/chat/calls.py) instead of through a Celery task.

    python benchmarks/chat_turns.py [--turns 40] [--pickups 10]

Measures, in one run, against the local rule-based bot (studies.chat.local_bot) on loopback:

- ``sync_turn_ms``: a rater's turn through the whole Django stack (the JSON POST to the chat page's turn
  view: form token, the assignment lock, the message stored, the bot called over HTTP, the reply stored),
  with the SQL queries per turn;
- ``bot_call_ms``: the bot call alone (studies.chat.client.bot_reply), the baseline;
- ``side_by_side``: a turn to two systems whose bot takes 200 ms each, against one such system (the two
  calls run in parallel, so the ratio stays near 1, not 2);
- ``celery_pickup_ms``: how long a task queued on this deployment's broker (the embedded filesystem
  broker, or CELERY_BROKER_URL) waits before a real worker runs it: the least a Celery design would add
  to every turn, before the page's own polling for the result.

Prints JSON with the medians, p95s and the ratios."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import ROOT, django_on_throwaway_database  # noqa: E402


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median": round(statistics.median(ordered), 2),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2), "n": len(ordered)}


def celery_pickups(count: int) -> list[float]:
    """Milliseconds from queuing a task to a real worker running it (the worker is started here)."""
    from config.celery import app

    folder = Path(tempfile.mkdtemp(prefix="concord-probe-"))
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "default", "--pool=solo",
         "--concurrency=1", "--loglevel=WARNING", "--include", "benchmarks.chat_probe", "-n", "probe@%h",
         "--without-gossip", "--without-mingle"],
        cwd=ROOT, env={**os.environ}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        warm = folder / "warm"
        app.send_task("benchmarks.chat_probe.mark", args=[str(warm)], queue="default")
        deadline = time.monotonic() + 120
        while not warm.exists():  # the worker's start-up is not part of a turn
            if time.monotonic() > deadline or worker.poll() is not None:
                raise RuntimeError("the Celery worker did not start")
            time.sleep(0.01)
        waits = []
        for i in range(count):
            target = folder / f"t{i}"
            sent = time.time()
            app.send_task("benchmarks.chat_probe.mark", args=[str(target)], queue="default")
            while not target.exists() or not target.read_text():
                time.sleep(0.002)
            waits.append((float(target.read_text()) - sent) * 1000)
        return waits
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--pickups", type=int, default=10)
    args = parser.parse_args()
    os.environ.setdefault("CONCORD_CHAT_ALLOWED_NETWORKS", "127.0.0.1/32")
    # the whole turn in the request, as it was measured here (the site now answers before the bot;
    # benchmarks/chat_load.py measures that)
    os.environ.setdefault("CONCORD_CHAT_BACKGROUND_REPLIES", "0")
    django_on_throwaway_database()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from studies.authoring import services as authoring
    from studies.chat import endpoints, services
    from studies.chat.client import Endpoint, bot_reply
    from studies.chat.endpoints import allowed_networks
    from studies.chat.local_bot import LocalBot
    from studies.models import Assignment, AssignmentItem, System
    from studies.rating.entry import rater_get_or_create
    from studies.rating.form_tokens import form_token

    bot = LocalBot(slow_seconds=0.2).start()
    owner = get_user_model().objects.create(username="bench")

    def study(names: list[str], per_chat: int):
        experiment = authoring.experiment_create(owner=owner, title=f"bench chat {per_chat}")
        created = authoring.study_create(
            experiment=experiment, title="chat", design="bws" if per_chat == 2 else "likert", unit="chat",
            design_config={"tuple_size": 2} if per_chat == 2 else None, raters_per_item=5, items_per_assignment=1,
            unit_config={"systems_per_chat": per_chat, "min_turns": 1, "max_turns": 50, "messages_per_minute": 120})
        authoring.study_items_build(study=created, systems=names)
        return created

    def assignment_for(chat_study, worker: str):
        rater = rater_get_or_create(platform="invite", external_id=worker)
        assignment = Assignment.objects.create(study=chat_study, rater=rater, experiment=chat_study.experiment, seed=1,
                                               started_at=timezone.now(), consented_at=timezone.now())
        item = chat_study.items.first()
        AssignmentItem.objects.create(assignment=assignment, item=item, position=0, response_order=[])
        services.chat_open(assignment=assignment, item_id=item.pk)
        return assignment

    for name, kind in (("rule", "rule"), ("slow-a", "slow"), ("slow-b", "slow")):
        endpoints.endpoint_set(owner=owner, system=System.objects.create(name=name), protocol="concord", url=bot.url(kind),
                               timeout_seconds=5, retries=0)

    # 1. Turns through the whole stack, the rule bot.
    assignment = assignment_for(study(["rule"], 1), "w-sync")
    client = Client(HTTP_HOST="127.0.0.1")
    url, token = f"/r/a/{assignment.token}/items/0/chat/turn/", form_token(assignment.token, "chat")
    turns, queries = [], []
    for i in range(args.turns):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            answer = client.post(url, {"form_token": token, "client_id": f"m{i}", "text": f"I like topic {i}"},
                                 HTTP_ACCEPT="application/json")
            turns.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200 and answer.json()["exchanges"] == i + 1, answer.content[:200]
        queries.append(len(captured.captured_queries))

    # 2. The bot call alone (the baseline), the same dialogue lengths.
    endpoint, calls = Endpoint(protocol="concord", url=bot.url("rule"), timeout=5, retries=0), []
    history = [{"speaker": "user", "text": "hello"}]
    for i in range(args.turns):
        started = time.perf_counter()
        reply = bot_reply(endpoint, history, allowed=allowed_networks())
        calls.append((time.perf_counter() - started) * 1000)
        history += [{"speaker": "system", "text": reply.text}, {"speaker": "user", "text": f"I like topic {i}"}]

    # 3. Two systems side by side (each 200 ms) against one.
    def turn_times(chat_study, worker: str, n: int = 8) -> list[float]:
        a = assignment_for(chat_study, worker)
        times = []
        for i in range(n):
            started = time.perf_counter()
            services.chat_turn_post(assignment=a, item_id=chat_study.items.first().pk, text=f"hi {i}", client_id=f"{i}")
            times.append((time.perf_counter() - started) * 1000)
        return times

    one = turn_times(study(["slow-a"], 1), "w-one")
    two = turn_times(study(["slow-a", "slow-b"], 2), "w-two")
    bot.stop()

    # 4. What a queued task waits before a worker runs it, on this deployment's broker.
    pickups = celery_pickups(args.pickups)
    sync, alone = summary(turns), summary(calls)
    print(json.dumps({
        "database": connection.vendor, "broker": settings.CELERY_BROKER_URL.split(":")[0],
        "sync_turn_ms": sync, "queries_per_turn": {"median": statistics.median(queries), "max": max(queries)},
        "bot_call_ms": alone, "turn_over_bot_call": round(sync["median"] / alone["median"], 2),
        "side_by_side": {"one_system_ms": summary(one), "two_systems_ms": summary(two),
                         "ratio": round(statistics.median(two) / statistics.median(one), 2)},
        "celery_pickup_ms": summary(pickups),
        "celery_pickup_over_sync_turn": round(statistics.median(pickups) / sync["median"], 2),
    }, indent=2))


if __name__ == "__main__":
    main()
