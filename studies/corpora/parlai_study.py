"""A ParlAI pairings file's own study: the draft ACUTE-Eval study whose items are exactly the file's pairs
(``parlai_formats.parse_parlai_pairings``), each side's judged speaker from ``speakers_to_eval``, and
whose check pairs are the file's onboarding pairs, the ``correct_answer`` side the better one (the
paper's quality control, Li, Weston and Roller 2019, section 4; scored like any ACUTE-Eval check pair,
``studies.authoring.check_conversations``). The researcher edits and publishes it like any draft."""
from __future__ import annotations

from studies.designs import design_for
from studies.designs.acute import ACUTE_CRITERIA
from studies.designs.units import unit_for
from studies.models import (
    CheckKind,
    Conversation,
    Corpus,
    Criterion,
    Design,
    Experiment,
    Study,
    StudyItem,
    StudyItemConversation,
    Unit,
)
from studies.models.choices import DEFAULT_ITEMS_PER_ASSIGNMENT
from studies.rating.check_rules import CHECK_SYSTEM, checks_corpus
from studies.slugs import _create_with_slug

# As studies.authoring.checks.CHECK_POSITION_BASE: check items are numbered after any regular item.
CHECK_POSITION_BASE = 1_000_000


def pairings_study_create(*, corpus: Corpus, pairs: list[dict], owner) -> Study:
    """The draft ACUTE-Eval study of a pairings import (module docstring); ``pairs`` from
    ``ParsedHeader.pairs``. The onboarding pairs become gold check pairs, every rater shown all of them
    (as ParlAI shows each worker its onboarding)."""
    acute = design_for(Design.ACUTE)
    experiment = _create_with_slug(
        Experiment, slug=None, text=corpus.slug, title=f"{corpus.slug} (ACUTE-Eval)", owner=owner,
        description=f"The pairs of {corpus.source_name} (ParlAI ACUTE-Eval pairings), as the file gives them.")
    judged = [p for p in pairs if not p.get("onboarding")]
    onboarding = [p for p in pairs if p.get("onboarding")]
    study = _create_with_slug(
        Study, slug=None, text=f"{corpus.slug}-acute", experiment=experiment, title=f"{corpus.slug} (ACUTE-Eval)",
        design=Design.ACUTE, design_config=acute.config_clean({}), unit=Unit.DIALOGUE,
        unit_config=unit_for(Unit.DIALOGUE).config_clean({}, design=acute),
        items_per_assignment=max(1, min(len(judged), DEFAULT_ITEMS_PER_ASSIGNMENT)),
        checks_config={"per_assignment": len(onboarding)} if onboarding else {},
        instructions="Read both conversations and say which marked speaker is better on each question.")
    Criterion.objects.bulk_create([
        Criterion(study=study, name=c["name"], question=c["question"], help_text=c["help_text"], position=i)
        for i, c in enumerate(ACUTE_CRITERIA)])
    ids = dict(Conversation.objects.filter(corpus=corpus).values_list("external_id", "pk"))
    items = StudyItem.objects.bulk_create(
        [StudyItem(study=study, conversation_id=ids[p["conversations"][0]], position=i) for i, p in enumerate(judged)],
        batch_size=2000)
    StudyItemConversation.objects.bulk_create(
        [StudyItemConversation(item=item, conversation_id=ids[key], position=side, speaker=p["speakers"][side])
         for item, p in zip(items, judged, strict=True) for side, key in enumerate(p["conversations"])],
        batch_size=2000)
    if onboarding:
        checks = checks_corpus(study)
        for n, pair in enumerate(onboarding, 1):
            _onboarding_pair_write(study, checks, pair, n)
    return study


def _onboarding_pair_write(study: Study, checks: Corpus, pair: dict, number: int) -> StudyItem:
    """One onboarding pair as a gold check pair: the ``correct_answer`` side is greater than the other on
    every question (a rule without a criterion applies to all)."""
    stored = [Conversation.objects.create(corpus=checks, external_id=f"check-{number}-{k}", turns=turns,
                                          metadata={"check": True, "system": CHECK_SYSTEM,
                                                    "parlai_line": pair["line"]})
              for k, turns in enumerate(pair["dialogues"], 1)]
    better = stored[pair["correct"]].pk
    worse = stored[1 - pair["correct"]].pk
    item = StudyItem.objects.create(study=study, conversation=stored[0], position=CHECK_POSITION_BASE + number - 1,
                                    check_kind=CheckKind.GOLD, check_rules=[{"greater": better, "than": worse}])
    StudyItemConversation.objects.bulk_create(
        [StudyItemConversation(item=item, conversation=c, position=p, speaker=pair["speakers"][p])
         for p, c in enumerate(stored)])
    return item
