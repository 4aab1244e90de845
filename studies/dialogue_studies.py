"""Studies whose unit of judgement is a whole dialogue (``Study.unit == "dialogue"``).

The rater reads a whole conversation and rates it on each criterion; the ratings attach to the
conversation (``Rating.conversation``), not to a response. the services call in here at a few
points (study creation, item building, assignment creation, rating storage) so that response-unit
studies keep their code path untouched.

Designs: Likert, RME and BWS. RME's fixed anchor is one whole dialogue (the reference system's, or one
named by the researcher) shown on every item with the reference value (Bard et al. 1996: one modulus for
all judgements). BWS ranks ``tuple_size`` whole dialogues per screen (``StudyItemConversation``); the
tuples partition the dialogues (seeded shuffle), so each dialogue is ranked on one screen and a rater's
rating of it is unique; dialogues left over (fewer than a tuple) are not used. BME needs a dialogue-level
metric value per item for its anchor and is refused for dialogue units with that reason.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Count

from studies.models import Conversation, Corpus, Design, Study, StudyItem, StudyItemConversation, Unit

DIALOGUE_DESIGNS = (Design.LIKERT, Design.RME, Design.BWS)
REFUSED = {
    Design.BME: "BME is not offered for dialogue units: it needs an automatic metric's value for an anchor "
    "dialogue on every item, which Concord does not compute yet; use RME (a fixed anchor dialogue), "
    "Likert or BWS",
    # The choice designs store response ids (Comparison.left/right, BestWorstChoice.best/worst) and
    # build their items from responses; a dialogue has none, so their items would be empty.
    Design.PAIRWISE: "pairwise comparison is not offered for dialogue units yet: its choices name two responses, "
    "and a dialogue has none; use BWS with tuples of whole dialogues (tuple size 2 compares two), Likert or RME",
    Design.BWS_TUPLES: "best-worst tuples are not offered for dialogue units: they pick among single responses; "
    "use BWS, which ranks tuples of whole dialogues",
}
DIALOGUE_QUESTIONS = {
    "readability": "How readable is this dialogue?",
    "coherence": "How coherent is this dialogue as a whole?",
}
DIALOGUE_HELP = {
    "readability": "Are the turns fluent, grammatical and easy to understand?",
    "coherence": "Does the conversation hang together: do the turns follow on from each other, stay on topic, "
    "and make sense as one dialogue?",
}


def default_criteria(unit: str) -> list[dict[str, str]]:
    """A dialogue study's default criteria: the seed study's two, asked of the whole dialogue."""
    if unit != Unit.DIALOGUE:
        return []
    return [{"name": n, "question": q, "help_text": DIALOGUE_HELP[n]} for n, q in DIALOGUE_QUESTIONS.items()]


def unit_problems(unit: str, design: str) -> dict[str, str]:
    """Why a study of this unit and design cannot be created (field -> message), or nothing."""
    if unit not in Unit.values:
        return {"unit": f"unknown unit {unit!r}; choose one of {', '.join(Unit.values)}"}
    if unit == Unit.DIALOGUE and design in REFUSED:
        return {"unit": REFUSED[design]}
    return {}


def default_question(unit: str, name: str) -> str | None:
    """The question a dialogue-unit criterion asks when the researcher gave none."""
    if unit != Unit.DIALOGUE:
        return None
    return DIALOGUE_QUESTIONS.get(name) or f"How good is this dialogue's {name.replace('-', ' ')}?"


def dialogue_items_build(
    *,
    study: Study,
    corpus: Corpus,
    systems: Sequence[str] | None = None,
    reference_system: str | None = None,
    reference_conversation: str | None = None,
    limit: int | None = None,
    seed: int = 0,
) -> int:
    """(Re)build a draft dialogue study's items: one item per conversation of the corpus, optionally
    only those whose system (``metadata.system``, set by the dialogue-level imports) is in ``systems``.
    RME: the anchor is the conversation ``reference_conversation`` (external id) or else the first of
    ``reference_system``'s; it is shown on every item and not judged. The caller (``study_items_build``)
    holds the study row lock and has checked the status. Returns the number of items."""
    conversations = Conversation.objects.filter(corpus=corpus)
    if systems:
        wanted = list(dict.fromkeys(systems))
        found = set(conversations.filter(metadata__system__in=wanted).values_list("metadata__system", flat=True))
        unknown = [s for s in wanted if s not in found]
        if unknown:
            raise ValidationError({"systems": f"no dialogues of {', '.join(unknown)} in corpus {corpus.slug}"})
        judged = conversations.filter(metadata__system__in=wanted)
    else:
        judged = conversations
    anchor = _anchor(study, conversations, reference_system, reference_conversation)
    ids = list(judged.exclude(pk=anchor).order_by("id").values_list("id", flat=True))
    if limit is not None and limit < len(ids):
        ids = sorted(random.Random(seed).sample(ids, limit))
    if not ids:
        raise ValidationError(
            {"corpus": f"corpus {corpus.slug} has no dialogues to judge" + (" besides the anchor" if anchor else "")}
        )
    study.items.filter(check_kind="").delete()
    if study.design == Design.BWS:
        return _bws_items_build(study, ids, seed)
    value = study.design_config.get("reference_value") if study.design == Design.RME else None
    StudyItem.objects.bulk_create(
        [
            StudyItem(
                study=study, conversation_id=cid, position=i, reference_conversation_id=anchor, reference_value=value
            )
            for i, cid in enumerate(ids)
        ],
        batch_size=2000,
    )
    return len(ids)


def _bws_items_build(study: Study, ids: list[int], seed: int) -> int:
    """BWS: the dialogues shuffled (seeded) and cut into disjoint tuples of ``tuple_size``."""
    size = study.design_config["tuple_size"]
    if len(ids) < size:
        raise ValidationError({"corpus": f"BWS ranks {size} dialogues per item; the corpus has {len(ids)} to judge"})
    shuffled = ids[:]
    random.Random(seed).shuffle(shuffled)
    tuples = [shuffled[i : i + size] for i in range(0, len(shuffled) - size + 1, size)]
    items = StudyItem.objects.bulk_create(
        [StudyItem(study=study, conversation_id=group[0], position=i) for i, group in enumerate(tuples)],
        batch_size=2000,
    )
    StudyItemConversation.objects.bulk_create(
        [
            StudyItemConversation(item=item, conversation_id=cid, position=p)
            for item, group in zip(items, tuples, strict=True)
            for p, cid in enumerate(group)
        ],
        batch_size=2000,
    )
    return len(items)


def _anchor(
    study: Study, conversations, reference_system: str | None, reference_conversation: str | None
) -> int | None:
    if study.design != Design.RME:
        return None
    if reference_conversation:
        found = conversations.filter(external_id=reference_conversation).values_list("pk", flat=True).first()
        if found is None:
            raise ValidationError({"reference_conversation": f"no dialogue {reference_conversation!r} in the corpus"})
        return found
    if reference_system:
        found = (
            conversations.filter(metadata__system=reference_system).order_by("id").values_list("pk", flat=True).first()
        )
        if found is None:
            raise ValidationError({"reference_system": f"no dialogue of {reference_system!r} in the corpus"})
        return found
    raise ValidationError(
        {
            "reference_system": "RME on dialogues needs an anchor dialogue: name a reference system "
            "(its first dialogue) or a reference conversation"
        }
    )


def item_targets(item_ids: Iterable[int]) -> dict[int, list[int]]:
    """item id -> the ids of the conversations it shows (one; a BWS item's tuple in canonical order):
    what a rater rates on a dialogue item (kept in ``AssignmentItem.response_order``, so drafts, checks
    of completeness, BWS rankings and the form fields work alike)."""
    wanted = list(item_ids)
    targets = {
        item_id: [conversation_id]
        for item_id, conversation_id in StudyItem.objects.filter(pk__in=wanted).values_list("pk", "conversation_id")
    }
    tuples: dict[int, list[int]] = {}
    links = StudyItemConversation.objects.filter(item_id__in=wanted).order_by("item_id", "position")
    for item_id, conversation_id in links.values_list("item_id", "conversation_id"):
        tuples.setdefault(item_id, []).append(conversation_id)
    return {**targets, **tuples}


def item_size_problem(study: Study) -> str | None:
    """Dialogue BWS items that do not show ``tuple_size`` dialogues (for study_publish), or None."""
    size = study.design_config["tuple_size"]
    wrong = study.items.filter(check_kind="").annotate(n=Count("item_conversations")).exclude(n=size).count()
    return f"{wrong} item(s) do not show exactly {size} dialogues to rank" if wrong else None


def rating_target(study: Study, target_id: int) -> dict[str, Any]:
    """The Rating fields that name what was rated: the conversation in a dialogue study, else the response."""
    return {"conversation_id": target_id} if study.is_dialogue else {"response_id": target_id}


def rating_unique_fields(study: Study) -> list[str]:
    """The unique key a double submit upserts on (``Rating`` constraints)."""
    return ["assignment", "conversation" if study.is_dialogue else "response", "criterion"]
