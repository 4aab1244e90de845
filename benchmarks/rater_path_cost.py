"""Per-request cost of the rater path, independent of the machine's load: SQL queries and CPU
milliseconds (``time.process_time`` of this process: Django's own work, not the database's, not the
wait for the CPU; on a busy machine still inflated by the other processes) and Python function calls
(cProfile's count, the same on every machine and load) of the item GET and the rating POST, through Django's whole request handler with
every middleware, under ``config.settings.production`` (DEBUG off, cached template loaders, the
manifest static storage; static files collected into a temporary folder first).

    python benchmarks/rater_path_cost.py [--items 40] [--design likert|pairwise|chat] [--database-url URL]
                                         [--root PATH] [--compare PATH] [--profile FILE]

The study is http_load.py's (4 responses x 2 criteria on a 6-point scale; ``--design pairwise``: two
systems side by side, the same two criteria), on MTurk; one rater enters through the MTurk link,
consents, and then, for each of ``--items`` items: GET its page, POST its answers (answered with the
next item's page). A warm-up rater goes first so that per-process caches and the template cache are
filled as in a running worker (a pairwise study has three pairs per conversation, so the measured
rater also meets items no one has opened yet: their response texts are read once).

``--design chat`` measures a chat message instead (a Likert chat study, the project's local bot in a
process of its own, answering after 0.3 s): per message the turn's POST (JSON, as static/concord/chat.js
sends it), a look at the state while the bot writes (``?waiting=1``), the call thread's work (the bot
call over loopback and the storing of its reply, in this process's call threads as in a web worker:
this process's CPU while it only waits for them), and the look that finds the reply; ``message`` is
their sum, what the server spends on one message when the page looks once before the reply and once
after. The database is a throw-away SQLite file unless ``--database-url``
names one (a PostgreSQL database there is used as it is; give an empty one).

``--root PATH`` runs against the checkout at PATH (its code, this script); ``--compare PATH`` runs
this checkout and PATH in turn, each in its own process, and prints both with the ratio base / this.
``--profile FILE`` writes a cProfile of the measured requests. The last line is one JSON object."""
from __future__ import annotations

import argparse
import atexit
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def setup(root: Path, database_url: str | None) -> None:
    sys.path.insert(0, str(root))
    os.chdir(root)
    var = tempfile.mkdtemp(prefix="concord-cost-")
    atexit.register(shutil.rmtree, var, ignore_errors=True)
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "config.settings.production", "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
        "ALLOWED_HOSTS": "127.0.0.1", "SECURE_COOKIES": "0", "SECURE_SSL_REDIRECT": "0", "SECURE_HSTS_SECONDS": "0",
        "CONCORD_VAR_DIR": var, "LOG_LEVEL": "WARNING", "CONCORD_CHAT_ALLOWED_NETWORKS": "127.0.0.1/32",
        "DATABASE_URL": database_url or f"sqlite:///{var}/concord.sqlite3",
    })
    import django
    from django.conf import settings

    django.setup()
    settings.STATIC_ROOT = Path(var) / "static"  # collected here, not into the checkout
    from django.core.management import call_command

    call_command("collectstatic", "--noinput", verbosity=0)
    call_command("migrate", verbosity=0)


def build(design: str, items: int):
    import io

    from django.contrib.auth import get_user_model

    from studies.authoring import services as authoring
    from studies.corpora import services as corpus_imports

    owner, _ = get_user_model().objects.get_or_create(username="cost-owner")
    systems = ["system1", "system2", "system3", "human"]
    lines = [json.dumps({"concord": "dialogues/1", "systems": systems, "reference": "human"})]
    lines += [json.dumps({"id": f"c{i}", "turns": [f"Turn {t} of conversation {i}." for t in range(3)],
                          "responses": {s: f"{s} reply to conversation {i}: a sentence of ordinary length."
                                        for s in systems}}) for i in range(items)]
    corpus = corpus_imports.dialogues_import(stream=io.BytesIO("\n".join(lines).encode()), source_name="cost.jsonl",
                                             owner=owner).corpus
    experiment = authoring.experiment_create(owner=owner, title="rater path cost")
    config = {"points": 6} if design == "likert" else {}
    study = authoring.study_create(experiment=experiment, title=design, design=design, design_config=config,
                                   criteria=["readability", "coherence"], raters_per_item=5,
                                   items_per_assignment=items, platform="mturk")
    chosen = systems[:-1] if design == "likert" else systems[:2]
    authoring.study_items_build(study=study, corpus=corpus, systems=chosen, reference_system="human")
    return authoring.study_publish(study=study)


