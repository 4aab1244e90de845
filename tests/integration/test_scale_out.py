"""Two web nodes and two Celery workers on one PostgreSQL and one Redis (benchmarks/scale_out.py, short):
one node (gunicorn master and workers) and the busier worker are SIGKILLed mid-run; the raters and chatters
of the dead node go on through the other, its in-flight chat calls are resumed there once their lease in the
shared cache ends, the dead worker's self-chat runs are recovered, and nothing acknowledged is lost.

The benchmark makes its own database beside the test database (``<name>_scaleout``) and empties the
broker's and the cache's Redis databases at its start and end."""
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]


def test_a_killed_web_node_and_worker_lose_nothing(tmp_path):
    if not os.environ.get("CACHE_URL", "").startswith(("redis://", "rediscache://")):
        pytest.skip("the scale-out run needs CACHE_URL=rediscache://... (a Redis database of its own)")
    database = urlsplit(os.environ["DATABASE_URL"])
    server = f"{database.scheme}://{database.netloc}"
    output = tmp_path / "scale_out.json"
    command = [sys.executable, "benchmarks/scale_out.py", "--raters", "20", "--chatters", "4", "--seconds", "12",
               "--bot-latency", "1", "--selfchats", "6", "--job-lease", "4", "--drain-seconds", "60", "--postgres", server,
               "--database", f"{database.path.strip('/')}_scaleout", "--broker-url", os.environ["CELERY_BROKER_URL"],
               "--cache-url", os.environ["CACHE_URL"], "--output", str(output)]
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(output.read_text())
    integrity, killed, nodes = figures["integrity"], figures["killed"], figures["nodes"]
    assert integrity["lost"] == dict.fromkeys(integrity["lost"], 0), json.dumps(integrity)[:3000]
    assert killed["web_node"] == "b" and killed["celery_worker"] in (1, 2)
    # the dead node's clients went on through the other: ratings after the kill, all on node a
    assert nodes["a"]["after_kill"]["rated_items"] > 0 and nodes["b"]["after_kill"]["requests"] == 0
    assert figures["client_side"]["retried_requests"] > 0  # requests the dying node cut, answered by the other
    assert figures["rating_cycle_ms"]["after"]["n"] > 0
    assert integrity["chat"]["messages_acknowledged"] > 0 and integrity["chat"]["chat_ratings_acknowledged"] == 4
    assert integrity["likert"]["acknowledged_ratings"] > 0
    assert figures["selfchat"]["runs"] == 6 and figures["selfchat"]["unfinished_by_status"] == {}
