"""HTTP load on the rater path: N simulated raters at once against gunicorn on PostgreSQL, with
web workers SIGKILLed mid-run, then the database checked for lost and duplicated ratings.

    python benchmarks/http_load.py [--raters 100] [--workers 3] [--kills 2] [--items-per-rater 10]
                                   [--turkle] [--max-seconds 900]

Concord: a fresh PostgreSQL database (``--database``, dropped and created), migrated; a published
Likert study on Mechanical Turk (``--responses`` responses x ``--criteria`` per item: 4 x 2 = the
8 questions of the seed study's item); gunicorn as deployed (``-c config/gunicorn.py``, the compose
file's server: sync workers, chat calls in their threads) with ``--workers`` workers under
``config.settings.production`` (DEBUG off, a random DJANGO_SECRET_KEY, ALLOWED_HOSTS=127.0.0.1,
SECURE_COOKIES=0, SECURE_SSL_REDIRECT=0 and SECURE_HSTS_SECONDS=0 because the benchmark speaks
plain HTTP on loopback; static files collected first since the manifest storage needs them). Each rater
(benchmarks/http_rater.py) opens the MTurk entry link with its own workerId/assignmentId/hitId,
consents and rates its items, reading every form from the page (hidden inputs included) and
following redirects or taking the next form from the submit's own answer.

Raters wait at their first item until all have arrived; the rating phase runs from then until the
last acknowledged submit, and ``rated_items_per_s`` is acknowledged items / that time. When
``--kill-at`` of the expected items are acknowledged, ``--kills`` worker processes (children of the
gunicorn master, which forks replacements) get SIGKILL; a request whose connection dies is sent
again unchanged. Afterwards the database is compared with what the raters were told was saved:
``lost`` (acknowledged, not stored with that value) and ``duplicated`` (a second rating for one
assignment x response x criterion, a second slot for one item, a second assignment for one worker)
must be 0.

``--turkle``: the same raters, items and kills against Turkle (``pip install turkle`` into its own
virtual environment, ``--turkle-venv``; a site around it in benchmarks/turkle_site/) on its own
PostgreSQL database, one HIT per item with the same questions, one worker account per rater, the
batch's "accept next task" flow with auto-accept; printed side by side with the ratio of items/s.
Both servers run one after the other on the same machine with the same settings.

Everything binds to 127.0.0.1; each phase is bounded in time, and gunicorn is always stopped."""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import re
import secrets
import signal
import socket
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.http_rater import Rater, StartLine, Stats  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
MTURK_CHARS = string.ascii_uppercase + string.digits