def rater(slug: str, worker: str):
    """A client that entered through the MTurk link and consented; its assignment token."""
    import re

    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")
    answer = client.get(f"/r/{slug}/?workerId={worker}&assignmentId=A{worker}&hitId=H{worker}"
                        "&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com")
    token = answer["Location"].split("/")[3]
    page = client.get(f"/r/a/{token}/").content.decode()
    form = re.search(r'name="form_token" value="([0-9a-f]+)"', page).group(1)
    client.post(f"/r/a/{token}/", {"agree": "yes", "form_token": form})
    return client, token


def form_of(page: str) -> dict:
    """The page's form as a browser would send it: hidden inputs, the first choice of every radio group."""
    import re

    fields: dict[str, str] = {}
    for tag in re.findall(r"<input[^>]*>", page):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        kind = re.search(r'type="([^"]+)"', tag)
        if not name or not kind:
            continue
        if kind.group(1) == "hidden" or (kind.group(1) == "radio" and name.group(1) not in fields):
            fields[name.group(1)] = value.group(1) if value else ""
    return fields


def walk(client, token: str, items: int, *, count_calls: bool = False, profiler=None) -> dict:
    """GET and POST every item of the assignment; per request the CPU milliseconds and the queries, or
    with ``count_calls`` the Python function calls (cProfile's count: the same on every run and machine)."""
    import cProfile
    import pstats
    from urllib.parse import urlencode

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    out: dict[str, list] = {f"{kind}_{what}": [] for kind in ("get", "post") for what in ("ms", "queries", "calls")}

    def timed(call, kind):
        counter = cProfile.Profile() if count_calls else profiler
        with CaptureQueriesContext(connection) as queries:
            if counter:
                counter.enable()
            started = time.process_time()
            response = call()
            elapsed = (time.process_time() - started) * 1000
            if counter:
                counter.disable()
        out[f"{kind}_ms"].append(elapsed)
        out[f"{kind}_queries"].append(len(queries.captured_queries))
        if count_calls:
            out[f"{kind}_calls"].append(pstats.Stats(counter).total_calls)
        return response

    for position in range(items):
        url = f"/r/a/{token}/items/{position}/"
        page = timed(lambda: client.get(url), "get")  # noqa: B023
        assert page.status_code == 200, (page.status_code, page.content[:300])
        body = urlencode(form_of(page.content.decode()))  # as a browser sends a form without files
        answer = timed(lambda: client.post(url, body, content_type="application/x-www-form-urlencoded"),  # noqa: B023
                       "post")
        assert answer.status_code in (200, 302), (answer.status_code, answer.content[:500])
        if position + 1 < items:
            assert answer.status_code == 200 and f"/items/{position + 1}/" in answer.content.decode()
    return out


def chat_build(bot_url: str):
    from django.contrib.auth import get_user_model

    from studies.authoring import services as authoring
    from studies.chat import endpoints
    from studies.models import System

    owner, _ = get_user_model().objects.get_or_create(username="cost-owner")
    system, _ = System.objects.get_or_create(name="costbot")
    endpoints.endpoint_set(owner=owner, system=system, protocol="concord", url=bot_url, timeout_seconds=10, retries=0)
    experiment = authoring.experiment_create(owner=owner, title="chat message cost")
    study = authoring.study_create(experiment=experiment, title="chat", design="likert", unit="chat",
                                   raters_per_item=5, items_per_assignment=1, platform="mturk",
                                   unit_config={"min_turns": 1, "max_turns": 50, "messages_per_minute": 120})
    authoring.study_items_build(study=study, systems=["costbot"])
    return authoring.study_publish(study=study)


