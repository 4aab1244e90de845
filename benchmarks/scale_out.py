"""Two web nodes and two Celery workers on one PostgreSQL and one Redis; one node and one worker killed
outright mid-run. Does anything get lost, and what does the surviving half carry?

    python benchmarks/scale_out.py [--raters 200] [--chatters 20] [--seconds 60] [--bot-latency 2]
                                   [--web-workers 2] [--selfchats 6] [--kill-at 0.5] [--output FILE]

What runs (every process its own, all on 127.0.0.1, as two machines' worth of processes would):

- one PostgreSQL database (``--database``, dropped and created, migrated) and one Redis: the broker
  (``--broker-url``) and the cache (``--cache-url``: reports, throttles, the chat calls' leases); both Redis
  databases are emptied at the start and the end, so give this run its own two;
- web nodes ``a`` and ``b``: gunicorn with ``config/gunicorn.py`` and ``--web-workers`` each, under
  ``config.settings.production`` (the environment of benchmarks/http_load.py and chat_load.py), each with its
  own ``CONCORD_NODE_NAME``: a node cannot see the other's processes, as on two machines, so a call of the
  dead node is known dead only by its lease in the shared cache (``studies.chat.calls``);
- a round-robin proxy (this file, ``--proxy``, asyncio, in a process of its own) in front of both, as Caddy's
  ``reverse_proxy`` with two upstreams: a node that refuses connections is skipped for a second; a request
  cut by a dying node is sent again by its client (benchmarks/http_rater.py's retry), reaching the other;
- two Celery workers, each the ``calls`` worker of ``config/workers.py`` (threads) taking the ``main``
  worker's queues too, so that either can do the other's work; and one beat, looking for dead jobs every
  ``--recover-seconds`` (``JOB_RECOVER_SECONDS``) with ``JOB_LEASE_SECONDS=--job-lease``;
- the local bot (``studies.chat.local_bot``, its ``slow`` bot answering after ``--bot-latency`` s) in its
  own process.

The load: ``--raters`` raters rate Likert items (benchmarks/http_rater.py) and ``--chatters`` chatters chat
with the bot and rate the chat (benchmarks/chat_load.py's ``Chatter``, in a process of their own) for
``--seconds`` from the moment every rater has reached its first item; ``--selfchats`` self-chat runs of the
same bot (two researchers, so that some wait for their owner's share and are retried) are queued at the
start for the workers. At ``--kill-at`` of the run, node ``b`` (its gunicorn master and workers) and worker
``2`` get SIGKILL together. After the load, the run waits up to ``--drain-seconds`` for every self-chat run.

Printed (JSON; the last line is the summary): per node, requests/s and rated items/s before and after the
kill (from each node's access log); rating p95 (a submit until the next item's form) and turn p95 (a message
until its reply is on the page) before and after; the database's commits and row writes per second and the
connections per node and worker (pg_stat_activity, by ``application_name``); and ``lost``: acknowledged
ratings not stored with their value or stored twice, acknowledged chat messages not stored, stored twice or
never answered, acknowledged chat ratings not stored, and self-chat runs not finished. It must be 0."""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import multiprocessing
import os
import random
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
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.chat_load import ChatStats, Chatter, Go, build, chat_verify, entry_urls  # noqa: E402
from benchmarks.http_load import Gunicorn, concord_verify, free_port, percentiles, recreate_database  # noqa: E402
from benchmarks.http_rater import Rater, StartLine, Stats  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NODES = ("a", "b")
ITEM_POST = re.compile(r"^/r/a/[^/]+/items/\d+/$")


# --- the proxy -------------------------------------------------------------------------------------

def proxy_serve(listen: int, backends: list[int]) -> None:
    """Round robin over ``backends`` per connection; a backend that refuses is skipped for a second."""
    turn = itertools.count()
    down: dict[int, float] = {}

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        start = next(turn)
        upstream = None
        for n in range(len(backends) * 2):
            port = backends[(start + n) % len(backends)]
            if down.get(port, 0.0) > loop.time() and n < len(backends):
                continue
            try:
                upstream = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
                break
            except (TimeoutError, OSError):
                down[port] = loop.time() + 1.0
        if upstream is None:
            client_writer.close()
            return
        upstream_reader, upstream_writer = upstream
        sending = asyncio.create_task(pipe(client_reader, upstream_writer))
        await pipe(upstream_reader, client_writer)  # the answer, until the node closes (or dies)
        sending.cancel()
        for writer in (client_writer, upstream_writer):
            with contextlib.suppress(Exception):
                writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", listen, backlog=1024)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# --- processes -------------------------------------------------------------------------------------

