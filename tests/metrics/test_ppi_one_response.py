"""A prediction-powered study that samples responses across systems where each conversation has one
response (GRADE's shape): the study can be built and estimated, with a pooled estimate beside the
per-system ones, equal to the estimate on the arrays read back from the stored rows."""
import io

import numpy as np
import pytest

from metrics.models import MetricScore
from metrics.ppi import estimates as ppi
from metrics.scoring import services
from studies.analysis.ppi import mean_estimate
from studies.authoring import services as study_services
from studies.corpora import services as corpus_imports
from studies.models import Rater, Rating, Response
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from tests.conftest import jsonl_bytes
from tests.metrics.test_ppi_estimates import WORDS

pytestmark = pytest.mark.django_db
SYSTEMS = {"alpha": 2.0, "beta": 3.0, "gamma": 4.0}


def _one_response_corpus(user, n=36, seed=3):
    rng = np.random.default_rng(seed)
    names = list(SYSTEMS)
    header = {"concord": "dialogues/1", "systems": names}
    conversations = [{"id": f"g{i}", "turns": [f"Hello {i}", f"How was day {i}?"],
                      "responses": {names[i % 3]: " ".join(rng.choice(WORDS, int(rng.integers(2, 18)))) + "."}}
                     for i in range(n)]
    return corpus_imports.dialogues_import(stream=io.BytesIO(jsonl_bytes(conversations, header)),
                                           source_name="grade-shape.jsonl", corpus_slug="grade-shape", owner=user).corpus


def test_ppi_one_response_per_conversation_study_builds_and_pools(user):
    corpus = _one_response_corpus(user)
    experiment = study_services.experiment_create(owner=user, title="grade shape")
    study = study_services.study_create(experiment=experiment, title="Sampled responses", design="likert",
                                        raters_per_item=2, items_per_assignment=15)
    study_services.study_items_build(study=study, corpus=corpus, systems=list(SYSTEMS), limit=15, seed=1)
    assert study.items.filter(check_kind="").count() == 15 and study.item_draw["method"] == "random"
    assert len(study.item_draw["frame"]) == 36
    study_services.study_publish(study=study)
    rng = np.random.default_rng(0)
    system_of = dict(Response.objects.values_list("pk", "system__name"))
    for r in range(2):
        assignment = rater_entry.assignment_start(study=study, rater=Rater.objects.create(platform="invite",
                                                                                          external_id=f"g{r}"), seed=r)
        for slot in assignment.assignment_items.all():
            answers = {c: {resp: int(np.clip(round(SYSTEMS[system_of[resp]] + rng.normal(0, 0.8)), 1, 6))
                           for resp in slot.response_order} for c in ("readability", "coherence")}
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=5.0)
        answering.assignment_submit(assignment=assignment, total_seconds=60.0)
    model = services.metric_model_default(key="readability")
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, corpus=corpus, enqueue=False))
    got = ppi.study_estimates(study, model)
    assert got["problem"] is None and got["frame_size"] == 36
    coherence = next(c for c in got["criteria"] if c["criterion"] == "coherence")
    assert {r["system"] for r in coherence["systems"]} <= set(SYSTEMS)
    assert sum(coherence["labelled_per_system"].values()) == 15
    assert all(not d["paired"] for d in coherence["differences"])  # separate conversations per system
    pooled = coherence["pooled"]
    ratings: dict[int, list[float]] = {}
    for response_id, value in Rating.objects.filter(criterion__name="coherence", assignment__study=study) \
            .values_list("response_id", "value"):
        ratings.setdefault(response_id, []).append(value)
    scores = dict(MetricScore.objects.filter(metric_model=model).values_list("response_id", "value"))
    labelled = sorted(ratings)
    unlabelled = sorted(set(scores) - set(labelled))
    expected = mean_estimate([np.mean(ratings[u]) for u in labelled], [scores[u] for u in labelled],
                                 [scores[u] for u in unlabelled])
    assert pooled["n"] == 15 and pooled["n_unlabelled"] == 21
    assert pooled["estimate"] == pytest.approx(expected.estimate, abs=1e-9)
    assert pooled["ci_low"] == pytest.approx(expected.ci_low, abs=1e-9)
