"""docs/architecture.md's "How to add a metric", followed: the module the walkthrough shows,
copied from the document into a folder that joins ``metrics/implementations/`` for this test, and nothing
else changed. The registry finds it, /metrics/ and the API list its default instance, and a scoring run
stores its values."""
import re
import sys
from pathlib import Path

import pytest

import metrics.implementations
from metrics import registry
from metrics.models import MetricScore
from metrics.scoring import services

pytestmark = pytest.mark.django_db

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def walkthrough_module() -> str:
    section = DOC.read_text().split("## How to add a metric", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture
def response_length(tmp_path, monkeypatch):
    (tmp_path / "response_length.py").write_text(walkthrough_module())
    monkeypatch.setattr(metrics.implementations, "__path__", [*metrics.implementations.__path__, str(tmp_path)])
    registry._load.cache_clear()
    yield
    registry._load.cache_clear()
    sys.modules.pop("metrics.implementations.response_length", None)


def test_the_walkthrough_module_is_the_whole_change(response_length, client, user, api, make_study):
    assert "response_length" in registry.all_metrics()
    assert registry.heuristic_keys().count("response_length") == 1
    services.builtin_metrics_register()  # what every `manage.py migrate` does after a deploy (post_migrate)
    client.force_login(user)
    page = client.get("/metrics/").content.decode()
    assert '<option value="response_length">response_length (heuristic, turn)</option>' in page
    listed = {m["name"]: m for m in api.get("/api/metrics/models/?limit=100").json()["results"]}
    assert listed["response_length"]["metric"] == "response_length" and listed["response_length"]["level"] == "turn"
    study = make_study("likert")
    model = services.metric_model_default(key="response_length")
    run = services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))
    stored = dict(MetricScore.objects.filter(metric_model=model).values_list("response__text", "value"))
    assert run.status == "done" and len(stored) == run.total > 0
    assert stored == {text: float(len(text.split())) for text in stored}


def test_without_the_module_the_metric_is_nowhere(client, user):
    registry._load.cache_clear()
    assert "response_length" not in registry.all_metrics()
    client.force_login(user)
    assert "response_length" not in client.get("/metrics/").content.decode()