# --- processes -------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def recreate_database(server_url: str, name: str) -> str:
    """Drop and create ``name`` on the server; returns its URL."""
    import psycopg

    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
        raise SystemExit(f"--database/--turkle-database: {name!r} is not a plain PostgreSQL name")
    with psycopg.connect(f"{server_url.rstrip('/')}/postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        connection.execute(f"CREATE DATABASE {name}")
    return f"{server_url.rstrip('/')}/{name}"


def children_of(pid: int) -> list[int]:
    """Live child processes of ``pid`` (from /proc; the gunicorn master's workers)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return sorted(found)


class Gunicorn:
    """A gunicorn master in its own process group, stopped (group-wide) by ``stop``."""

    def __init__(self, command: list[str], *, env: dict, cwd: Path, log: Path, workers: int) -> None:
        self.log_path, self.workers = log, workers
        self.access_log = log.with_suffix(".access")
        self.access_log.touch()
        command = [*command, "--access-logfile", str(self.access_log), "--access-logformat", "%(p)s %(D)s %(s)s %(m)s %(U)s",
                   "--no-control-socket"]  # gunicorn 27's default socket path is shared by every gunicorn of the user
        self.log = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(command, env=env, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def wait_ready(self, port: int, path: str, timeout: float = 180.0) -> float:
        """Seconds until every worker is forked and one answers ``path``."""
        import http.client

        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self.process.poll() is not None:
                raise SystemExit(f"gunicorn exited ({self.process.returncode}); see {self.log_path}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                connection.request("GET", path)
                response = connection.getresponse()
                response.read()
                connection.close()
                if response.status >= 500:
                    raise SystemExit(f"{path} answered {response.status}; see {self.log_path}")
                if len(children_of(self.process.pid)) >= self.workers:
                    return time.monotonic() - started
            except OSError:
                pass
            time.sleep(0.5)
        raise SystemExit(f"gunicorn did not answer within {timeout:.0f} s; see {self.log_path}")

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=15)
        self.log.close()

    def server_times(self) -> dict:
        """Time inside the workers (gunicorn's request time, without the wait in the listen queue),
        by method and answer status, from the access log."""
        groups: dict[str, list[float]] = {}
        for line in self.access_log.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[1].isdigit():
                groups.setdefault(f"{parts[3]} {parts[2]}", []).append(int(parts[1]) / 1000)
        return {key: {**percentiles(values, 50, 95), "n": len(values)} for key, values in sorted(groups.items())}

    def tracebacks(self, limit: int = 3) -> list[str]:
        """The first few tracebacks in the server log (for a 5xx in the report)."""
        text = self.log_path.read_text(errors="replace")
        blocks = re.findall(r"(?:^.*\n)?Traceback \(most recent call last\):\n(?:[ \t].*\n)+.*", text, re.M)
        return [b[-3000:] for b in blocks[:limit]]


class Killer(threading.Thread):
    """SIGKILLs ``kills`` workers of ``master`` once ``at`` items are acknowledged (``interval``
    seconds apart; 0: all at once), then watches the access log for the replacements' first
    answers: a new worker loads the application on its first request, so that is when it is back."""

    def __init__(self, *, server: Gunicorn, stats: Stats, at: int, kills: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.master, self.stats, self.at, self.kills, self.interval = server.process.pid, stats, at, kills, interval
        self.workers, self.access_log = server.workers, server.access_log
        self.done = threading.Event()
        self.record: list[dict] = []

    def run(self) -> None:
        while not self.done.is_set() and self.kills:
            with self.stats.lock:
                acknowledged = len(self.stats.acknowledged)
            if acknowledged >= self.at:
                break
            time.sleep(0.05)
        else:
            return
        killed_at: list[float] = []
        before = children_of(self.master)
        for n in range(self.kills):
            victims = [p for p in children_of(self.master) if p not in [r["pid"] for r in self.record]]
            if not victims:
                break
            pid = victims[0]
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            killed_at.append(time.monotonic())
            with self.stats.lock:
                acknowledged = len(self.stats.acknowledged)
            self.record.append({"pid": pid, "items_acknowledged": acknowledged, "at": time.strftime("%H:%M:%S")})
            if self.interval and n + 1 < self.kills:
                self.done.wait(self.interval)
        if not killed_at:
            return
        old = {r["pid"] for r in self.record} | set(before)
        back: dict[int, dict] = {}
        with open(self.access_log) as log:
            log.seek(0, os.SEEK_END)
            while not self.done.is_set() and len(back) < len(killed_at) and time.monotonic() - killed_at[0] < 300:
                for entry in log.readlines():
                    pid, _, duration = entry.strip("<").partition(" ")  # "<pid> microseconds status ..."
                    pid = pid.rstrip(">")
                    if pid.isdigit() and int(pid) not in old and int(pid) not in back:
                        back[int(pid)] = {"new_worker": int(pid), "first_answer_after_kill_s":
                                          round(time.monotonic() - killed_at[0], 2),
                                          "its_first_request_ms": round(int(duration.split()[0]) / 1000, 1)}
                time.sleep(0.05)
        self.record.extend(back.values())


# --- one load run ---------------------------------------------------------------------------------

def percentiles(values: list[float], *points: int) -> dict[str, float | None]:
    if len(values) < 2:
        return {f"p{p}": (round(values[0], 1) if values else None) for p in points}
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {f"p{p}": round(cuts[p - 1], 1) for p in points}


def drive(*, port: int, starts: list[dict], items_per_rater: int, server: Gunicorn, args) -> tuple[Stats, dict]:
    """Run the raters (each ``starts`` entry: start_url, username, password); returns the stats and
    the run's figures."""
    stats = Stats()
    deadline = time.monotonic() + args.max_seconds
    line = StartLine(len(starts))
    raters = [Rater(index=i, host="127.0.0.1", port=port, stats=stats, deadline=deadline, ready=line,
                    items=items_per_rater, questionnaire=args.questionnaire, **start)
              for i, start in enumerate(starts)]
    expected = len(raters) * items_per_rater
    killer = Killer(server=server, stats=stats, at=math.ceil(args.kill_at * expected), kills=args.kills,
                    interval=args.kill_interval)
    threads = [threading.Thread(target=r.run, daemon=True) for r in raters]
    began, cpu, load = time.monotonic(), time.process_time(), os.getloadavg()
    killer.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()) + 90)
    killer.done.set()
    killer.join(timeout=5)
    phase = (stats.last_ack_at - line.opened_at) if line.opened_at and stats.last_ack_at else None
    items = len(stats.acknowledged)
    figures = {
        "raters": len(raters), "items_per_rater": items_per_rater, "items_expected": expected,
        "items_acknowledged": items,
        "setup_phase_s": round(line.opened_at - began, 2) if line.opened_at else None,
        "rating_phase_s": round(phase, 2) if phase else None,
        "rated_items_per_s": round(items / phase, 2) if phase else None,
        "submit_ms": {**percentiles(stats.submit_ms, 50, 95, 99), "n": len(stats.submit_ms)},
        "get_ms": {**percentiles(stats.get_ms, 50, 95, 99), "n": len(stats.get_ms)},
        "item_cycle_ms": {**percentiles(stats.cycle_ms, 50, 95, 99), "n": len(stats.cycle_ms),
                          "what": "item submit until the next item's form is on screen (POST + any redirects/frames)"},
        "retried_requests": stats.retries, "connection_errors": stats.connection_errors,
        "server_errors": len(stats.server_errors), "server_error_examples": stats.server_errors[:5],
        "client_errors": len(stats.client_errors), "client_error_examples": stats.client_errors[:5],
        "unfinished_raters": len(stats.unfinished), "unfinished_examples": stats.unfinished[:5],
        "kills": killer.record, "threads_still_running": sum(t.is_alive() for t in threads),
        "server_ms_by_request": server.server_times(),
        "load_generator_cpu_s": round(time.process_time() - cpu, 1),
        "load_average_before_after": [round(load[0], 2), round(os.getloadavg()[0], 2)],
    }
    if stats.server_errors:
        figures["server_tracebacks"] = server.tracebacks()
    return stats, figures


