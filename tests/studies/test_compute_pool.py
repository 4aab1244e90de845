"""The compute pool (studies.compute_pool): report, figure and download views answered by a pool process leave
no statistics stack in the web process; an error in the view is the view's own answer; a pool process that
dies is replaced and the page says so; an answer past the deadline says it is computing, and the reload
picks up the same computation."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from studies import compute_pool

ROOT = Path(__file__).resolve().parents[2]

# In a fresh interpreter (a clean sys.modules), on a database the set-up subprocess filled (committed rows
# the pool process can read): every kind of offloaded view, with the pool on.
MEASURED = r"""
import json, os, sys
sys.path.insert(0, {root!r})
os.environ["CONCORD_COMPUTE_POOL_WORKERS"] = "1"
os.environ["CONCORD_COMPUTE_POOL_DEADLINE"] = "600"  # a busy machine's cold start is not what this test is about
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
import django
django.setup()
from django.test import Client
from studies import compute_pool
from studies.authoring.demo import demo_user

client = Client()
client.force_login(demo_user())
e, s = "/experiments/demo-seed-study", "/studies/demo-likert"
urls = [e + "/report/", e + "/report/figures/icc.svg", e + "/report.csv", e + "/report.xlsx", s + "/report/",
        s + "/report/figures/completion.svg", e + "/metrics/readability/", e + "/metrics/readability.csv",
        e + "/metrics/readability/prediction-powered.xlsx", "/api/experiments/demo-seed-study/report/",
        "/api/experiments/demo-seed-study/report/download/?format=xlsx",
        "/api/experiments/demo-seed-study/judges/ranking/",
        "/api/experiments/demo-seed-study/metrics/readability/prediction-powered/"]
answers = {{}}
for url in urls:
    response = client.get(url, HTTP_HOST="127.0.0.1")
    answers[url] = [response.status_code, response["Content-Type"]]
missing = client.get(e + "/report/figures/no-such-figure.svg", HTTP_HOST="127.0.0.1")
bad = client.get("/api/experiments/demo-seed-study/report/download/?format=pdf", HTTP_HOST="127.0.0.1")
pool = compute_pool.pool_pids()
compute_pool.shutdown()
print(json.dumps({{"answers": answers, "missing": missing.status_code, "bad": [bad.status_code, bad["Content-Type"]],
                  "pool": pool, "page": client.get(e + "/report/", HTTP_HOST="127.0.0.1").status_code,
                  "heavy": sorted(m for m in {stack!r} if m in sys.modules)}}))
"""
STACK = ("pandas", "scipy", "statsmodels", "matplotlib", "sklearn", "crowdkit", "openpyxl")


def test_offloaded_views_leave_no_statistics_stack_in_the_web_process(tmp_path):
    env = {**os.environ, "CONCORD_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings.local"}
    env.pop("DATABASE_URL", None)
    prefix = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from benchmarks import web_memory as w; "
    subprocess.run([sys.executable, "-c", prefix + f"w.prepare({str(tmp_path)!r}, 'demo-seed-study')"],
                   cwd=ROOT, env=env, check=True, capture_output=True)
    done = subprocess.run([sys.executable, "-c", MEASURED.format(root=str(ROOT), stack=STACK)], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert {url: code for url, (code, _) in got["answers"].items() if code != 200} == {}
    assert got["answers"]["/experiments/demo-seed-study/report/figures/icc.svg"][1] == "image/svg+xml"
    assert got["answers"]["/experiments/demo-seed-study/report.xlsx"][1].startswith("application/vnd.openxml")
    assert len(got["pool"]) == 1  # the answers came from a pool process
    assert got["heavy"] == []  # ... and the web process imported none of the stack
    assert got["missing"] == 404  # the view's Http404, raised in the pool process, is the web process's 404
    assert got["bad"] == [400, "application/problem+json"]  # the API's problem response, as in the request
    assert got["page"] == 200  # after shutdown() the next report starts a new pool


def _die() -> None:
    os._exit(1)


def _wait_for(path: str) -> str:
    """In a pool process: return once ``path`` exists (the test decides when the computation ends)."""
    import time

    while not os.path.exists(path):
        time.sleep(0.01)
    return "done"


@pytest.fixture
def pool(settings):
    settings.COMPUTE_POOL_WORKERS = 1
    settings.COMPUTE_POOL_DEADLINE_SECONDS = 60
    yield
    compute_pool.shutdown()


def test_pool_process_killed_mid_task_is_replaced_and_said(pool):
    assert compute_pool.call("os.getpid") != os.getpid()  # a pool process answers
    with pytest.raises(compute_pool.PoolFailed):
        compute_pool.call("tests.studies.test_compute_pool._die")
    assert compute_pool.call("os.getpid") != os.getpid()  # a new pool answers the next call


def test_exception_in_the_pool_is_raised_in_the_caller(pool):
    with pytest.raises(ModuleNotFoundError):
        compute_pool.call("no_such_module_here.function")


def test_answer_past_the_deadline_is_computing_and_the_retry_gets_the_same_one(pool, settings, tmp_path):
    settings.COMPUTE_POOL_DEADLINE_SECONDS = 0.01
    flag = str(tmp_path / "go")
    with pytest.raises(compute_pool.Computing):
        compute_pool.call("tests.studies.test_compute_pool._wait_for", flag)
    assert len(compute_pool._pending) == 1
    (tmp_path / "go").touch()
    settings.COMPUTE_POOL_DEADLINE_SECONDS = 60
    assert compute_pool.call("tests.studies.test_compute_pool._wait_for", flag) == "done"
    assert not compute_pool._pending  # the same computation answered, not a second one


@pytest.mark.parametrize(("failure", "status"), [(compute_pool.Computing, 202), (compute_pool.PoolFailed, 503)])
def test_page_and_api_say_computing_or_failed(client, user, monkeypatch, failure, status):
    def not_ready(*args):
        raise failure("x")

    monkeypatch.setattr(compute_pool, "inline", lambda: False)
    monkeypatch.setattr(compute_pool, "_wait", not_ready)
    client.force_login(user)
    from tests.factories import ExperimentFactory

    experiment = ExperimentFactory(owner=user)
    page = client.get(f"/experiments/{experiment.slug}/report/")
    assert page.status_code == status and page["Retry-After"]
    body = page.content.decode()
    if status == 202:
        assert 'http-equiv="refresh"' in body and 'id="computing"' in body
    else:
        assert 'http-equiv="refresh"' not in body and 'id="computing-failed"' in body
    api = client.get(f"/api/experiments/{experiment.slug}/report/")
    assert api.status_code == status and api["Content-Type"] == "application/problem+json"
    assert api.json()["status"] == status


def test_writes_and_the_pool_process_itself_run_in_place(client, user, monkeypatch):
    monkeypatch.setattr(compute_pool, "_wait", lambda *a: pytest.fail("sent to the pool"))
    monkeypatch.setattr(compute_pool, "IN_POOL", True)
    client.force_login(user)
    from tests.factories import ExperimentFactory

    experiment = ExperimentFactory(owner=user)
    assert client.get(f"/experiments/{experiment.slug}/report/").status_code == 200


@pytest.fixture
def pool_here(settings, monkeypatch):
    """The pool's round trip (the request as plain data, rebuilt, answered as plain data) in this process,
    so the test's own rows are visible."""
    settings.COMPUTE_POOL_WORKERS = 1

    def here(key, path, args):
        import pickle

        monkeypatch.setattr(compute_pool, "IN_POOL", True)
        try:
            return pickle.loads(pickle.dumps(compute_pool._run(path, pickle.loads(pickle.dumps(args)))))
        finally:
            monkeypatch.setattr(compute_pool, "IN_POOL", False)

    monkeypatch.setattr(compute_pool, "_wait", here)


