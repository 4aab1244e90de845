"""One rater against the others, for the rater's page. No Django here.

- ``label_agreement_loo``: a rater's labels against the others' majority label on the same targets
  (leave one out: the rater's own answer is not part of the majority; ties go to the label that sorts
  first): the raw agreement p_a, Gwet's AC1 (the flag's figure) and Cohen's (1960) κ (shown beside it).

  κ = (p_a − p_e) / (1 − p_e) with p_e = Σ_k a_k b_k from the two label marginals breaks where one label
  is prevalent: a rater who always gives the common label has p_a = p_e and κ = 0 at 97 % agreement
  (Feinstein & Cicchetti 1990, "High agreement but low kappa: I. The problems of two paradoxes", J Clin
  Epidemiol 43(6) 543–549). Gwet's AC1 (Gwet 2008, "Computing inter-rater reliability and its variance in
  the presence of high agreement", Br J Math Stat Psychol 61(1) 29–48) takes chance agreement as
  p_e = Σ_k π_k (1 − π_k) / (q − 1), π_k = (a_k + b_k) / 2 over the q categories, which is small where
  one label is prevalent, so AC1 stays near p_a for a careful rater and near 0 for one answering at
  random; Wongpakaran et al. (2013, BMC Med Res Methodol 13:61) found it stable where κ collapsed.
- ``position_habit``: how often the rater's top answer on a screen stood at the first shown position
  (scales: the highest value, when one response alone has it; A/B: the left side), against chance
  (1/m on a screen of m, ½ for A/B), by an exact two-sided binomial test (scipy ``binomtest``).
- ``order_agreement``: the share of a rater's decisive A/B choices that agree with the Bradley–Terry
  order of all raters (Bradley & Terry 1952; strengths from ``studies.analysis.pairwise``).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any


def _kappa(a: list[str], b: list[str]) -> float | None:
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    left, right = Counter(a), Counter(b)
    expected = sum(left[k] * right.get(k, 0) for k in left) / (n * n)
    if expected == 1:
        return None  # one label everywhere: κ is undefined
    return (observed - expected) / (1 - expected)


def gwet_ac1(a: list[str], b: list[str], categories: Iterable[str] = ()) -> float | None:
    """Gwet's (2008) AC1 of two raters' paired labels: (p_a − p_e) / (1 − p_e), p_e = Σ_k π_k (1 − π_k)
    / (q − 1), π_k the mean of the two raters' shares of k, q the categories (``categories`` joined with
    the labels seen; at least 2). None without pairs."""
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    left, right = Counter(a), Counter(b)
    q = max(2, len(set(categories) | set(left) | set(right)))
    expected = sum(((left[k] + right[k]) / (2 * n)) * (1 - (left[k] + right[k]) / (2 * n))
                   for k in set(left) | set(right)) / (q - 1)
    return (observed - expected) / (1 - expected)


def label_agreement_loo(rows: Iterable[tuple[Any, Any, str]], categories: Iterable[str] = ()
                        ) -> dict[Any, dict[str, Any]]:
    """rater -> {"ac1", "kappa", "n", "agreement"} from (rater, task, label) rows: each rater against
    the others' majority on the tasks someone else answered too (``categories``: the criterion's labels,
    for AC1's q)."""
    categories = [str(c) for c in categories]
    by_task: dict[Any, list[tuple[Any, str]]] = {}
    for rater, task, label in rows:
        by_task.setdefault(task, []).append((rater, str(label)))
    pairs: dict[Any, tuple[list[str], list[str]]] = {}
    for answers in by_task.values():
        for rater, label in answers:
            others = Counter(other for r, other in answers if r != rater)
            if not others:
                continue
            top = max(others.values())
            majority = sorted(k for k, v in others.items() if v == top)[0]
            mine, theirs = pairs.setdefault(rater, ([], []))
            mine.append(label)
            theirs.append(majority)
    return {rater: {"ac1": gwet_ac1(mine, theirs, categories), "kappa": _kappa(mine, theirs), "n": len(mine),
                    "agreement": sum(x == y for x, y in zip(mine, theirs, strict=True)) / len(mine)}
            for rater, (mine, theirs) in pairs.items()}


def position_habit(first: int, screens: int, chance: float) -> dict[str, Any]:
    """``first`` of ``screens`` screens had the rater's top answer first, where chance is ``chance``:
    the share, chance and the exact two-sided binomial p (None without screens)."""
    from scipy import stats

    if screens == 0:
        return {"first": 0, "screens": 0, "share": None, "chance": chance, "p": None}
    return {"first": first, "screens": screens, "share": first / screens, "chance": chance,
            "p": float(stats.binomtest(first, screens, chance).pvalue)}


def top_first(screens: Iterable[list[tuple[int, float]]]) -> tuple[int, int, float]:
    """(screens whose single highest value was shown first, screens with a single highest value, mean
    chance 1/m) from screens given as [(shown position, value), ...]."""
    first = counted = 0
    chance = 0.0
    for screen in screens:
        if len(screen) < 2:
            continue
        top = max(value for _, value in screen)
        best = [position for position, value in screen if value == top]
        if len(best) != 1:
            continue
        counted += 1
        chance += 1 / len(screen)
        first += best[0] == min(position for position, _ in screen)
    return first, counted, (chance / counted if counted else 0.0)


def order_agreement(choices: Iterable[tuple[str, str, str]], strengths: Mapping[str, float]) -> dict[str, Any]:
    """From (left system, right system, choice) of one rater and the Bradley–Terry log-strengths: how
    many decisive choices (not ties, not between equal strengths) picked the stronger system."""
    agree = n = 0
    for left, right, choice in choices:
        if choice not in ("left", "right") or left not in strengths or right not in strengths \
                or strengths[left] == strengths[right]:
            continue
        stronger = "left" if strengths[left] > strengths[right] else "right"
        n += 1
        agree += choice == stronger
    return {"agree": agree, "n": n, "share": agree / n if n else None}