# --- Concord ---------------------------------------------------------------------------------------

def concord_build(args, items: int) -> dict:
    """Migrate the fresh database and publish the Likert study on MTurk (in this process)."""
    import io

    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from studies.authoring import services as authoring
    from studies.corpora import services as corpus_imports

    call_command("migrate", verbosity=0)
    owner = get_user_model().objects.create(username="bench-owner")
    systems = [f"system{n}" for n in range(1, args.responses)] + ["human"]
    lines = [json.dumps({"concord": "dialogues/1", "systems": systems, "reference": "human"})]
    lines += [json.dumps({"id": f"c{i}", "turns": [f"Turn {t} of conversation {i}." for t in range(3)],
                          "responses": {s: f"{s} reply to conversation {i}: a sentence of ordinary length."
                                        for s in systems}}) for i in range(items)]
    corpus = corpus_imports.dialogues_import(stream=io.BytesIO("\n".join(lines).encode()), source_name="http-load.jsonl",
                                       owner=owner).corpus
    experiment = authoring.experiment_create(owner=owner, title="http load")
    study = authoring.study_create(experiment=experiment, title="likert", design="likert",
                                  design_config={"points": args.points}, criteria=args.criteria,
                                  raters_per_item=args.raters_per_item, items_per_assignment=args.items_per_rater,
                                  platform="mturk")
    authoring.study_items_build(study=study, corpus=corpus, systems=systems[:-1], reference_system="human")
    study = authoring.study_publish(study=study)
    from django.db import connection

    connection.close()
    return {"slug": study.slug, "pk": study.pk, "items": study.items.count()}