def test_pool_page_shows_the_waiting_message(pool_here, user):
    from django.contrib.messages import get_messages
    from django.contrib.messages.storage.fallback import FallbackStorage
    from django.contrib.sessions.backends.db import SessionStore
    from django.test import RequestFactory

    from studies.reports.views import report_page
    from tests.factories import ExperimentFactory

    experiment = ExperimentFactory(owner=user)
    request = RequestFactory().get(f"/experiments/{experiment.slug}/report/")
    request.user, request.session = user, SessionStore()
    request._messages = FallbackStorage(request)
    request._messages.add(20, "Rater excluded.")
    page = report_page(request, experiment=experiment.slug)
    assert page.status_code == 200 and "Rater excluded." in page.content.decode()
    assert get_messages(request).used  # shown there: not shown again on the next page


def test_pool_file_leaves_the_waiting_message_for_the_next_page(pool_here, user):
    from django.contrib.messages import get_messages
    from django.contrib.messages.storage.fallback import FallbackStorage
    from django.contrib.sessions.backends.db import SessionStore
    from django.test import RequestFactory

    from studies.reports.views import report_download
    from tests.factories import ExperimentFactory

    experiment = ExperimentFactory(owner=user)
    request = RequestFactory().get(f"/experiments/{experiment.slug}/report.csv")
    request.user, request.session = user, SessionStore()
    request._messages = FallbackStorage(request)
    request._messages.add(20, "Rater excluded.")
    download = report_download(request, "csv", experiment=experiment.slug)
    assert download.status_code == 200 and download["Content-Type"].startswith("text/csv")
    assert not get_messages(request).used
    assert [str(m) for m in get_messages(request)] == ["Rater excluded."]


def test_answers_are_kept_apart_per_user_and_per_api_token(client, user, other_user, monkeypatch, settings):
    from tests.factories import ExperimentFactory, token_for

    settings.COMPUTE_POOL_WORKERS = 1
    keys = []

    def record(key, path, args):
        keys.append(key)
        raise compute_pool.Computing(path)

    monkeypatch.setattr(compute_pool, "_wait", record)
    experiment = ExperimentFactory(owner=user)
    url = f"/api/experiments/{experiment.slug}/report/"
    for someone in (user, other_user):
        assert client.get(url, HTTP_AUTHORIZATION=f"Token {token_for(someone)}").status_code == 202
        client.force_login(someone)
        assert client.get(url).status_code == 202
        client.logout()
    assert len(set(keys)) == 4  # no one is handed an answer computed for another


def test_streamed_export_comes_back_as_a_file_the_web_process_streams(pool_here, client, user, settings):
    from tests.factories import ExperimentFactory

    experiment = ExperimentFactory(owner=user)
    client.force_login(user)
    pooled = client.get(f"/experiments/{experiment.slug}/export.csv")
    assert pooled.status_code == 200 and pooled.streaming and pooled["Content-Type"].startswith("text/csv")
    body = b"".join(pooled.streaming_content)
    settings.COMPUTE_POOL_WORKERS = 0
    inline = client.get(f"/experiments/{experiment.slug}/export.csv")
    assert body == b"".join(inline.streaming_content) and body.startswith(b"experiment,")
