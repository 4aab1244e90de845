"""Every registered metric through one harness, taken from the registry, so a new metric is
checked without editing this file: what it declares on its class is coherent, it registers as a Metric row,
a heuristic scores a study through a scoring run (one score per target, finite and inside its declared
range, a second run adds none) and a learned one without a trained model refuses with a message naming
``path``; a trainable one's runner and recipes are complete."""
import importlib
import math

import pytest

from metrics import registry
from metrics.implementations.base import MetricImplementation, ScoringInput
from metrics.models import Metric, MetricScore
from metrics.scoring import services

pytestmark = pytest.mark.django_db

KEYS = list(registry.all_metrics())
CONTEXT = ScoringInput(turns=["Where is the station?", "Two streets down, next to the bakery."],
                       response="Thanks, I will walk there after lunch.")


def test_the_registry_finds_every_metric_module_without_a_list():
    defined = {cls.key for cls in registry.all_metrics().values()}
    assert set(KEYS) == defined and len(KEYS) >= 9
    assert {"readability", "coherence", "quantidce", "self_eval", "mdd_eval", "cosine_turns"} <= set(KEYS)
    assert all(issubclass(cls, MetricImplementation) for cls in registry.all_metrics().values())


@pytest.mark.parametrize("key", KEYS)
def test_a_metric_declares_what_it_is_on_its_class(key):
    cls = registry.implementation_class(key)
    assert cls.key == key and cls.name and cls.level in {"turn", "dialogue"}
    assert cls.kind in {choice for choice, _ in Metric.Kind.choices}
    lo, hi = cls.range
    assert lo is None or hi is None or lo < hi
    assert (key in registry.heuristic_keys()) == (cls.kind == "heuristic")
    assert (key in registry.trainable_keys()) == (cls.training is not None)
    assert not (cls.baseline and cls.training is not None), "a baseline is untrained"
    row = services.metric_register(key=key)
    assert (row.key, row.name, row.level, row.kind, row.range_min, row.range_max) == (key, cls.name, cls.level, cls.kind, lo, hi)


@pytest.mark.parametrize("key", [k for k in KEYS if registry.implementation_class(k).training is not None])
def test_a_trainable_metric_names_a_runner_and_complete_recipes(key):
    spec = registry.trainable(key)
    runner = importlib.import_module(spec.runner)
    assert callable(runner.configure) and callable(runner.execute) and spec.stages
    assert {"default", "paper"} <= set(spec.recipes)
    for recipe in spec.recipes.values():
        assert recipe.summary and recipe.steps and recipe.steps[0].stage == spec.stages[0]
        earlier: set[str] = set()
        for step in recipe.steps:
            assert step.stage in spec.stages
            assert {s for s in (step.init_from, step.dataset) if s} <= earlier, "a step starts from an earlier one"
            earlier.add(step.stage)


@pytest.mark.parametrize("key", registry.heuristic_keys())
def test_a_heuristic_scores_a_study_once_per_target_inside_its_range(key, make_study):
    cls = registry.implementation_class(key)
    model = services.metric_model_default(key=key)
    assert (model.name, model.base_encoder, model.metric.key) == (cls.default_model_name(), cls.encoder, key)
    assert services.metric_model_default(key=key).pk == model.pk  # created once
    study = make_study("likert")
    run = services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))
    scores = list(MetricScore.objects.filter(metric_model=model).values_list("value", flat=True))
    assert run.status == "done" and run.total > 0 and run.done == run.total == len(scores)
    lo, hi = cls.range
    assert all(math.isfinite(v) and (lo is None or v >= lo - 1e-9) and (hi is None or v <= hi + 1e-9) for v in scores)
    again = services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))
    assert again.status == "done" and MetricScore.objects.filter(metric_model=model).count() == len(scores)


@pytest.mark.parametrize("key", registry.heuristic_keys())
def test_a_heuristic_scores_a_batch_in_order_and_an_empty_one(key):
    metric = registry.implementation(key)
    other = ScoringInput(turns=CONTEXT.turns, response="Purple elephants dance quietly on Mondays.")
    assert metric.score([]) == []
    pair = metric.score([CONTEXT, other])
    assert len(pair) == 2 and metric.score([other, CONTEXT]) == pytest.approx(pair[::-1], abs=1e-6)
    if metric.scores_conversations:
        dialogues = [[*CONTEXT.turns, CONTEXT.response], ["Hi.", "Hello!", "How are you?"]]
        assert len(metric.score_dialogues(dialogues)) == 2
    else:
        with pytest.raises(NotImplementedError, match="turn-level"):
            metric.score_dialogues([["Hi.", "Hello!"]])


@pytest.mark.parametrize("key", [k for k in KEYS if registry.implementation_class(k).kind == "learned"])
def test_a_learned_metric_without_a_trained_model_names_its_path(key):
    assert key not in registry.heuristic_keys()
    with pytest.raises(ValueError, match="path"):
        registry.implementation(key).score([CONTEXT])