def chat_walk(client, token: str, messages: int, *, count_calls: bool = False, profiler=None) -> dict:
    """Send ``messages`` messages as the chat page's script does; per message the CPU milliseconds,
    queries and (``count_calls``) Python function calls of each step (see the module's docstring)."""
    import cProfile
    import pstats
    import re

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from studies.chat import calls as chat_calls

    page = client.get(f"/r/a/{token}/items/0/chat/")
    assert page.status_code == 200, (page.status_code, page.content[:300])
    attrs = dict(re.findall(r'data-(state-url|turn-url|form-token)="([^"]+)"', page.content.decode()))
    steps = ("turn", "poll_waiting", "call", "poll_replied")
    out: dict[str, list] = {f"{step}_{what}": [] for step in steps for what in ("ms", "queries", "calls")}

    def timed(call, step):
        counter = cProfile.Profile() if count_calls else profiler
        with CaptureQueriesContext(connection) as queries:
            if counter:
                counter.enable()
            started = time.process_time()
            response = call()
            elapsed = (time.process_time() - started) * 1000
            if counter:
                counter.disable()
        out[f"{step}_ms"].append(elapsed)
        out[f"{step}_queries"].append(len(queries.captured_queries))
        if count_calls and step != "call":  # the call thread's are counted in it
            out[f"{step}_calls"].append(pstats.Stats(counter).total_calls)
        return response

    json_accept = {"HTTP_ACCEPT": "application/json"}
    run, stored = chat_calls._run, getattr(chat_calls, "stored", None)  # None: a base without the writer thread
    if count_calls:  # the call thread's and the writer's function calls too (cProfile sees one thread)
        def counted(call):
            counter = cProfile.Profile()
            counter.enable()
            try:
                return call()
            finally:
                counter.disable()
                out["call_calls"].append(pstats.Stats(counter).total_calls)

        def counted_run(job):
            before = len(out["call_calls"])
            counted(lambda: run(job))
            out["call_calls"][before:] = [sum(out["call_calls"][before:])]  # the call's and its storing's, as one

        chat_calls._run = counted_run
        if stored is not None:
            chat_calls.stored = lambda step: stored(lambda: counted(step))
    try:
        _chat_messages(client, attrs, messages, timed, json_accept)
    finally:
        chat_calls._run = run
        if stored is not None:
            chat_calls.stored = stored
    return out


def _chat_messages(client, attrs: dict, messages: int, timed, json_accept: dict) -> None:
    from studies.chat import calls as chat_calls

    for n in range(messages):
        fields = {"form_token": attrs["form-token"], "client_id": f"cost-{n}", "text": f"I like topic {n}."}
        sent = timed(lambda: client.post(attrs["turn-url"], fields,  # noqa: B023
                                         HTTP_X_CONCORD_FORM_TOKEN=attrs["form-token"], **json_accept), "turn")
        assert sent.status_code == 200 and sent.json()["waiting"], (sent.status_code, sent.content[:300])
        # the bot takes 0.3 s: this look finds it writing unless the machine is very busy
        waiting = timed(lambda: client.get(attrs["state-url"] + "?waiting=1", **json_accept), "poll_waiting")
        assert waiting.status_code == 200, waiting.content[:300]
        done = timed(lambda: chat_calls.background_wait(30), "call")
        assert done, "the bot call did not end"
        replied = timed(lambda: client.get(attrs["state-url"] + "?waiting=1", **json_accept), "poll_replied")
        state = replied.json()
        assert not state["waiting"] and state["sides"][0]["turns"][-1]["role"] == "system", str(state)[:300]


