"""The report's first answer, "which system is better", for every design: one block per condition ×
criterion with each system's score and 95 % interval, the pairs tested and Holm-adjusted, and the raters
and items it rests on (studies.analysis.system_scores). Scale designs come from the reliability report
(computed there on the same ratings, without the raters it leaves out); choice designs (pairwise,
ACUTE-Eval) from their own report sections' win rates."""
from __future__ import annotations

from typing import Any

from studies.designs.common import Section

CHOICE_SECTIONS = ("pairwise", "acute")

SCALE_METHOD = ("Mean over rated units of each unit's mean normalised score, Student t 95 % interval over units; "
                "pairs: paired t test on per-item means where one screen shows both systems (Wilcoxon "
                "signed-rank p beside it), else Welch's t on unit means; Holm-adjusted over the pairs.")
CHOICE_METHOD = ("Share of a system's decisive judgments it won (ties left out), Wilson 95 % interval; pairs: "
                 "exact binomial (sign) test against 50 %, Holm-adjusted over the pairs.")
SINGLE = "one system only: there is nothing to compare it with"


def _choice_blocks(section: Section) -> list[dict[str, Any]]:
    from studies.analysis.system_scores import choice_block

    blocks = []
    for study in section.data or []:
        for entry in study["criteria"]:
            block = choice_block(entry["win_rates"])
            block.update(condition=study["slug"], criterion=entry["criterion"], n_raters=entry["raters"],
                         n_items=entry.get("items"), n_ratings=entry["n"], design=section.key, method=CHOICE_METHOD)
            blocks.append(block)
    return blocks


def system_scores(report: Any, design_sections: list[Section]) -> list[dict[str, Any]]:
    """Every block, scale designs first in the report's condition order, then choice designs; each with
    ``design``, ``method`` (what the numbers are) and ``note`` (why a block has no comparison)."""
    designs = {c["slug"]: c["design"] for c in report.conditions}
    blocks = [{**b, "design": designs.get(b["condition"], ""), "method": SCALE_METHOD}
              for b in getattr(report, "system_scores", [])]  # a report cached before the field existed
    blocks += [b for s in design_sections if s.key in CHOICE_SECTIONS for b in _choice_blocks(s)]
    for block in blocks:
        block["note"] = SINGLE if len(block["systems"]) < 2 else ""
    return blocks


def score_rows(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One tidy row per condition × criterion × system (CSV, XLSX)."""
    return [{"condition": b["condition"], "criterion": b["criterion"], "design": b["design"], "measure": b["measure"],
             "system": s["system"], "score": s["score"], "ci_low": s["ci_low"], "ci_high": s["ci_high"], "n": s["n"],
             "n_raters": b["n_raters"], "n_items": b["n_items"], "method": b["method"]}
            for b in blocks for s in b["systems"]]


def difference_rows(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One tidy row per condition × criterion × pair of systems (CSV, XLSX)."""
    keys = ("system_a", "system_b", "test", "n", "diff", "win_rate_a", "ci_low", "ci_high", "statistic", "df", "p",
            "p_holm", "wilcoxon_p", "better")
    return [{"condition": b["condition"], "criterion": b["criterion"], "design": b["design"],
             **{k: p.get(k) for k in keys}} for b in blocks for p in b["pairs"]]
