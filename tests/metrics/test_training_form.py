"""/metrics/'s training form offers the metrics their classes declare trainable by an ml trainer
(``Trainable.trainer``), with their stages as ``Trainable.stage_labels`` names them: a metric registered the
way docs/architecture.md's walkthrough adds one appears there with nothing else changed."""
import re
import sys
from html import unescape

import pytest

import metrics.implementations
from metrics import registry
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

TOY = '''
from metrics.implementations.base import MetricImplementation, Trainable


class ToyCoherence(MetricImplementation):
    key = "toy_coherence"
    name = "Toy coherence (for a test)"
    kind = "learned"
    training = Trainable(stages=("warmup", "tune"), runner="metrics.training.stages", trainer="ml.trainers.quantidce",
                         stage_labels={"warmup": "a first pass"})
'''


@pytest.fixture
def toy_trainable(tmp_path, monkeypatch):
    (tmp_path / "toy_coherence.py").write_text(TOY)
    monkeypatch.setattr(metrics.implementations, "__path__", [*metrics.implementations.__path__, str(tmp_path)])
    registry._load.cache_clear()
    yield
    registry._load.cache_clear()
    sys.modules.pop("metrics.implementations.toy_coherence", None)


def _options(page: str, select_id: str) -> list[tuple[str, str]]:
    select = re.search(rf'<select id="{select_id}"[^>]*>(.*?)</select>', page, re.S).group(1)
    return [(value, unescape(text)) for value, text in re.findall(r'<option value="([^"]*)">([^<]*)</option>', select)]


def _training_form(client) -> str:
    client.force_login(UserFactory(username="staff-trainer", is_staff=True))
    return client.get("/metrics/").content.decode()


def test_the_form_lists_every_metric_an_ml_trainer_trains_with_its_declared_stages(client):
    page = _training_form(client)
    expected = [(key, registry.trainable(key).label or registry.implementation_class(key).name)
                for key in registry.trainer_keys()]
    assert _options(page, "train-metric") == expected
    stages = _options(page, "train-stage")
    assert [value for value, _ in stages] == [s for key in registry.trainer_keys() for s in registry.trainable(key).stages]
    for key in registry.trainer_keys():
        spec = registry.trainable(key)
        for n, stage in enumerate(spec.stages, 1):
            assert (stage, f"{spec.label} {n} · {spec.stage_labels[stage]}") in stages
    untrained = [key for key in registry.all_metrics() if key not in registry.trainer_keys()]
    assert untrained and not {key for key, _ in _options(page, "train-metric")} & set(untrained)


def test_a_newly_registered_trainable_metric_appears_on_the_form(toy_trainable, client):
    assert "toy_coherence" in registry.trainer_keys()
    page = _training_form(client)
    assert ("toy_coherence", "Toy coherence (for a test)") in _options(page, "train-metric")
    stages = _options(page, "train-stage")
    # a stage it names is shown by its label, one it does not by its key
    assert ("warmup", "Toy coherence (for a test) 1 · a first pass") in stages
    assert ("tune", "Toy coherence (for a test) 2 · tune") in stages
    assert "Toy coherence (for a test)</h2>" in page


def test_without_it_the_form_does_not_offer_it(client):
    registry._load.cache_clear()
    assert "toy_coherence" not in _training_form(client)
