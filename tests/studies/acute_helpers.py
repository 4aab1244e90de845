"""Shared set-up of the ACUTE-Eval tests (tests/studies/test_acute*.py, tests/browser/test_acute_*.py):
a corpus of whole conversations of several systems, an ACUTE study on it, raters who answer."""
from __future__ import annotations

from collections.abc import Callable

from studies.authoring import services as authoring
from studies.models import Comparison, Conversation, Corpus, Study
from studies.rating import answers as answering
from studies.rating import entry as rater_entry

ACUTE_QUESTIONS = ("engagingness", "interestingness", "humanness", "knowledgeability")


def conversations_corpus(owner, systems: dict[str, int], *, slug: str = "acute-corpus", turns: int = 4,
                         speakers: tuple[str, str] = ("user", "bot"), metadata: dict | None = None) -> Corpus:
    """``systems``: name -> how many conversations; the system speaks as ``speakers[1]``."""
    corpus = Corpus.objects.create(slug=slug, title=slug, source_format="jsonl", owner=owner)
    for name, count in systems.items():
        for i in range(count):
            Conversation.objects.create(
                corpus=corpus, external_id=f"{name}-{i}", metadata={"system": name, **(metadata or {})},
                turns=[{"speaker": speakers[t % 2], "text": f"{name} turn {t} of dialogue {i}"} for t in range(turns)])
    return corpus


def acute_study(owner, systems: dict[str, int] | None = None, *, publish: bool = True, raters_per_item: int = 3,
                items_per_assignment: int = 50, criteria=None, corpus: Corpus | None = None,
                platform: str = "invite", **config) -> Study:
    corpus = corpus or conversations_corpus(owner, systems or {"alpha": 4, "beta": 4, "gamma": 4})
    experiment = authoring.experiment_create(owner=owner, title="ACUTE experiment")
    study = authoring.study_create(experiment=experiment, title="ACUTE study", design="acute", unit="dialogue",
                                   design_config=config or None, raters_per_item=raters_per_item,
                                   items_per_assignment=items_per_assignment, criteria=criteria, platform=platform)
    authoring.study_items_build(study=study, corpus=corpus, seed=1)
    if publish:
        authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def system_of(conversation_ids) -> dict[int, str]:
    return {pk: meta["system"] for pk, meta in Conversation.objects.filter(pk__in=list(conversation_ids))
            .values_list("pk", "metadata")}


def rate_all(study: Study, name: str, choose: Callable[[object, str], str], *, reason: str = "because",
             seed: int | None = None, submit: bool = True):
    """A rater who answers every item with ``choose(slot, criterion)`` (left | right | tie)."""
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=name), seed=seed)
    names = list(study.criteria.values_list("name", flat=True))
    for slot in assignment.assignment_items.order_by("position"):
        answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                 answers={c: {"choice": choose(slot, c), "reason": reason} for c in names},
                                 seconds=5.0)
    if submit:
        answering.assignment_submit(assignment=assignment)
    return assignment


def comparisons_of(assignment) -> list[Comparison]:
    return list(Comparison.objects.filter(assignment=assignment).order_by("item__position", "criterion__position"))
