"""Shared set-up of the per-turn tests: a corpus of dialogues by two systems, a dialogue-unit Likert study
whose criterion is per turn (ABC-Eval's behaviours or a small set), published, and an invited rater's slot."""
from __future__ import annotations

from typing import Any

from studies.authoring import services as authoring
from studies.designs.kinds.abc_eval import abc_eval_criterion
from studies.models import AssignmentItem, Conversation, Corpus, Study
from studies.rating import entry as rater_entry

SMALL = {"name": "problems", "kind": "per_turn", "question": "What does each bot turn do wrong?",
         "options": {"mode": "binary", "labels": ["redundant", "irrelevant", "contradiction"],
                     "definitions": {"redundant": "repeats itself"}}}


def dialogue(i: int, system: str, n_turns: int = 4) -> list[dict[str, str]]:
    """A dialogue of ``n_turns`` turns, the user first, then the bot (``system``'s speaker is "bot")."""
    return [{"speaker": "user" if t % 2 == 0 else "bot", "text": f"{system} dialogue {i} turn {t + 1}"}
            for t in range(n_turns)]


def corpus_make(owner, *, n: int = 6, slug: str = "per-turn-corpus", n_turns: int = 4) -> Corpus:
    corpus = Corpus.objects.create(slug=slug, title="Per-turn dialogues", source_format="jsonl", owner=owner)
    Conversation.objects.bulk_create([
        Conversation(corpus=corpus, external_id=f"d{i}", turns=dialogue(i, ["botA", "botB"][i % 2], n_turns),
                     metadata={"system": ["botA", "botB"][i % 2]}) for i in range(n)])
    return corpus


def study_make(owner, *, criteria: list[dict[str, Any]] | None = None, n: int = 6, raters: int = 3,
               unit: str = "dialogue", publish: bool = True, slug: str = "per-turn-corpus") -> Study:
    corpus = corpus_make(owner, n=n, slug=slug)
    experiment = authoring.experiment_create(owner=owner, title="Per-turn behaviours")
    study = authoring.study_create(experiment=experiment, title="Per-turn", design="likert", unit=unit,
                                   criteria=criteria or [SMALL], raters_per_item=raters, items_per_assignment=n)
    authoring.study_items_build(study=study, corpus=corpus)
    if publish:
        authoring.study_publish(study=study)
    return Study.objects.get(pk=study.pk)


def abc_study(owner, **kwargs: Any) -> Study:
    return study_make(owner, criteria=[abc_eval_criterion()], **kwargs)


def slot_of(study: Study, rater_id: str = "r0", seed: int = 0) -> AssignmentItem:
    rater = rater_entry.rater_get_or_create(platform="invite", external_id=rater_id)
    assignment = rater_entry.assignment_start(study=study, rater=rater, seed=seed)
    return AssignmentItem.objects.filter(assignment=assignment).select_related("item", "assignment").order_by(
        "position").first()
