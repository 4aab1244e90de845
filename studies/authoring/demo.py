"""The demo experiment: the seed study's four conditions on a dozen self-written conversations,
rated by 20 simulated raters through the same services real raters use.

Simulated scores come from a small latent model so that reports have structure to find:
quality = system effect + item noise; each rater adds a bias and noise; each design turns the
result into its own scale (Likert points, magnitudes relative to the anchor, ranks)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction

from studies.authoring import services as authoring
from studies.corpora import services as corpus_imports
from studies.designs import design_for
from studies.models import Experiment, Rater, Study
from studies.rating import answers as answering
from studies.rating import entry as rater_entry

DEMO_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "demo_dialogues.jsonl"
DEMO_EXPERIMENT = "demo-seed-study"
DEMO_CORPUS = "demo-dialogues"
DEMO_USER, DEMO_PASSWORD = "researcher", "concord-demo"
RATERS_PER_CONDITION = 5
SYSTEM_EFFECT = {"seq2seq": -0.9, "hred": -0.3, "thred": 0.4, "human": 0.9}
CRITERION_SHIFT = {"readability": 0.3, "coherence": 0.0}
CONDITIONS = {"likert": 0.7, "rme": 0.45, "bme": 0.5, "bws": 0.6}  # the seed study's designs, each rater's noise SD


def demo_user():
    user, created = get_user_model().objects.get_or_create(
        username=DEMO_USER, defaults={"is_staff": True, "is_superuser": True, "email": "researcher@example.org"}
    )
    if created:
        user.set_password(DEMO_PASSWORD)
        user.save(update_fields=["password"])
    return user


def _latent(item_responses, rng) -> dict[tuple[int, str], float]:
    return {
        (response_id, criterion): SYSTEM_EFFECT.get(system, 0.0) + CRITERION_SHIFT[criterion] + rng.normal(0, 0.35)
        for response_id, system in item_responses for criterion in CRITERION_SHIFT
    }


def _answers(study: Study, slot, latent, reference_latent, bias: float, noise: float, rng) -> dict:
    """The latent quality as this rater sees it (bias and noise added), turned into the design's own
    answer (``StudyDesign.answers_simulate``: Likert points, magnitudes relative to the anchor, ranks)."""
    criteria = list(study.criteria.all())
    seen = {(r, c.name): latent[(r, c.name)] + bias + rng.normal(0, noise)
            for c in criteria for r in slot.response_order}
    return design_for(study).answers_simulate(
        study=study, slot=slot, quality=seen, reference_quality={c.name: reference_latent[(slot.item_id, c.name)]
                                                                 for c in criteria}, rng=rng, criteria=criteria)


@transaction.atomic
def demo_load(*, seed: int = 2019) -> Experiment | None:
    """Create the demo experiment with simulated ratings; None if it is already there (idempotent)."""
    if Experiment.objects.filter(slug=DEMO_EXPERIMENT).exists():
        return None
    owner = demo_user()
    from studies.models import Corpus

    corpus = Corpus.objects.filter(slug=DEMO_CORPUS).first()
    if corpus is None:
        with DEMO_FILE.open("rb") as stream:
            corpus = corpus_imports.dialogues_import(stream=stream, source_name=DEMO_FILE.name, corpus_slug=DEMO_CORPUS,
                                               owner=owner).corpus
    experiment = authoring.experiment_create(
        owner=owner, title="Demo: rating designs compared (after Santhanam & Shaikh 2019)", slug=DEMO_EXPERIMENT,
        description="Four between-subjects conditions on 12 conversations; 20 simulated raters.",
    )
    rng = np.random.default_rng(seed)
    for design in CONDITIONS:
        study = authoring.study_create(
            experiment=experiment, title=f"Demo {design.upper()}", design=design, slug=f"demo-{design}",
            raters_per_item=RATERS_PER_CONDITION, items_per_assignment=12,
            instructions="Read each conversation, then judge the responses that could come next.",
            platform_config={"close_when_complete": False},  # stays published once the simulated raters are in
        )
        authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"],
                                   reference_system="human")
        if design_for(study).anchor_from_metric:
            # Stand-in for a metric's score of the reference (BME); the metrics app fills real ones.
            values = {pk: float(rng.integers(40, 160)) for pk in study.items.values_list("pk", flat=True)}
            authoring.study_item_reference_values_set(study=study, values=values)
        authoring.study_publish(study=study)
    _simulate_ratings(experiment, rng)
    return experiment


def _simulate_ratings(experiment: Experiment, rng) -> None:
    from studies.models import StudyItemResponse

    item_responses: dict[int, list[tuple[int, str]]] = {}
    for item_id, response_id, system in StudyItemResponse.objects.filter(item__study__experiment=experiment).values_list(
            "item_id", "response_id", "response__system__name"):
        item_responses.setdefault(item_id, []).append((response_id, system))
    latent: dict[tuple[int, str], float] = {}
    reference_latent: dict[tuple[int, str], float] = {}
    for study in experiment.studies.all():
        for item in study.items.all():
            latent.update(_latent(item_responses[item.pk], rng))
            for criterion in CRITERION_SHIFT:
                reference_latent[(item.pk, criterion)] = SYSTEM_EFFECT["human"] + CRITERION_SHIFT[criterion]
    number = 0
    for study in experiment.studies.order_by("id"):
        noise = CONDITIONS[study.design]
        for _ in range(RATERS_PER_CONDITION):
            number += 1
            rater, _ = Rater.objects.get_or_create(platform=Study.Platform.INVITE, external_id=f"demo-rater-{number:02d}")
            assignment = rater_entry.assignment_start(study=study, rater=rater, seed=number)
            bias = rng.normal(0, 0.3)
            for slot in assignment.assignment_items.select_related("item"):
                answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                        answers=_answers(study, slot, latent, reference_latent, bias, noise, rng),
                                        seconds=float(rng.gamma(4.0, 12.0)))
            answering.assignment_submit(
                assignment=assignment, total_seconds=float(rng.normal(35 * 60, 8 * 60)),
                questionnaire={"prior_rating_experience": bool(rng.random() < 0.4),
                               "prior_agent_experience": bool(rng.random() < 0.8)},
            )
