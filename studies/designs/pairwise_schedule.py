"""The pairwise (A/B) design's schedule: which system pairs each conversation is compared on, and which
response each rater sees on the left.

- Items: one per (conversation, system pair). For every conversation with responses from at least two
  of the chosen systems, ``pairs_per_conversation`` pairs (0 = all of them) are picked greedily: the
  pair compared least often so far, then the pair whose systems appear least often, then a draw from
  ``random.Random(schedule_seed)``. Over the corpus every system pair is compared on as many
  conversations as the others (±1 when all systems answer every conversation).
- Sides: which response is left is chosen per assignment (``pairwise_orders``), greedily in a seeded
  order: first keep the rater's own left/right count of every system even, then keep every item's
  left/right count over its raters even, then a seeded coin. So each rater sees each system on the
  left about as often as on the right (a rater's side habit cannot favour a system), and each item is
  shown in both orders about equally often (position bias is estimable and cancels out).
"""
from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import combinations

from django.core.exceptions import ValidationError

from studies.designs.common import NOT_COUNTED, ItemSpec, unknown_systems_message
from studies.models import AssignmentItem, Response, Study, StudyItem, StudyItemResponse


def pair_schedule(available: Sequence[Sequence[str]], *, pairs_per_conversation: int, seed: int) -> list[list[tuple[str, str]]]:
    """For each conversation (the sorted systems that answered it), the system pairs (a < b) it is
    compared on; see the module docstring for the rule. Pure: no database."""
    rng = random.Random(seed)
    pair_count: Counter = Counter()
    system_count: Counter = Counter()
    schedule = []
    for systems in available:
        options = list(combinations(sorted(systems), 2))
        wanted = len(options) if pairs_per_conversation == 0 else min(pairs_per_conversation, len(options))
        ties = {pair: rng.random() for pair in options}
        chosen: list[tuple[str, str]] = []
        for _ in range(wanted):
            pair = min((p for p in options if p not in chosen),
                       key=lambda p: (pair_count[p], system_count[p[0]] + system_count[p[1]], ties[p]))
            chosen.append(pair)
            pair_count[pair] += 1
            system_count[pair[0]] += 1
            system_count[pair[1]] += 1
        schedule.append(chosen)
    return schedule


def pairwise_items_build(*, study: Study, spec: ItemSpec) -> int:
    """(Re)build a draft pairwise study's items: one per (conversation, system pair), each showing the
    two systems' first responses (canonical order a < b; raters see a balanced side, ``pairwise_orders``).
    The systems are ``systems`` (default: every system in the corpus) plus ``reference_system``, which
    competes like any other (e.g. the human reference); ``limit`` samples that many conversations with
    ``seed``; the pairs follow ``design_config.schedule_seed``. The caller holds the study row lock and
    has checked it is a draft without raters. Returns the number of items."""
    corpus, systems, reference_system, limit, seed = spec.corpus_required(), spec.systems, spec.reference_system, spec.limit, \
        spec.seed
    available = set(Response.objects.filter(conversation__corpus=corpus).values_list("system__name", flat=True))
    chosen = list(dict.fromkeys(systems)) if systems else sorted(available)
    if reference_system and reference_system not in chosen:
        chosen.append(reference_system)
    unknown = [s for s in chosen if s not in available]
    if unknown:
        raise ValidationError({"systems": unknown_systems_message(unknown, list(available), corpus.slug)})
    if len(chosen) < 2:
        raise ValidationError({"systems": "a pairwise study compares at least two systems"})
    by_conversation: dict[int, dict[str, int]] = {}
    for conversation_id, response_id, system_name in (
        Response.objects.filter(conversation__corpus=corpus, position=0, system__name__in=chosen)
        .values_list("conversation_id", "id", "system__name").order_by("conversation_id", "system__name")
    ):
        by_conversation.setdefault(conversation_id, {})[system_name] = response_id
    usable = [(cid, answered) for cid, answered in sorted(by_conversation.items()) if len(answered) >= 2]
    if limit is not None and limit < len(usable):
        usable = sorted(random.Random(seed).sample(usable, limit))
    if not usable:
        raise ValidationError({"corpus": f"no conversation in {corpus.slug} has responses from two of "
                                         f"{', '.join(chosen)}"})
    config = study.design_config
    schedule = pair_schedule([sorted(answered) for _, answered in usable],
                             pairs_per_conversation=config.get("pairs_per_conversation", 0),
                             seed=config.get("schedule_seed", 0))
    study.items.filter(check_kind="").delete()  # check items (studies.checks) stay
    planned = [(cid, answered, pair) for (cid, answered), pairs in zip(usable, schedule, strict=True) for pair in pairs]
    items = StudyItem.objects.bulk_create([
        StudyItem(study=study, conversation_id=cid, position=i) for i, (cid, _, _) in enumerate(planned)
    ])
    links = [StudyItemResponse(item=item, response_id=answered[system], position=side)
             for item, (_, answered, pair) in zip(items, planned, strict=True) for side, system in enumerate(pair)]
    StudyItemResponse.objects.bulk_create(links, batch_size=2000)
    return len(items)