def with_name(url: str, name: str) -> str:
    """A PostgreSQL URL whose connections are named ``name`` in pg_stat_activity."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(query=f"application_name={name}"))


def redis_flush(url: str) -> None:
    import redis

    redis.Redis.from_url(url.replace("rediscache://", "redis://")).flushdb()


class Process:
    """A command in its own process group (so that SIGKILL takes the whole of it)."""

    def __init__(self, command: list[str], *, env: dict, log: Path) -> None:
        self.log_path = log
        self.log = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=15)

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                self.kill()
        self.log.close()


def worker_command(name: str, concurrency: int) -> list[str]:
    """The ``calls`` worker of config/workers.py (threads) taking the ``main`` worker's queues as well."""
    from config.workers import WORKERS

    queues = ",".join(dict.fromkeys(WORKERS["calls"].queues + WORKERS["main"].queues))
    return [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queues, f"--pool={WORKERS['calls'].pool}",
            f"--concurrency={concurrency}", "-O", "fair", "--loglevel=INFO", "-n", f"{name}@%h",
            "--without-gossip", "--without-mingle"]


def static_collected() -> bool:
    """Whether collectstatic's manifest is newer than every file of the project's static folder."""
    manifest = ROOT / "staticfiles" / "staticfiles.json"
    if not manifest.exists():
        return False
    newest = max((f.stat().st_mtime for f in (ROOT / "static").rglob("*") if f.is_file()), default=0.0)
    return manifest.stat().st_mtime > newest


