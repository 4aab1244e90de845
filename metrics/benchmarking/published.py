"""Published correlations and accuracies of the learned metrics, per data set and quality, exactly where the
paper gives one (none where it does not): ``benchmark_metric`` prints them beside the measured figure.

- SelF-Eval (Ma et al. COLING 2022), SelF-Eval(full): Table 2 (DailyDialog++ replacement accuracy),
  Table 3 (DSTC9, the overall score), Table 4 (FED, Spearman per quality).
- QuantiDCE (Ye et al. ACL 2021), Table 1: GRADE's ConvAI2 and EmpatheticDialogues sets (Pearson,
  Spearman); its DailyDialog set was the KD training data, so the paper gives no figure for it.
- MDD-Eval (Zhang et al. AAAI 2022), Table 5 (Spearman): of its sets only Empathetic-Eval is one of these
  files (GRADE's EmpatheticDialogues set, .374); its DailyDialog-Eval is Zhao et al. 2020's, not GRADE's,
  and Persona-, Topical-, Movie-, Twitter-Eval are not here.
A pooled figure over files of different data sets has no paper figure (``benchmarking.benchmark``)."""
from __future__ import annotations

import re
from typing import Any

FED_NAMES = {  # FED's qualities as the paper spells them <- as the files (and the importer's slugs) do
    "coherent": "Coherent", "coherence": "Coherent", "errorrecovery": "Error recovery", "consistent": "Consistent",
    "consistency": "Consistent", "diverse": "Diverse", "diversity": "Diverse", "depth": "Depth", "topicdepth": "Depth",
    "likeable": "Likeable", "likability": "Likeable", "understanding": "Understanding", "flexible": "Flexible",
    "flexibility": "Flexible", "informative": "Informative", "informativeness": "Informative",
    "inquisitive": "Inquisitive", "inquisitiveness": "Inquisitive", "overall": "Overall",
    "interesting": "Interesting", "interestingness": "Interesting", "engaging": "Engaging", "engagement": "Engaging",
    "specific": "Specific", "specificity": "Specific", "relevant": "Relevant", "relevance": "Relevant",
    "correct": "Correct", "correctness": "Correct", "semanticallyappropriate": "Semantically appropriate",
    "understandable": "Understandable", "fluent": "Fluent", "fluency": "Fluent"}

PUBLISHED: dict[str, dict[str, Any]] = {
    "self_eval": {
        "fed-dialogue": {"Coherent": 0.436, "Error recovery": 0.393, "Consistent": 0.347, "Diverse": 0.263,
                         "Depth": 0.327, "Likeable": 0.390, "Understanding": 0.406, "Flexible": 0.317,
                         "Informative": 0.318, "Inquisitive": 0.421, "Overall": 0.435},
        "fed-turn": {"Interesting": 0.183, "Engaging": 0.206, "Specific": 0.169, "Relevant": 0.282, "Correct": 0.291,
                     "Semantically appropriate": 0.247, "Understandable": 0.173, "Fluent": 0.038, "Overall": 0.292},
        "dstc9": {"Overall": {"pearson": 0.163, "spearman": 0.173}},
        "ddpp-replacement": {"Rep-0": 0.973, "Rep-1": 0.898, "Rep-2": 0.914, "overall": 0.928},
    },
    "mdd_eval": {
        "grade:empatheticdialogues": {"coherence": {"spearman": 0.374}},
    },
    "quantidce": {
        "grade:convai2": {"coherence": {"pearson": 0.554, "spearman": 0.554}},
        "grade:empatheticdialogues": {"coherence": {"pearson": 0.412, "spearman": 0.393}},
    },
}


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def published(metric: str, kind: str, quality: str, dataset: str = "") -> dict | None:
    """The paper's figure for one quality (``human:relevance``, ``human:Relevant``, ...) of one data set
    kind, as {"spearman": x} or {"pearson": x, "spearman": y}; None where the paper gives none."""
    # GRADE's Dataset field reads "convai2" or "convai2_EVAL" depending on the release
    table = PUBLISHED.get(metric, {}).get(f"{kind}:{_key(dataset).removesuffix('eval')}" if kind == "grade" else kind, {})
    name = quality.removeprefix("human:")
    if kind == "dstc9":  # DSTC9's overall score is "human (overall)"
        name = "overall" if _key(name) in ("overall", "humanoverall") else name
    wanted = FED_NAMES.get(_key(name), name) if kind.startswith("fed") or kind == "dstc9" else name
    value = next((v for k, v in table.items() if _key(k) == _key(wanted)), None)
    if value is None:
        return None
    return value if isinstance(value, dict) else {"spearman": value}
