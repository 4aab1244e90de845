"""Cold scoring with the MiniLM cosines (DSTC9's 54k turns took 16.5 minutes): ``score_set`` embeds
every distinct text of a set once, ahead, in one pass, and the scores equal batch-by-batch scoring to 1e-6;
torch's CPU threads follow the CPUs this process may use, less the load, unless CONCORD_TORCH_THREADS says."""
import numpy as np
import pytest

from metrics import registry
from metrics.benchmarking.benchmarks import score_set
from metrics.benchmarking.judgments import JudgedItem, JudgmentSet
from ml import devices

DIALOGUE = ["Hi, how are you?", "Fine, and you?", "Tired: I worked all night on the boat.", "What boat?"]


def dialogue_set() -> JudgmentSet:
    """Ten dialogues that share their opening turns, as contexts recur across systems' responses."""
    items = [JudgedItem([*DIALOGUE[: 2 + k % 3], f"reply number {k}", "ok" if k % 2 else ""], group=str(k))
             for k in range(10)]
    return JudgmentSet("d", "dstc9", items)


def turn_set() -> JudgmentSet:
    items = [JudgedItem(DIALOGUE[: 1 + k % 3], f"answer {k % 4}", group=str(k % 3)) for k in range(12)]
    return JudgmentSet("t", "fed-turn", items)


@pytest.fixture
def forward_rows(monkeypatch):
    """How many texts reach the encoder, per call of ``ml.embedding.embed``."""
    import ml.embedding

    calls: list[int] = []
    real = ml.embedding.embed

    def counted(encoder, inputs, *args, **kwargs):
        calls.append(len({tuple(i["input_ids"]) for i in inputs}))
        return real(encoder, inputs, *args, **kwargs)

    monkeypatch.setattr(ml.embedding, "embed", counted)
    return calls


@pytest.mark.parametrize(("key", "make"), [("cosine_turns", dialogue_set), ("coherence_turns", dialogue_set),
                                           ("cosine_last", turn_set), ("cosine_context", turn_set),
                                           ("coherence", turn_set)])
def test_prepared_scores_equal_batch_by_batch_scores_and_each_text_is_embedded_once(key, make, forward_rows):
    judgments = make()
    before = score_set(registry.implementation(key), judgments, batch=3, prepare=False)
    batches = len(forward_rows)
    forward_rows.clear()
    progress: list[int] = []
    after = score_set(registry.implementation(key), judgments, batch=3, on_progress=progress.append)
    assert np.abs(after - before).max() <= 1e-6
    # one ahead pass per way of cutting texts, then nothing: every text was embedded before scoring
    assert batches > len(forward_rows) and len(forward_rows) <= 2
    assert progress == sorted(progress) and progress[-1] == len(judgments.items)


def test_a_text_prepare_did_not_see_is_embedded_when_scored():
    from metrics.implementations.base import ScoringInput

    judgments = turn_set()
    inputs = [ScoringInput(turns=i.turns, response=i.response or "") for i in judgments.items]
    expected = score_set(registry.implementation("cosine_last"), judgments, prepare=False)
    metric = registry.implementation("cosine_last")
    metric.prepare(inputs=inputs[:2])  # some texts ahead, the others embedded as they come
    assert np.abs(np.array(metric.score(inputs)) - expected).max() <= 1e-6


def test_cpu_threads_follow_the_free_cpus_and_the_environment(monkeypatch):
    monkeypatch.delenv(devices.THREADS_ENVIRONMENT, raising=False)
    monkeypatch.setattr(devices.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert devices.cpu_threads(load=0.0, default=4) == 4
    assert devices.cpu_threads(load=0.0, default=2) == 2  # never above torch's own count
    assert devices.cpu_threads(load=2.6, default=4) == 1
    assert devices.cpu_threads(load=40.0, default=4) == 1  # at least one
    monkeypatch.setenv(devices.THREADS_ENVIRONMENT, "3")
    assert devices.cpu_threads(load=40.0, default=4) == 3
    monkeypatch.setenv(devices.THREADS_ENVIRONMENT, "many")
    with pytest.raises(ValueError, match="CONCORD_TORCH_THREADS must be a whole number"):
        devices.cpu_threads()


@pytest.mark.django_db
def test_a_scoring_run_embeds_each_text_once_ahead_with_the_scores_of_batch_by_batch(make_study, forward_rows):
    """``score_metric``, the API and the page score through one loop (``services.scoring_run_execute``), which
    now embeds ahead as ``benchmark_metric`` does: the encoder sees each text in one pass before the batches,
    and the stored scores equal scoring without the ahead pass."""
    from metrics.models import MetricScore
    from metrics.scoring import services
    from metrics.scoring.services import scoring_inputs
    from studies.models import Response

    study = make_study("likert")
    model = services.metric_model_default(key="cosine_last")
    run = services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))
    assert run.status == "done" and run.total > 3
    assert 1 <= len(forward_rows) <= 2  # the ahead pass; every batch then found its texts embedded
    stored = dict(MetricScore.objects.filter(metric_model=model).values_list("response_id", "value"))
    responses = list(Response.objects.filter(pk__in=stored).select_related("conversation").order_by("pk"))
    plain = registry.implementation("cosine_last", model.config).score(scoring_inputs(responses))
    assert np.abs(np.array([stored[r.pk] for r in responses]) - np.array(plain)).max() <= 1e-6