def mturk_id(rng: random.Random, length: int, first: str = "") -> str:
    return first + "".join(rng.choice(MTURK_CHARS) for _ in range(length - len(first)))


def concord_verify(study_pk: int, stats: Stats) -> dict:
    """Acknowledged ratings against the stored ones (assignment token, screen, response letter, criterion,
    value): a page names its responses by the letter the rater sees (``studies.designs.common.target_key``)."""
    from django.db.models import Count

    from studies.designs.common import target_key
    from studies.models import Assignment, AssignmentItem, Rating

    acknowledged: dict[tuple, float] = {}
    for ack in stats.acknowledged:
        token = next((m.group(1) for u in [ack["action"], *reversed(ack["urls"])]
                      if (m := re.search(r"/r/a/([^/]+)/", u))), None)
        position = next((int(m.group(1)) for u in [ack["action"], *reversed(ack["urls"])]
                         if (m := re.search(r"/items/(\d+)/", u))), None)
        for name, value in ack["fields"]:
            if m := re.fullmatch(r"r([A-Z]\d*)-(.+)", name):
                acknowledged[(token, position, m.group(1), m.group(2))] = float(value)
    shown = {(s.assignment_id, s.item_id): s for s in AssignmentItem.objects.filter(assignment__study_id=study_pk)}
    stored: dict[tuple, list[float]] = {}
    for token, assignment, item, rid, criterion, value in Rating.objects.filter(
            assignment__study_id=study_pk).values_list("assignment__token", "assignment_id", "item_id", "response_id",
                                                       "criterion__name", "value"):
        slot = shown[(assignment, item)]
        stored.setdefault((token, slot.position, target_key(slot.response_order, rid), criterion), []).append(value)
    missing = [k for k in acknowledged if k not in stored]
    other = [k for k, v in acknowledged.items() if k in stored and v not in stored[k]]
    slots = AssignmentItem.objects.filter(assignment__study_id=study_pk).values("assignment", "item") \
        .annotate(n=Count("id")).filter(n__gt=1).count()
    per_worker = Counter(Assignment.objects.filter(study_id=study_pk).values_list("rater_id", flat=True))
    return {
        "acknowledged_ratings": len(acknowledged), "stored_ratings": sum(len(v) for v in stored.values()),
        "lost": len(missing) + len(other), "stored_with_other_value": len(other),
        "duplicated": sum(len(v) - 1 for v in stored.values()) + slots + sum(n - 1 for n in per_worker.values()),
        "stored_not_acknowledged": sum(1 for k in stored if k not in acknowledged),
        "items_acknowledged": len(stats.acknowledged),
        "items_stored": AssignmentItem.objects.filter(assignment__study_id=study_pk, answered_at__isnull=False).count(),
        "assignments": sum(per_worker.values()), "lost_examples": [list(k) for k in (missing + other)[:5]],
    }


