"""The demo's study with onboarding: a Likert study on the demo dialogues (Prolific) whose raters first
answer three practice items (an exact value, a range, an ordering) with a pass mark of 2 of 3. Eight
simulated participants go through the practice with the real services: six pass and rate (the report
has ratings and a Practice section), two fail and hold no slot. A person can try the practice through
the Prolific-style link the command prints."""
from __future__ import annotations

import numpy as np
from django.db import transaction

from studies.authoring import services as authoring
from studies.authoring.demo import DEMO_CORPUS, DEMO_FILE, SYSTEM_EFFECT
from studies.corpora import services as corpus_imports
from studies.designs import design_for
from studies.designs.ratings import field_name
from studies.models import Corpus, Experiment, PracticeAttempt, Study
from studies.onboarding import selectors, services
from studies.rating import answers as answering

DEMO_ONBOARDING_EXPERIMENT = "demo-onboarding"
DEMO_ONBOARDING_STUDY = "demo-onboarding-likert"
PRACTICE = [
    {"context": "A: Could you recommend a film for tonight?\nB: What kind of films do you like?",
     "responses": ["Something funny, maybe a comedy from the nineties.", "The table is made of wood seven."],
     "rules": [{"response": 2, "max": 2}],
     "explanation": "Response B has nothing to do with the conversation, so it gets **1 or 2** on every question."},
    {"context": "A: I finally passed my driving test!",
     "responses": ["Congratulations! How long did you practise for?", "ok"],
     "rules": [{"greater": 1, "than": 2}],
     "explanation": "Both are on topic, but A is friendlier and keeps the conversation going: rate **A above B**."},
    {"context": "A: What time does the museum open?\nB: Which day are you going?",
     "responses": ["On Saturday morning, with my sister.", "Museums are buildings."],
     "rules": [{"response": 1, "min": 4}],
     "explanation": "Response A answers the question exactly: **4 or more** on every question."},
]
# Simulated participants: their answers (A, B) to the three practice items; the last two fail.
PARTICIPANTS = [((5, 1), (5, 2), (5, 1)), ((4, 2), (5, 3), (6, 1)), ((6, 1), (4, 4), (5, 2)),
                ((5, 2), (6, 2), (4, 1)), ((4, 1), (5, 1), (3, 1)), ((5, 1), (5, 2), (6, 2)),
                ((4, 4), (3, 3), (3, 2)), ((3, 4), (2, 2), (5, 1))]


def _corpus(owner) -> Corpus:
    corpus = Corpus.objects.filter(slug=DEMO_CORPUS).first()
    if corpus is None:
        with DEMO_FILE.open("rb") as stream:
            corpus = corpus_imports.dialogues_import(stream=stream, source_name=DEMO_FILE.name, corpus_slug=DEMO_CORPUS,
                                                     owner=owner).corpus
    return corpus


@transaction.atomic
def onboarding_demo_load(*, owner, seed: int = 24) -> Experiment | None:
    """Create the onboarding demo (None when it is already there: idempotent)."""
    if Experiment.objects.filter(slug=DEMO_ONBOARDING_EXPERIMENT).exists():
        return None
    experiment = authoring.experiment_create(
        owner=owner, title="Demo: rater onboarding (practice, then a pass mark)", slug=DEMO_ONBOARDING_EXPERIMENT,
        description="Raters answer three practice items with feedback; 2 of 3 to go on.")
    study = authoring.study_create(
        experiment=experiment, title="Demo Likert with practice", design="likert", slug=DEMO_ONBOARDING_STUDY,
        raters_per_item=10, items_per_assignment=6, platform=Study.Platform.PROLIFIC,
        instructions="Read each conversation, then judge the responses that could come next. You start with three "
                     "practice items and see after each how we would have answered.",
        platform_config={"close_when_complete": False, "completion_code": "CDEMO24", "screened_out_code": "CSCREEN24"})
    authoring.study_items_build(study=study, corpus=_corpus(owner), systems=["seq2seq", "hred", "thred"])
    for item in PRACTICE:
        services.practice_item_create(study=study, **item)
    services.onboarding_configure(study=study, pass_mark=2)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    _simulate(study, np.random.default_rng(seed))
    return experiment


def _simulate(study: Study, rng) -> None:
    criteria = list(study.criteria.all())
    items = selectors.practice_items(study)
    for n, answers in enumerate(PARTICIPANTS, 1):
        attempt = services.practice_attempt_begin(study=study, platform=Study.Platform.PROLIFIC,
                                                  external_id=f"demo-participant-{n:02d}", acceptance_id=f"demo-session-{n:02d}")
        services.practice_attempt_consent(attempt=attempt)  # consent first, as the rater's pages ask it
        for item, pair in zip(items, answers, strict=True):
            post = {field_name(rid, c.name, item.response_ids): str(v)
                    for c in criteria for rid, v in zip(item.response_ids, pair, strict=True)}
            services.practice_answer(attempt=attempt, item=item, post=post)
        attempt.refresh_from_db()
        if attempt.status != PracticeAttempt.Status.PASSED:
            continue
        assignment = services.practice_continue(attempt=attempt)  # carries the consent given before the practice
        bias = rng.normal(0, 0.3)
        for slot in assignment.assignment_items.select_related("item"):
            systems = dict(slot.item.item_responses.values_list("response_id", "response__system__name"))
            quality = {(r, c.name): SYSTEM_EFFECT.get(systems.get(r), 0.0) + bias + rng.normal(0, 0.6)
                       for c in criteria for r in slot.response_order}
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, seconds=float(rng.gamma(4.0, 10.0)),
                                     answers=design_for(study).answers_simulate(study=study, slot=slot, quality=quality,
                                                                                reference_quality={}, rng=rng,
                                                                                criteria=criteria))
        answering.assignment_submit(assignment=assignment, total_seconds=float(rng.normal(20 * 60, 4 * 60)))