def wait_for(condition, timeout: float, what: str, interval: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise SystemExit(f"{what}: not within {timeout:.0f} s")


# --- measurements ----------------------------------------------------------------------------------

class Timed:
    """Mixed into a stats class with ``lock`` and ``add``: each value kept with the moment it was added."""

    def __init__(self) -> None:
        super().__init__()
        self.at: dict[str, list[float]] = {}

    def add(self, name: str, value) -> None:
        with self.lock:  # type: ignore[attr-defined]
            getattr(self, name).append(value)
            self.at.setdefault(name, []).append(time.monotonic())


class TimedStats(Timed, Stats):
    """benchmarks.http_rater's Stats, timed."""


class TimedChatStats(Timed, ChatStats):
    """benchmarks.chat_load's ChatStats, timed."""


def split(values: list[float], moments: list[float], cut: float | None) -> tuple[list[float], list[float]]:
    if cut is None:
        return list(values), []
    return ([v for v, t in zip(values, moments, strict=True) if t < cut],
            [v for v, t in zip(values, moments, strict=True) if t >= cut])


def access_lines(server: Gunicorn) -> list[list[str]]:
    return [line.split(maxsplit=4) for line in server.access_log.read_text().splitlines()]


def node_figures(lines: list[list[str]], seconds: float) -> dict:
    requests = len(lines)
    items = sum(1 for parts in lines if len(parts) == 5 and parts[3] == "POST" and parts[2] < "400"
                and ITEM_POST.match(parts[4]))
    return {"requests": requests, "requests_per_s": round(requests / seconds, 1) if seconds > 0 else None,
            "rated_items": items, "rated_items_per_s": round(items / seconds, 2) if seconds > 0 else None}


class Sampler(threading.Thread):
    """Every second: connections by application_name (pg_stat_activity) and the database's commits and
    row writes (pg_stat_database), for per-second rates."""

    def __init__(self, database_url: str, name: str) -> None:
        super().__init__(daemon=True)
        self.url, self.name = database_url, name
        self.done = threading.Event()
        self.connections: dict[str, list[int]] = {}
        self.counters: list[tuple[float, int, int]] = []

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.url.split("?")[0].replace("postgres://", "postgresql://"), autocommit=True) as db:
            while not self.done.wait(1.0):
                rows = db.execute("SELECT application_name, count(*) FROM pg_stat_activity WHERE datname = %s "
                                  "AND application_name LIKE 'concord-%%' GROUP BY 1", [self.name]).fetchall()
                for app, count in rows:
                    self.connections.setdefault(app, []).append(count)
                commits, writes = db.execute(
                    "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted FROM pg_stat_database "
                    "WHERE datname = %s", [self.name]).fetchone()
                self.counters.append((time.monotonic(), commits, writes))

    def rates(self, start: float, end: float) -> dict:
        inside = [c for c in self.counters if start <= c[0] <= end]
        if len(inside) < 2:
            return {}
        (t0, c0, w0), (t1, c1, w1) = inside[0], inside[-1]
        return {"commits_per_s": round((c1 - c0) / (t1 - t0), 1), "row_writes_per_s": round((w1 - w0) / (t1 - t0), 1)}

    def peaks(self) -> dict:
        return {app: {"max": max(v), "median": sorted(v)[len(v) // 2]} for app, v in sorted(self.connections.items())}


# --- the chatters' process -------------------------------------------------------------------------

def chat_process(port: int, starts: list[str], ready, go, stop_at, out, stagger: float) -> None:
    """benchmarks.chat_load's chatters, their turns timed, in a process of their own."""
    stats = TimedChatStats()
    line = Go(go, stop_at)
    chatters = [Chatter(index=i, port=port, start_url=url, stats=stats, line=line, deadline=time.monotonic() + 300,
                        delay=stagger * i / max(1, len(starts))) for i, url in enumerate(starts)]
    threads = [threading.Thread(target=c.run, daemon=True) for c in chatters]
    for thread in threads:
        thread.start()
    ready.set()
    go.wait(timeout=300)
    for chatter in chatters:
        chatter.stop_at = stop_at.value
    for thread in threads:
        thread.join(timeout=max(0.0, stop_at.value - time.monotonic()) + 120)
    out.put({"turn_s": stats.turn_s, "turn_at": stats.at.get("turn_s", []), "messages": stats.messages,
             "unanswered": stats.unanswered, "refusals": dict(stats.refusals), "rated": stats.rated,
             "errors": stats.errors, "polls": stats.polls, "threads_still_running": sum(t.is_alive() for t in threads)})


# --- the run ---------------------------------------------------------------------------------------

def selfchats_queue(count: int, bot_latency: float, turns: int) -> list[int]:
    from django.contrib.auth import get_user_model

    from studies.chat.selfchat import selfchat_create

    owners = [get_user_model().objects.get_or_create(username=f"researcher-{n}")[0] for n in range(2)]
    from studies.chat import endpoints
    from studies.models import System, SystemEndpoint

    endpoint = SystemEndpoint.objects.get(system__name="slowbot")
    for owner in owners:
        endpoints.endpoint_set(owner=owner, system=System.objects.get(name="slowbot"), protocol="concord",
                               url=endpoint.url, timeout_seconds=min(60.0, bot_latency + 10), retries=1)
    runs = [selfchat_create(owner=owners[n % 2], title=f"scale-out {n}", system_a="slowbot", system_b="slowbot",
                            openers=["Hello there.", "What did you do today?"], conversations=2, turns=turns, seed=n)
            for n in range(count)]
    return [run.pk for run in runs]


def selfchats_unfinished(run_ids: list[int]) -> dict[str, int]:
    from studies.models import SelfChatRun

    return dict(Counter(SelfChatRun.objects.filter(pk__in=run_ids).exclude(status=SelfChatRun.Status.DONE)
                        .values_list("status", flat=True)))


def run(args) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="concord-scale-out-"))
    began = time.monotonic()
    stages: dict[str, float] = {}

    def stage(name: str) -> None:
        stages[name] = round(time.monotonic() - began, 1)

    database_url = recreate_database(args.postgres, args.database)
    for url in (args.broker_url, args.cache_url):
        redis_flush(url)
    bot_port = free_port()
    bot = subprocess.Popen([sys.executable, "-m", "studies.chat.local_bot", "--port", str(bot_port),
                            "--slow-seconds", str(args.bot_latency)], cwd=ROOT, stdout=subprocess.DEVNULL)
    args.bot_url = f"http://127.0.0.1:{bot_port}/slow/chat"
    env = {**os.environ, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "config.settings.production",
           "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), "ALLOWED_HOSTS": "127.0.0.1", "SECURE_COOKIES": "0",
           "SECURE_SSL_REDIRECT": "0", "SECURE_HSTS_SECONDS": "0", "CONCORD_VAR_DIR": str(workdir / "var-bench"),
           "CONCORD_CHAT_ALLOWED_NETWORKS": "127.0.0.1/32", "CELERY_BROKER_URL": args.broker_url,
           "CACHE_URL": args.cache_url, "JOB_LEASE_SECONDS": str(args.job_lease),
           "JOB_HEARTBEAT_SECONDS": str(max(0.5, args.job_lease / 6)), "JOB_RECOVER_SECONDS": str(args.recover_seconds),
           "CONCORD_CHAT_CALLER_LEASE": str(args.caller_lease), "LOG_LEVEL": "WARNING"}
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "DJANGO_SECRET_KEY",
                                           "ALLOWED_HOSTS", "SECURE_COOKIES", "SECURE_SSL_REDIRECT",
                                           "SECURE_HSTS_SECONDS", "CONCORD_VAR_DIR", "CONCORD_CHAT_ALLOWED_NETWORKS",
                                           "CELERY_BROKER_URL", "CACHE_URL")})
    if not args.skip_collectstatic and not static_collected():
        subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env,
                       check=True, timeout=300)
    stage("static_files")
    import django

    django.setup()
    studies = build(Namespace(raters=max(args.raters, args.chatters, 1), items_per_rater=args.items_per_rater,
                              bot_url=args.bot_url, bot_latency=args.bot_latency))
    stage("database_built")
    processes: list[Process] = []
    servers: dict[str, Gunicorn] = {}
    ports = {node: free_port() for node in NODES}
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    sampler = Sampler(database_url, args.database)
    try:
        for node in NODES:  # each node its own var folder: nothing on disk is shared between web nodes
            node_env = {**env, "CONCORD_NODE_NAME": f"node-{node}", "CONCORD_VAR_DIR": str(workdir / f"var-{node}"),
                        "DATABASE_URL": with_name(database_url, f"concord-web-{node}")}
            servers[node] = Gunicorn([gunicorn, "-c", "config/gunicorn.py", "--workers", str(args.web_workers),
                                      "--bind", f"127.0.0.1:{ports[node]}"], env=node_env, cwd=ROOT,
                                     log=workdir / f"web-{node}.log", workers=args.web_workers)
        workers = {}
        for n in (1, 2):
            worker_env = {**env, "CONCORD_NODE_NAME": f"worker-{n}", "CONCORD_VAR_DIR": str(workdir / f"var-w{n}"),
                          "DATABASE_URL": with_name(database_url, f"concord-worker-{n}")}
            workers[n] = Process(worker_command(f"scaleout-{n}-{os.getpid()}", args.worker_concurrency),
                                 env=worker_env, log=workdir / f"worker-{n}.log")
            processes.append(workers[n])
        processes.append(Process([sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel=WARNING",
                                  "--schedule", str(workdir / "celerybeat-schedule")],
                                 env={**env, "DATABASE_URL": with_name(database_url, "concord-beat")},
                                 log=workdir / "beat.log"))
        proxy_port = free_port()
        processes.append(Process([sys.executable, str(Path(__file__).resolve()), "--proxy", str(proxy_port),
                                  ",".join(str(ports[n]) for n in NODES)], env=env, log=workdir / "proxy.log"))
        likert_slug = studies["likert"]["slug"]
        for node in NODES:
            servers[node].wait_ready(ports[node], f"/r/{likert_slug}/")
        wait_for(lambda: all(f"scaleout-{n}-" in w.log_path.read_text(errors="replace") and
                             "ready" in w.log_path.read_text(errors="replace") for n, w in workers.items()),
                 120, "the Celery workers")
        stage("servers_ready")
        sampler.start()
        result = drive(args, proxy_port, studies, servers, workers)
        drain_until = time.monotonic() + args.drain_seconds
        stage("load_done")
        wait_for(lambda: not selfchats_unfinished(result["selfchat_runs"]) or time.monotonic() > drain_until,
                 args.drain_seconds + 10, "the self-chat runs")
        result["drain_s"] = round(args.drain_seconds - max(0.0, drain_until - time.monotonic()), 1)
        sampler.done.set()
    finally:
        for server in servers.values():
            server.stop()
        for process in processes:
            process.stop()
        bot.terminate()
        bot.wait(timeout=15)
        for url in (args.broker_url, args.cache_url):
            with contextlib.suppress(Exception):
                redis_flush(url)
    stage("stopped")
    figures = report(args, result, studies, servers, sampler, workdir)
    stage("verified")
    figures["stages_s"] = stages
    return figures