def chat_measure(args) -> dict:
    import subprocess

    import django
    from django.test.utils import override_settings

    from benchmarks.http_load import free_port

    port = free_port()
    bot = subprocess.Popen([sys.executable, "-m", "studies.chat.local_bot", "--port", str(port), "--slow-seconds",
                            "0.3"], cwd=Path.cwd(), stdout=subprocess.DEVNULL)
    try:
        study = chat_build(f"http://127.0.0.1:{port}/slow/chat")
        messages = min(args.items, 45)  # the study's max_turns is 50
        with override_settings(DEBUG=False):
            client, token = rater(study.slug, "AWARMUP000001")
            chat_walk(client, token, 3)
            client, token = rater(study.slug, "ACALLS0000001")
            counted = chat_walk(client, token, messages, count_calls=True)
            profiler = None
            if args.profile:
                import cProfile

                profiler = cProfile.Profile()
            client, token = rater(study.slug, "AMEASURED00001")
            out = chat_walk(client, token, messages, profiler=profiler)
    finally:
        bot.terminate()
        bot.wait(timeout=15)
    if profiler:
        profiler.dump_stats(args.profile)
    steps = ("turn", "poll_waiting", "call", "poll_replied")

    def summary(ms: list[float], queries: list[int], calls: list[int]) -> dict:
        return {"cpu_ms_median": round(statistics.median(ms), 2), "cpu_ms_min": round(min(ms), 2),
                "python_calls_median": statistics.median(calls), "queries_median": statistics.median(queries),
                "queries_max": max(queries), "requests": len(ms)}

    result = {step: summary(out[f"{step}_ms"], out[f"{step}_queries"], counted[f"{step}_calls"]) for step in steps}
    per_message = {what: [sum(values) for values in zip(*(source[f"{step}_{what}"] for step in steps), strict=True)]
                   for what, source in (("ms", out), ("queries", out), ("calls", counted))}
    result["message"] = summary(per_message["ms"], per_message["queries"], per_message["calls"])
    return {"root": str(Path.cwd()), "design": "chat", "database": django.db.connection.vendor, **result}


def measure(args) -> dict:
    setup(Path(args.root).resolve() if args.root else HERE.parents[1], args.database_url)
    if args.design == "chat":
        return chat_measure(args)
    import django
    from django.test.utils import override_settings

    study = build(args.design, args.items)
    with override_settings(DEBUG=False):
        client, token = rater(study.slug, "AWARMUP000001")
        walk(client, token, args.items)
        client, token = rater(study.slug, "ACALLS0000001")
        calls = walk(client, token, args.items, count_calls=True)
        profiler = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
        client, token = rater(study.slug, "AMEASURED00001")
        out = walk(client, token, args.items, profiler=profiler)
    if profiler:
        profiler.dump_stats(args.profile)
    out["get_calls"], out["post_calls"] = calls["get_calls"], calls["post_calls"]
    for key in ("post_ms", "post_queries", "post_calls"):
        out[key].pop()  # the last item's answer goes on to the questionnaire (a redirect, no page)

    def summary(kind: str) -> dict:
        ms, queries, calls = out[f"{kind}_ms"], out[f"{kind}_queries"], out[f"{kind}_calls"]
        return {"cpu_ms_median": round(statistics.median(ms), 2), "cpu_ms_min": round(min(ms), 2),
                "python_calls_median": statistics.median(calls), "queries_median": statistics.median(queries),
                "queries_max": max(queries), "requests": len(ms)}

    return {"root": str(Path.cwd()), "design": args.design, "database": django.db.connection.vendor,
            "item_get": summary("get"), "item_post": summary("post")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--design", default="likert", choices=["likert", "pairwise", "chat"])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--root", default=None, help="the checkout to measure (default: this one)")
    parser.add_argument("--compare", default=None, help="a base checkout: measure both, print base / this")
    parser.add_argument("--profile", default=None, help="write a cProfile of the measured requests here")
    args = parser.parse_args()
    if not args.compare:
        print(json.dumps(measure(args)))
        return
    runs = {}
    for name, root in (("this", HERE.parents[1]), ("base", Path(args.compare).resolve())):
        command = [sys.executable, str(HERE), "--items", str(args.items), "--design", args.design, "--root", str(root)]
        if args.database_url:
            command += ["--database-url", args.database_url]
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=1800)
        if done.returncode:
            raise SystemExit(f"{root}: exit {done.returncode}\n{done.stderr[-3000:]}")
        runs[name] = json.loads(done.stdout.strip().splitlines()[-1])
    kinds = ("turn", "poll_waiting", "call", "poll_replied", "message") if args.design == "chat" \
        else ("item_get", "item_post")
    ratio = {kind: {key: round(runs["base"][kind][key] / runs["this"][kind][key], 2)
                    for key in ("cpu_ms_median", "cpu_ms_min", "python_calls_median", "queries_median")
                    if runs["this"][kind][key]}
             for kind in kinds}
    print(json.dumps({"design": args.design, "this": runs["this"], "base": runs["base"], "base_over_this": ratio}))


if __name__ == "__main__":
    main()
