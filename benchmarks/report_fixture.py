"""A seven-condition experiment with every design, for the report benchmarks: Likert, RME, BME and BWS
on responses, best-worst tuples of single responses, pairwise A/B choices, and Likert on whole
dialogues, about ``judgments / 7`` judgments each (a judgment: one rating, one tuple's best-and-worst
pick, or one A/B choice, per criterion), written through the services real raters use.

Simulated answers follow the demo's latent model (``studies.authoring.demo``): quality = system effect +
item noise; each rater adds a bias and noise, and each design turns that into its own scale."""
from __future__ import annotations

import io
import json
import math

import numpy as np

SYSTEMS = {"seq2seq": -0.9, "hred": -0.3, "thred": 0.4}
REFERENCE = "human"
CONVERSATIONS = 40
CRITERIA = ("readability", "coherence")
CONDITIONS = (  # (slug suffix, design, unit, items per assignment)
    ("likert", "likert", "response", 20), ("rme", "rme", "response", 20), ("bme", "bme", "response", 20),
    ("bws", "bws", "response", 20), ("bws-tuples", "bws_tuples", "response", 20),
    ("pairwise", "pairwise", "response", 30), ("dialogue-likert", "likert", "dialogue", 20),
)
EXPERIMENT = "report-bench-seven"


def corpus_lines(n: int = CONVERSATIONS) -> bytes:
    header = {"concord": "dialogues/1", "systems": [*SYSTEMS, REFERENCE], "reference": REFERENCE}
    rows = [json.dumps(header)]
    for i in range(n):
        rows.append(json.dumps({
            "id": f"bench-{i:03d}",
            "turns": [f"Did you see the match on Saturday, number {i}?", f"I did, the second half was something ({i})."],
            "responses": {"seq2seq": f"yes yes the match {i}", "hred": f"It was a good game {i}.",
                          "thred": f"The second half turned it around, didn't it ({i})?",
                          REFERENCE: f"Absolutely, that comeback in the last ten minutes ({i}) was unbelievable."}}))
    return ("\n".join(rows) + "\n").encode()


def _judgments(study) -> int:
    from studies.models import BestWorstChoice, Comparison, Rating

    return sum(model.objects.filter(assignment__study=study).count() for model in (Rating, BestWorstChoice, Comparison))


def _answers(study, slot, quality, bias: float, rng) -> tuple[str, dict]:
    """(the service to call, its answers) for one screen."""
    seen = {c: {r: quality.get(r, 0.0) + bias + rng.normal(0, 0.6) for r in slot.response_order} for c in CRITERIA}
    if study.design == "likert":
        return "ratings", {c: {r: int(np.clip(round(3.5 + 1.4 * q), 1, 6)) for r, q in s.items()} for c, s in seen.items()}
    if study.design in ("rme", "bme"):
        anchor = slot.item.reference_value or 100.0
        return "ratings", {c: {r: int(np.clip(round(anchor * 2.0 ** (1.5 * (q - 0.9))), 1, 999)) for r, q in s.items()}
                           for c, s in seen.items()}
    if study.design == "bws":
        return "ratings", {c: {r: rank + 1 for rank, r in enumerate(sorted(s, key=s.get, reverse=True))}
                           for c, s in seen.items()}
    if study.design == "bws_tuples":
        return "tuples", {c: {"best": max(s, key=s.get), "worst": min(s, key=s.get)} for c, s in seen.items()}
    left, right = slot.response_order
    return "pairs", {c: {"choice": "tie" if abs(s[left] - s[right]) < 0.1 else ("left" if s[left] > s[right] else "right"),
                         "reason": ""} for c, s in seen.items()}


def build(*, owner, judgments: int = 10_000, seed: int = 2026):
    """The experiment (created once; an existing one is returned as it is)."""
    from studies.authoring import services as authoring
    from studies.corpora import services as corpora
    from studies.models import Experiment, Response
    from studies.rating import answers as answering
    from studies.rating import entry

    if (existing := Experiment.objects.filter(slug=EXPERIMENT).first()) is not None:
        return existing
    rng = np.random.default_rng(seed)
    corpus = corpora.dialogues_import(stream=io.BytesIO(corpus_lines()), source_name="report-bench.jsonl",
                                      corpus_slug="report-bench", owner=owner).corpus
    effect = {**SYSTEMS, REFERENCE: 0.9}
    quality = {pk: effect[system] + rng.normal(0, 0.35)
               for pk, system in Response.objects.filter(conversation__corpus=corpus).values_list("pk", "system__name")}
    quality.update({cid: rng.normal(0, 0.6) for cid in corpus.conversations.values_list("pk", flat=True)})
    experiment = authoring.experiment_create(owner=owner, title="Report benchmark: seven conditions, every design",
                                             slug=EXPERIMENT)
    per_condition = math.ceil(judgments / len(CONDITIONS))
    number = 0
    for suffix, design, unit, per_assignment in CONDITIONS:
        study = authoring.study_create(
            experiment=experiment, title=f"Bench {suffix}", design=design, slug=f"{EXPERIMENT}-{suffix}", unit=unit,
            raters_per_item=1000, items_per_assignment=per_assignment,
            platform_config={"close_when_complete": False})
        reference = REFERENCE if design in ("rme", "bme", "bws") and unit == "response" else None
        authoring.study_items_build(study=study, corpus=corpus, systems=list(SYSTEMS) if unit == "response" else None,
                                    reference_system=reference)
        if design == "bme":
            authoring.study_item_reference_values_set(
                study=study, values={pk: float(rng.integers(40, 160)) for pk in study.items.values_list("pk", flat=True)})
        authoring.study_publish(study=study)
        while _judgments(study) < per_condition:
            number += 1
            rater = entry.rater_get_or_create(platform="invite", external_id=f"bench-rater-{number:04d}")
            assignment = entry.assignment_start(study=study, rater=rater, seed=number)
            bias = rng.normal(0, 0.3)
            for slot in assignment.assignment_items.select_related("item").order_by("position"):
                _, answers = _answers(study, slot, quality, bias, rng)
                # one answer service for every design (the design parses and stores its own answers)
                answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers,
                                         seconds=float(rng.gamma(4.0, 12.0)))
            answering.assignment_submit(assignment=assignment, total_seconds=float(rng.normal(30 * 60, 6 * 60)),
                                        questionnaire={"prior_rating_experience": bool(rng.random() < 0.4),
                                                       "prior_agent_experience": bool(rng.random() < 0.8)})
    return experiment


def judgments_per_condition(experiment) -> dict[str, int]:
    return {study.slug.removeprefix(f"{EXPERIMENT}-"): _judgments(study) for study in experiment.studies.order_by("id")}