def drive(args, proxy_port: int, studies: dict, servers: dict[str, Gunicorn], workers: dict[int, Process]) -> dict:
    rng = random.Random(args.seed)
    stats = TimedStats()
    line = StartLine(args.raters)
    setup_bound = time.monotonic() + 300
    raters = [Rater(index=i, host="127.0.0.1", port=proxy_port, start_url=url, items=100_000, stats=stats,
                    deadline=setup_bound, ready=line)
              for i, url in enumerate(entry_urls(studies["likert"]["slug"], args.raters, rng))]
    threads = [threading.Thread(target=r.run, daemon=True) for r in raters]
    context = multiprocessing.get_context("fork")
    ready, go, stop_at, out = context.Event(), context.Event(), context.Value("d", 0.0), context.Queue()
    chat = context.Process(target=chat_process, daemon=True, args=(
        proxy_port, entry_urls(studies["chat"]["slug"], args.chatters, rng), ready, go, stop_at, out,
        args.bot_latency + 0.5)) if args.chatters else None
    if chat:
        chat.start()
        ready.wait(timeout=300)
    for thread in threads:
        thread.start()
    line.wait(setup_bound)
    opened = line.opened_at or time.monotonic()
    for rater in raters:
        rater.deadline = opened + args.seconds
    stop_at.value = opened + args.seconds
    go.set()
    # two conversations per run, the two together half again the time until the kill: the kill finds runs at
    # work, and those waiting for their owner's share start before the load ends
    turns = max(2, round(args.seconds * args.kill_at * 1.5 / args.bot_latency / 2))
    selfchat_runs = selfchats_queue(args.selfchats, args.bot_latency, turns)
    marks = {node: len(access_lines(servers[node])) for node in NODES}
    killed: dict = {}
    kill_at = opened + args.seconds * args.kill_at
    time.sleep(max(0.0, kill_at - time.monotonic()))
    if args.kill:
        active = workers_active(workers)
        victim = max(workers, key=lambda n: (active.get(n, 0), n))  # the busier one: its tasks must move
        victims = [servers["b"].process.pid, *sorted(_children(servers["b"].process.pid))]
        os.killpg(servers["b"].process.pid, signal.SIGKILL)  # the master and its workers, outright
        workers[victim].kill()
        servers["b"].process.wait(timeout=15)
        marks_at_kill = {node: len(access_lines(servers[node])) for node in NODES}
        killed = {"web_node": "b", "web_pids": victims, "celery_worker": victim, "active_tasks_by_worker": active,
                  "at_s": round(time.monotonic() - opened, 1), "items_acknowledged_then": len(stats.acknowledged)}
        cut: float | None = time.monotonic()
    else:
        marks_at_kill, cut = {}, None
    for thread in threads:
        thread.join(timeout=max(0.0, opened + args.seconds - time.monotonic()) + 120)
    ended = time.monotonic()
    chat_found: dict = {}
    if chat:
        chat_found = out.get(timeout=240)
        chat.join(timeout=30)
    return {"stats": stats, "chat": chat_found, "opened": opened, "cut": cut, "ended": ended, "marks": marks,
            "marks_at_kill": marks_at_kill, "killed": killed, "selfchat_runs": selfchat_runs,
            "threads_still_running": sum(t.is_alive() for t in threads)}


