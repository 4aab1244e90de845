"""Reads of the ACUTE-Eval design (``studies.designs.acute``): the comparisons of whole conversations as
a frame, the report as the paper gives it (Li, Weston and Roller 2019, Tables 3-5: per system pair the
win rate of one system with a two-sided binomial test and significance marks) beside what Concord adds
for every pairwise study (Wilson intervals, Holm, Bradley–Terry over all systems with bootstrap
intervals, position bias, agreement: ``studies.analysis.pairwise``), the export rows (both
conversations, the judged speakers and the order shown) and the live panel."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import QuerySet

from studies.designs.common import DONE
from studies.designs.pairwise_report import comparisons_version
from studies.models import Comparison, Study
from studies.pseudonyms import rater_pseudonym

if TYPE_CHECKING:
    import pandas as pd

KEY = "acute"

FRAME_COLUMNS = {
    "study": "assignment__study__slug", "criterion": "criterion__name", "item": "item_id",
    "rater": "assignment__rater_id", "experiment": "assignment__study__experiment_id", "assignment": "assignment_id",
    "left": "left_conversation_id", "right": "right_conversation_id",
    "left_system": "left_conversation__metadata__system", "right_system": "right_conversation__metadata__system",
    "choice": "choice", "seconds": "seconds", "failed_checks": "assignment__checks_failed",
}
EXPORT_FIELDS = (
    "experiment", "study", "criterion", "item", "rater", "platform", "left_conversation", "right_conversation",
    "left_speaker", "right_speaker", "left_system", "right_system", "shown_order", "choice", "winner_system",
    "winner_conversation", "reason", "seconds", "assignment_status", "submitted_at", "check", "check_passed",
    "failed_checks", "left_persona", "right_persona", "left_opener", "right_opener",
)


def comparisons(studies: QuerySet[Study], *, with_checks: bool = False) -> QuerySet[Comparison]:
    """Judgments of submitted or approved assignments of ACUTE studies, check pairs left out (kept, for
    the export to mark them, with ``with_checks``)."""
    found = Comparison.objects.filter(assignment__study__in=studies.filter(design=KEY), assignment__status__in=DONE)
    return found if with_checks else found.filter(item__check_kind="")


def check_pairs_summary(study: Study) -> dict[str, Any]:
    """The study's check pairs (known answer; left out of every result): how many, their judgments, and the
    raters the checks flagged."""
    from django.db.models import Count, Q

    judged = Comparison.objects.filter(assignment__study=study, assignment__status__in=DONE, item__check_kind__gt="")
    raters = study.assignments.filter(status__in=DONE).aggregate(
        scored=Count("id", filter=Q(checks_shown__gt=0)), failed=Count("id", filter=Q(checks_failed=True)))
    return {"pairs": study.items.filter(check_kind__gt="").count(), "judgments": judged.count(),
            "scored_raters": raters["scored"], "failed_raters": raters["failed"]}


def comparisons_frame(studies: QuerySet[Study]) -> pd.DataFrame:
    """One row per judgment (the input of studies.analysis.pairwise), in one query."""
    import pandas as pd

    rows = comparisons(studies).values_list(*FRAME_COLUMNS.values())
    frame = pd.DataFrame.from_records(list(rows), columns=list(FRAME_COLUMNS))
    for side in ("left_system", "right_system"):
        frame[side] = frame[side].astype(str)
    return frame


def acute_report(studies: QuerySet[Study], *, exclude_flagged: bool = False, resamples: int = 1000,
                 seed: int = 0) -> list[dict[str, Any]]:
    """Per ACUTE study: {pk, slug, title, n, excluded_raters, failed_included, criteria:
    studies.analysis.pairwise's report, each win-rate row with the paper's significance mark}, cached per
    version of its comparisons. ``exclude_flagged`` leaves out raters who failed the study's checks (as
    ParlAI's ``acute_eval/analysis.py`` leaves out workers who failed onboarding by default);
    ``failed_included``: how many such raters are in the figures when they are kept."""
    from studies.analysis.acute import significance_mark
    from studies.analysis.pairwise import pairwise_report as analyse

    out = []
    for study in studies.filter(design=KEY).order_by("id"):
        one = Study.objects.filter(pk=study.pk)
        side_level = settings.RATER_FLAGS["position_p"]  # the review queue's threshold: one test on both pages
        version = f"{comparisons_version(one)}:{exclude_flagged}:{resamples}:{seed}:{side_level}"
        key = "acute-report:" + hashlib.sha256(version.encode()).hexdigest()
        entry = cache.get(key)
        if entry is None:
            frame = comparisons_frame(one)
            excluded = included = 0
            if len(frame):
                flagged = frame["failed_checks"].fillna(False).astype(bool)
                failed = int(frame.loc[flagged, "rater"].nunique())
                # ParlAI's analysis leaves out workers who failed onboarding by default; Concord keeps them
                # unless asked, and the report says how many are in the win rates (``failed_included``).
                if exclude_flagged:
                    excluded, frame = failed, frame[~flagged]
                else:
                    included = failed
            criteria = analyse(frame, resamples=resamples, seed=seed, side_level=side_level)
            for criterion in criteria:
                for row in criterion["win_rates"]:
                    row["mark"] = significance_mark(row["p"])
                for row in criterion["rater_sides"]:
                    row["rater"] = rater_pseudonym(study.experiment_id, row["rater"])
            entry = {"pk": study.pk, "slug": study.slug, "title": study.title, "n": len(frame),
                     "excluded_raters": excluded, "failed_included": included, "criteria": criteria,
                     "checks": check_pairs_summary(study)}
            cache.set(key, entry, timeout=3600)
        out.append(entry)
    return out


def _check_row_passed(rules: list[dict], criterion: str, left: int, right: int, choice: str) -> bool:
    """Whether one judgment of a check pair meets its rules on this criterion, as ``studies.rating.checks``
    scores it with the design's values (1 for the chosen conversation, 0 for the other, ½ each for a tie):
    ``greater`` than ``than``, or a ``value`` (or ``min``/``max``) of one conversation."""
    import math

    given = dict(zip((left, right), {"left": (1.0, 0.0), "right": (0.0, 1.0), "tie": (0.5, 0.5)}[choice], strict=True))
    for rule in rules:
        if rule.get("criterion") not in (None, "", criterion):
            continue
        if "greater" in rule:
            a, b = given.get(rule["greater"]), given.get(rule["than"])
            ok = a is not None and b is not None and a > b
        else:
            v = given.get(rule["response"]) if "response" in rule else None
            ok = v is not None and (math.isclose(v, rule["value"]) if "value" in rule else
                                    rule.get("min", -math.inf) <= v <= rule.get("max", math.inf))
        if not ok:
            return False
    return True


def export_rows(studies: QuerySet[Study], *, raw_ids: bool = False,
                with_checks: bool = True) -> Iterator[dict[str, Any]]:
    """One row per judgment, streamed: both conversations (external ids), the judged speakers, the
    systems, the order shown (left first), the choice and the winning system and conversation. A check
    pair's judgments come marked: ``check`` (its kind: gold or instructed; empty for the study's pairs)
    and ``check_passed`` (this judgment met the known answer); ``failed_checks``: the rater was flagged.
    Every result leaves check pairs out (``comparisons``)."""
    from studies.models import StudyItem

    rules_of = dict(StudyItem.objects.filter(study__in=studies.filter(design=KEY), check_kind__gt="")
                    .values_list("pk", "check_rules")) if with_checks else {}
    queryset = comparisons(studies, with_checks=with_checks).order_by("assignment__study_id", "assignment_id", "item__position",
                                             "criterion__position").values_list(
        "assignment__study__experiment__slug", "assignment__study__slug", "criterion__name", "item_id",
        "assignment__rater__external_id", "assignment__rater__platform", "left_conversation__external_id",
        "right_conversation__external_id", "left_speaker", "right_speaker", "left_conversation__metadata__system",
        "right_conversation__metadata__system", "choice", "reason", "seconds", "assignment__status",
        "assignment__submitted_at", "assignment__study__experiment_id", "assignment__rater_id", "item__check_kind",
        "left_conversation_id", "right_conversation_id", "assignment__checks_failed",
        "left_conversation__metadata__bots", "right_conversation__metadata__bots",
        "left_conversation__metadata__opener", "right_conversation__metadata__opener")
    for row in queryset.iterator(chunk_size=5000):
        (experiment, study, criterion, item, rater, platform, left, right, left_speaker, right_speaker, left_system,
         right_system, choice, reason, seconds, status, submitted, experiment_id, rater_id, check, left_id, right_id,
         failed, left_bots, right_bots, left_opener, right_opener) = row
        winner = {"left": (left_system, left), "right": (right_system, right)}.get(choice, ("", ""))
        passed = _check_row_passed(rules_of.get(item) or [], criterion, left_id, right_id, choice) if check else None
        yield dict(zip(EXPORT_FIELDS, (
            experiment, study, criterion, item, rater if raw_ids else rater_pseudonym(experiment_id, rater_id),
            platform, left, right, left_speaker, right_speaker, left_system, right_system, f"{left}|{right}", choice,
            winner[0], winner[1], reason, seconds, status, submitted, check, passed, bool(failed),
            _persona(left_bots, left_speaker), _persona(right_bots, right_speaker), left_opener or "",
            right_opener or ""), strict=True))


def _persona(bots: Any, speaker: str) -> str:
    """The judged speaker's persona in a self-chat (``metadata.bots``: each bot's speaker and persona)."""
    if not isinstance(bots, dict):
        return ""
    return next((str(bot.get("persona") or "") for bot in bots.values()
                 if isinstance(bot, dict) and bot.get("speaker") == speaker), "")


def live_agreement(study: Study) -> list[dict[str, Any]]:
    """The study page's live panel: per criterion the judgments, raters and Krippendorff's alpha
    (nominal, by system), as for a pairwise study."""
    from studies.analysis.pairwise import agreement

    frame = comparisons_frame(Study.objects.filter(pk=study.pk))
    out = []
    for criterion, part in frame.groupby("criterion", sort=False):
        alpha = agreement(part.reset_index(drop=True))
        out.append({"criterion": criterion, "n": len(part), "raters": int(part["rater"].nunique()),
                    "alpha": alpha["alpha"], "units": alpha["units"], "note": alpha.get("note", "")})
    return out