def pairwise_orders(*, study: Study, chosen: Sequence[int], shown: Mapping[int, list[int]],
                    rng: random.Random, system_of: Mapping[int, object] | None = None) -> dict[int, list[int]]:
    """item id -> [left response, right response] for a new assignment of ``chosen`` items (each
    showing two responses in canonical order, ``shown``); the rule is in the module docstring. Items
    that do not show exactly two responses are left out (the caller shuffles them as usual).
    ``system_of`` (target id -> its system) where the targets are not responses (ACUTE-Eval's
    conversations)."""
    pairs = {i: shown[i] for i in chosen if len(shown.get(i, ())) == 2}
    if not pairs:
        return {}
    if system_of is None:
        system_of = dict(Response.objects.filter(pk__in=[r for pair in pairs.values() for r in pair])
                         .values_list("pk", "system_id"))
    # Over the item's other raters: +1 each time the canonical first response was shown left.
    item_balance: Counter = Counter()
    for item_id, order in (AssignmentItem.objects.filter(assignment__study=study, item_id__in=list(pairs))
                           .exclude(assignment__status__in=NOT_COUNTED).values_list("item_id", "response_order")):
        if order:
            item_balance[item_id] += 1 if order[0] == pairs[item_id][0] else -1
    rater_balance: Counter = Counter()  # system -> times left minus times right, this rater
    orders = {}
    sequence = list(pairs)
    rng.shuffle(sequence)
    for item_id in sequence:
        first, second = pairs[item_id]
        options = []
        for left, right, sign in ((first, second, 1), (second, first, -1)):
            sl, sr = system_of[left], system_of[right]
            rater_cost = abs(rater_balance[sl] + 1) + abs(rater_balance[sr] - 1)
            options.append((rater_cost, abs(item_balance[item_id] + sign), rng.random(), left, right, sign))
        _, _, _, left, right, sign = min(options)
        rater_balance[system_of[left]] += 1
        rater_balance[system_of[right]] -= 1
        item_balance[item_id] += sign
        orders[item_id] = [left, right]
    # Greedy leaves a system off by 2 now and then; swapping a pair's sides where that lowers the
    # rater's imbalance (|b_left| + |b_right|), or keeps it and lowers the item's, ends near the
    # optimum. Each swap lowers (rater cost, item cost) lexicographically, so the loop ends.
    improved = True
    while improved:
        improved = False
        for item_id in sequence:
            left, right = orders[item_id]
            sl, sr = system_of[left], system_of[right]
            step = -2 if left == pairs[item_id][0] else 2
            rater_now = abs(rater_balance[sl]) + abs(rater_balance[sr])
            rater_swapped = abs(rater_balance[sl] - 2) + abs(rater_balance[sr] + 2)
            if (rater_swapped, abs(item_balance[item_id] + step)) < (rater_now, abs(item_balance[item_id])):
                rater_balance[sl] -= 2
                rater_balance[sr] += 2
                item_balance[item_id] += step
                orders[item_id] = [right, left]
                improved = True
    return orders