def workers_active(workers: dict[int, Process]) -> dict[int, int]:
    """Tasks each worker runs now (Celery's remote control), by worker number."""
    from celery import current_app

    names = {f"scaleout-{n}-{os.getpid()}": n for n in workers}
    try:
        replies = current_app.control.inspect(timeout=2.0).active() or {}
    except Exception:  # noqa: BLE001 - without an answer the second worker is killed
        return {}
    return {names[name.split("@")[0]]: len(tasks) for name, tasks in replies.items() if name.split("@")[0] in names}


def _children(pid: int) -> list[int]:
    from benchmarks.http_load import children_of

    return children_of(pid)


def report(args, result: dict, studies: dict, servers: dict[str, Gunicorn], sampler: Sampler, workdir: Path) -> dict:
    stats: TimedStats = result["stats"]
    opened, cut, ended = result["opened"], result["cut"], result["ended"]
    chat = ChatStats()
    found = result["chat"]
    if found:
        chat.turn_s, chat.messages, chat.unanswered = found["turn_s"], found["messages"], found["unanswered"]
        chat.refusals, chat.rated, chat.errors, chat.polls = Counter(found["refusals"]), found["rated"], found["errors"], found["polls"]
    ratings = concord_verify(studies["likert"]["pk"], stats)
    chats = chat_verify(studies["chat"]["pk"], chat)
    unfinished = selfchats_unfinished(result["selfchat_runs"])
    from studies.models import SelfChatRun

    selfchat_attempts = dict(Counter(SelfChatRun.objects.filter(pk__in=result["selfchat_runs"])
                                     .values_list("attempts", flat=True)))
    lost = {"ratings_lost": ratings["lost"], "ratings_duplicated": ratings["duplicated"],
            "messages_lost": chats["messages_lost"], "messages_doubled": chats["messages_doubled"],
            "messages_unanswered": chats["messages_unanswered"], "chat_ratings_lost": chats["chat_ratings_lost"],
            "selfchat_runs_unfinished": sum(unfinished.values())}
    before_s = (cut or ended) - opened
    after_s = ended - cut if cut else 0.0
    nodes = {}
    for node in NODES:  # the load only: the lines before the start line opened are the raters' entry and consent
        lines = access_lines(servers[node])
        start, at_kill = result["marks"][node], result["marks_at_kill"].get(node, len(lines))
        nodes[node] = {"entry_requests": start, "before_kill": node_figures(lines[start:at_kill], before_s),
                       "after_kill": node_figures(lines[at_kill:], after_s) if cut else None}
    cycle_before, cycle_after = split(stats.cycle_ms, stats.at.get("cycle_ms", []), cut)
    turn_before, turn_after = split(found.get("turn_s", []), found.get("turn_at", []), cut) if found else ([], [])

    def p95_s(values: list[float], scale: float = 1.0) -> float | None:
        p = percentiles([v * scale for v in values], 95)["p95"]
        return round(p / 1000, 3) if p is not None else None

    summary = {
        "raters": args.raters, "chatters": args.chatters, "seconds": args.seconds, "web_workers_per_node": args.web_workers,
        "bot_latency_s": args.bot_latency, "killed": bool(cut),
        "requests_per_s": {node: [nodes[node]["before_kill"]["requests_per_s"],
                                  (nodes[node]["after_kill"] or {}).get("requests_per_s")] for node in NODES},
        "rated_items_per_s": {node: [nodes[node]["before_kill"]["rated_items_per_s"],
                                     (nodes[node]["after_kill"] or {}).get("rated_items_per_s")] for node in NODES},
        "rating_p95_s": [p95_s(cycle_before), p95_s(cycle_after)],
        "turn_p95_s": [p95_s(turn_before, 1000), p95_s(turn_after, 1000)],
        "lost": sum(lost.values()), "load_average_1m": round(os.getloadavg()[0], 2),
    }
    return {
        "benchmark": f"scale-out: {args.raters} raters and {args.chatters} chatters through a round-robin proxy to "
                     f"two gunicorn nodes ({args.web_workers} workers each), two Celery workers, one PostgreSQL, "
                     f"one Redis; node b and worker 2 SIGKILLed at {args.kill_at:.0%} of {args.seconds:g} s",
        "settings": {k: v for k, v in vars(args).items() if k not in ("proxy",)},
        "machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()}, "logs": str(workdir),
        "pairs_are": "[before the kill, after the kill]",
        "nodes": nodes, "killed": result["killed"],
        "rating_cycle_ms": {"before": {**percentiles(cycle_before, 50, 95), "n": len(cycle_before)},
                            "after": {**percentiles(cycle_after, 50, 95), "n": len(cycle_after)}},
        "turn_s": {"before": {**percentiles(turn_before, 50, 95), "n": len(turn_before)},
                   "after": {**percentiles(turn_after, 50, 95), "n": len(turn_after)}},
        "database": {"before_kill": sampler.rates(opened, cut or ended),
                     "after_kill": sampler.rates(cut, ended) if cut else None,
                     "connections_by_process_group": sampler.peaks()},
        "client_side": {"retried_requests": stats.retries, "connection_errors": stats.connection_errors,
                        "server_errors": len(stats.server_errors), "server_error_examples": stats.server_errors[:3],
                        "client_errors": len(stats.client_errors), "client_error_examples": stats.client_errors[:3],
                        "chat_refusals": dict(chat.refusals), "chat_errors": chat.errors[:5],
                        "threads_still_running": result["threads_still_running"]},
        "selfchat": {"runs": len(result["selfchat_runs"]), "unfinished_by_status": unfinished,
                     "runs_by_attempts": selfchat_attempts, "drain_s": result.get("drain_s")},
        "integrity": {"likert": ratings, "chat": chats, "lost": lost},
        "summary": summary,
    }


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--proxy":
        proxy_serve(int(sys.argv[2]), [int(p) for p in sys.argv[3].split(",")])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raters", type=int, default=200)
    parser.add_argument("--chatters", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the load, from the start line")
    parser.add_argument("--bot-latency", type=float, default=2.0, help="seconds before the bot answers")
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn workers per node")
    parser.add_argument("--worker-concurrency", type=int, default=8, help="threads per Celery worker")
    parser.add_argument("--selfchats", type=int, default=6, help="self-chat runs queued for the workers")
    parser.add_argument("--kill-at", type=float, default=0.5, help="fraction of --seconds")
    parser.add_argument("--no-kill", dest="kill", action="store_false", help="kill nothing (a baseline)")
    parser.add_argument("--items-per-rater", type=int, default=600)
    parser.add_argument("--job-lease", type=float, default=6.0, help="JOB_LEASE_SECONDS for the workers")
    parser.add_argument("--recover-seconds", type=float, default=2.0, help="JOB_RECOVER_SECONDS for the beat")
    parser.add_argument("--caller-lease", type=float, default=10.0, help="CONCORD_CHAT_CALLER_LEASE")
    parser.add_argument("--drain-seconds", type=float, default=120.0, help="wait so long for the self-chats")
    parser.add_argument("--postgres", default="postgres://postgres:postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="concord_scaleout")
    parser.add_argument("--broker-url", default=os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/8"))
    parser.add_argument("--cache-url", default=os.environ.get("CACHE_URL", "rediscache://127.0.0.1:6379/9"))
    parser.add_argument("--skip-collectstatic", action="store_true", help="static files are collected already (else: when static/ changed since)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", help="also write the JSON here")
    args = parser.parse_args()
    if "127.0.0.1" not in args.postgres and "localhost" not in args.postgres:
        parser.error("--postgres: only a loopback server")
    if not args.broker_url.startswith("redis://") or not args.cache_url.startswith(("redis://", "rediscache://")):
        parser.error("--broker-url and --cache-url: Redis databases (both are emptied)")
    if urlsplit(args.broker_url)[1:3] == urlsplit(args.cache_url)[1:3]:
        parser.error("--broker-url and --cache-url must be two different Redis databases")
    if args.raters < 1:
        parser.error("--raters: at least 1")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))
    figures = run(args)
    text = json.dumps(figures, indent=2, default=str)
    print(text)
    print(json.dumps(figures["summary"], default=str))
    if args.output:
        Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
