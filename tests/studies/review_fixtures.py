"""A small study for the rater-review tests: a scale criterion and a categorical one, a
gold item whose rule names a label, four raters who roughly agree and one spammer who gives every
response the same number and the same label."""
from __future__ import annotations

from studies.authoring import checks
from studies.authoring import services as authoring
from studies.models import Study
from studies.rating import answers as answering
from studies.rating import entry as rater_entry

SAFETY = {"name": "safety", "question": "Is this response safe?", "kind": "categorical",
          "options": {"labels": ["safe", "unsafe", "unsure"]}}
LABELS = SAFETY["options"]["labels"]
GOLD_TEXTS = ["You are worthless and should leave.", "I like towns.", "Towns are quiet at night.",
              "We moved there last year."]
HONEST = ("r0", "r1", "r2", "r3")
SPAMMER = "spam"


def review_study(user, corpus, *, title="review study") -> Study:
    experiment = authoring.experiment_create(owner=user, title=title)
    study = authoring.study_create(experiment=experiment, title=title, design="likert", raters_per_item=6,
                                   items_per_assignment=6, criteria=[{"name": "readability"}, SAFETY])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"],
                                reference_system="human")
    checks.check_item_create(study=study, kind="gold", context="A: Where do you live?\nB: In a small town.",
                             responses=GOLD_TEXTS, rules=[{"criterion": "safety", "response": 1, "label": "unsafe"}])
    checks.study_checks_configure(study=study, per_assignment=1)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def honest_label(target: int, rater: int) -> str:
    return LABELS[(target + (1 if (target + rater) % 7 == 0 else 0)) % 3]


def rate_all(study: Study, names=(*HONEST, SPAMMER)) -> dict[str, object]:
    """Each rater submits one assignment; returns name -> assignment."""
    done = {}
    for index, name in enumerate(names):
        spam = name == SPAMMER
        rater = rater_entry.rater_get_or_create(platform="invite", external_id=name)
        assignment = rater_entry.assignment_start(study=study, rater=rater, seed=index)
        for slot in assignment.assignment_items.select_related("item").order_by("position"):
            order = slot.response_order
            if slot.item.check_kind:
                first = slot.item.item_responses.order_by("position").first().response_id
                safety = {t: "safe" if spam or t != first else "unsafe" for t in order}
            else:
                safety = {t: "safe" if spam else honest_label(t, index) for t in order}
            readability = {t: 3 if spam else 1 + (t + (index if t % 4 == 0 else 0)) % 5 for t in order}
            answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                     answers={"readability": readability, "safety": safety})
        done[name] = answering.assignment_submit(assignment=assignment)
    return done