def run_concord(args, items: int, workdir: Path) -> dict:
    database_url = recreate_database(args.postgres, args.database)
    env = {**os.environ, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "config.settings.production",
           "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), "ALLOWED_HOSTS": "127.0.0.1", "SECURE_COOKIES": "0",
           "SECURE_SSL_REDIRECT": "0", "SECURE_HSTS_SECONDS": "0", "CONCORD_VAR_DIR": str(workdir / "concord-var")}
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "DJANGO_SECRET_KEY",
                                           "ALLOWED_HOSTS", "SECURE_COOKIES", "SECURE_SSL_REDIRECT",
                                           "SECURE_HSTS_SECONDS", "CONCORD_VAR_DIR")})
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env,
                   check=True, timeout=300)
    study = concord_build(args, items)
    rng = random.Random(args.seed)
    starts = [{"start_url": f"/r/{study['slug']}/?workerId={mturk_id(rng, 14, 'A')}&assignmentId={mturk_id(rng, 30)}"
                            f"&hitId={mturk_id(rng, 30)}&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com"}
              for _ in range(args.raters)]
    port = free_port()
    gunicorn = Path(sys.executable).with_name("gunicorn")
    server = Gunicorn([str(gunicorn), "-c", "config/gunicorn.py", "--workers", str(args.workers),
                       "--bind", f"127.0.0.1:{port}", "--timeout", "120"], env=env, cwd=ROOT,
                      log=workdir / "concord-gunicorn.log", workers=args.workers)
    try:
        ready = server.wait_ready(port, f"/r/{study['slug']}/")
        stats, figures = drive(port=port, starts=starts, items_per_rater=args.items_per_rater, server=server, args=args)
    finally:
        server.stop()
    figures["integrity"] = concord_verify(study["pk"], stats)
    figures["server"] = {"app": "Concord", "command": f"gunicorn -c config/gunicorn.py --workers {args.workers} --timeout 120",
                         "settings": "config.settings.production (DEBUG off, SECURE_COOKIES=0, no SSL redirect, plain HTTP on loopback)",
                         "database": "PostgreSQL (fresh, migrated)", "first_answer_after_start_s": round(ready, 1),
                         "items_in_study": study["items"], "log": str(server.log_path)}
    return figures


# --- Turkle ----------------------------------------------------------------------------------------

def run_turkle(args, items: int, workdir: Path) -> dict:
    python = Path(args.turkle_venv) / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"--turkle: no {python}; create it with `python3 -m venv {args.turkle_venv} && "
                         f"{args.turkle_venv}/bin/pip install turkle gunicorn 'psycopg[binary]'`")
    database_url = recreate_database(args.postgres, args.turkle_database)
    env = {**os.environ, "TURKLE_DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "turkle_site.settings",
           "TURKLE_SECRET_KEY": secrets.token_urlsafe(40), "PYTHONPATH": str(BENCH)}
    for key in ("DATABASE_URL", "VIRTUAL_ENV"):
        env.pop(key, None)
    password = secrets.token_urlsafe(12)
    spec = {"raters": args.raters, "items": items, "raters_per_item": args.raters_per_item,
            "responses": args.responses, "criteria": args.criteria, "points": args.points, "password": password}
    made = subprocess.run([str(python), "-m", "turkle_site.bench_data", "setup", json.dumps(spec)], cwd=BENCH, env=env,
                          check=True, timeout=600, capture_output=True, text=True)
    setup = json.loads(made.stdout.strip().splitlines()[-1])
    version = subprocess.run([str(python), "-c", "import turkle; print(turkle.__version__)"], env=env,
                             capture_output=True, text=True, timeout=60).stdout.strip()
    starts = [{"start_url": f"/login/?next=/batch/{setup['batch']}/accept_next_task/", "username": user,
               "password": password} for user in setup["users"]]
    port = free_port()
    server = Gunicorn([str(python.with_name("gunicorn")), "django.core.wsgi:get_wsgi_application()",
                       "--workers", str(args.workers), "--bind", f"127.0.0.1:{port}", "--timeout", "120"],
                      env=env, cwd=BENCH, log=workdir / "turkle-gunicorn.log", workers=args.workers)
    try:
        ready = server.wait_ready(port, "/login/")
        stats, figures = drive(port=port, starts=starts, items_per_rater=args.items_per_rater, server=server, args=args)
    finally:
        server.stop()
    acks = [{"username": setup["users"][a["rater"]], "action": a["action"], "fields": a["fields"]}
            for a in stats.acknowledged]
    acks_file = workdir / "turkle-acks.json"
    acks_file.write_text(json.dumps(acks))
    checked = subprocess.run([str(python), "-m", "turkle_site.bench_data", "verify", str(acks_file)], cwd=BENCH,
                             env=env, check=True, timeout=300, capture_output=True, text=True)
    figures["integrity"] = json.loads(checked.stdout.strip().splitlines()[-1])
    figures["server"] = {"app": f"Turkle {version}", "command": f"gunicorn --workers {args.workers} --timeout 120",
                         "settings": "benchmarks/turkle_site/settings.py (DEBUG off)", "database": "PostgreSQL (fresh)",
                         "first_answer_after_start_s": round(ready, 1), "items_in_batch": items,
                         "log": str(server.log_path)}
    return figures


# --- main ------------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raters", type=int, default=100)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn sync workers")
    parser.add_argument("--kills", type=int, default=2, help="worker processes to SIGKILL mid-run")
    parser.add_argument("--kill-at", type=float, default=0.5, help="fraction of the expected items acknowledged")
    parser.add_argument("--kill-interval", type=float, default=0.0, help="seconds between kills (0: at once)")
    parser.add_argument("--items-per-rater", type=int, default=10)
    parser.add_argument("--raters-per-item", type=int, default=10)
    parser.add_argument("--items", type=int, default=None,
                        help="items in the study (default: 10%% more than raters x items-per-rater / raters-per-item)")
    parser.add_argument("--responses", type=int, default=4, help="responses judged per item")
    parser.add_argument("--criteria", default="readability,coherence", type=lambda s: [c for c in s.split(",") if c])
    parser.add_argument("--points", type=int, default=6, help="Likert points")
    parser.add_argument("--questionnaire", action="store_true", help="Concord raters also answer the questionnaire")
    parser.add_argument("--max-seconds", type=float, default=900, help="bound on each load run")
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="concord_bench")
    parser.add_argument("--turkle", action="store_true", help="run the same load against Turkle too")
    parser.add_argument("--turkle-venv", default="/tmp/turkle-venv")
    parser.add_argument("--turkle-database", default="turkle_bench")
    parser.add_argument("--only-turkle", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", help="also write the JSON here")
    args = parser.parse_args()
    if args.responses < 2 or args.responses > 26 or not args.criteria:
        parser.error("--responses must be 2..26 and --criteria name at least one criterion")
    if "127.0.0.1" not in args.postgres and "localhost" not in args.postgres:
        parser.error("--postgres: only a loopback server")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))  # so the finally blocks stop gunicorn
    items = args.items or math.ceil(1.1 * args.raters * args.items_per_rater / args.raters_per_item)
    workdir = Path(tempfile.mkdtemp(prefix="concord-http-load-"))
    result: dict = {
        "benchmark": f"HTTP load on the rater path: {args.raters} raters x {args.items_per_rater} items "
                     f"({args.responses} responses x {len(args.criteria)} criteria per item), gunicorn "
                     f"{args.workers} workers, {args.kills} SIGKILL(s) at {args.kill_at:.0%} of the items",
        "settings": {k: v for k, v in vars(args).items() if k not in ("output", "only_turkle")} | {"items": items},
        "machine": {"cpus": os.cpu_count(), "load_average_before": os.getloadavg()}, "logs": str(workdir),
    }
    if not args.only_turkle:
        result["concord"] = run_concord(args, items, workdir)
    if args.turkle or args.only_turkle:
        result["turkle"] = run_turkle(args, items, workdir)
    if "concord" in result and "turkle" in result:
        c, t = result["concord"]["rated_items_per_s"], result["turkle"]["rated_items_per_s"]
        result["concord_over_turkle_items_per_s"] = round(c / t, 2) if c and t else None
    result["machine"]["load_average_after"] = os.getloadavg()
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if args.output:
        Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
