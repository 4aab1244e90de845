"""The reliability report's shape for the OpenAPI schema (typed report responses instead of an
untyped object). The report itself is computed by ``studies.analysis.report`` (``Report.as_dict``),
``reports.position_selectors`` and ``reports.label_selectors``; these serializers only describe it, and
``tests/api/test_report_schemas.py`` validates live answers against what they declare.

Numbers that can be undefined (NaN: too few raters, no variation) are nullable: the API writes NaN as null
(``config.renderers``). Rows that may carry more keys than listed (a design's extra columns) keep them: the
components allow additional properties. Each design's own section (``pairwise``, ``bws_tuples``, ``acute``;
``reports.selectors.design_sections``) is a list of that design's rows (``design_report_schemas``)."""
from __future__ import annotations

from rest_framework import serializers

from studies.api.design_report_schemas import AcuteStudySerializer, BwsTuplesEntrySerializer, PairwiseStudySerializer
from studies.api.schema_fields import number
from studies.api.system_score_schemas import SystemScoresBlockSerializer


class ReportConditionSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    title = serializers.CharField()
    design = serializers.CharField()
    benchmark = serializers.BooleanField()
    criteria = serializers.ListField(child=serializers.CharField())
    alpha_level = serializers.CharField(help_text="Krippendorff's alpha level: ordinal, interval, ...")
    alpha_values = serializers.CharField(help_text="what alpha's values are (Likert value, log10 ratio, ...)")
    ranks = serializers.BooleanField()
    report_note = serializers.CharField(allow_blank=True)
    icc_reason = serializers.CharField(allow_blank=True, required=False,
                                       help_text="why a condition has no ICC by design (its judgments are choices)")


class IccFormSerializer(serializers.Serializer):
    value = number()
    F = number()  # noqa: N815 - the report's key
    df1 = number()
    df2 = number()
    p = number()
    ci95 = serializers.ListField(child=number(), min_length=2, max_length=2)


class IccCellSerializer(serializers.Serializer):
    """One condition × criterion of Tables 1-7: the six ICC forms (Shrout & Fleiss; McGraw & Wong), or
    ``error`` saying why there are none (fewer than two raters on an item, an empty group)."""

    table = serializers.CharField()
    title = serializers.CharField()
    condition = serializers.SlugField()
    criterion = serializers.CharField()
    n_raters = serializers.IntegerField()
    n_items = serializers.IntegerField()
    n_ratings = serializers.IntegerField()
    error = serializers.CharField(required=False, help_text="present when no ICC could be computed")
    k0 = number(required=False)
    method = serializers.CharField(required=False, help_text="complete or incomplete")
    ipsation = serializers.CharField(required=False, allow_null=True)
    warnings = serializers.ListField(child=serializers.CharField(), required=False)
    anova = serializers.DictField(child=number(), required=False, help_text="sums of squares and df")
    icc = serializers.DictField(child=IccFormSerializer(), required=False,
                                help_text="by form: ICC(1,1), ICC(A,1), ICC(C,1), ICC(1,k), ICC(A,k), ICC(C,k)")


class IccTablesSerializer(serializers.Serializer):
    table1 = IccCellSerializer(many=True)
    table2 = IccCellSerializer(many=True)
    table3 = IccCellSerializer(many=True)
    table4 = IccCellSerializer(many=True)
    table5 = IccCellSerializer(many=True)
    table6 = IccCellSerializer(many=True)
    table7 = IccCellSerializer(many=True)


class CriteriaCorrelationSerializer(serializers.Serializer):
    condition = serializers.SlugField()
    a = serializers.CharField()
    b = serializers.CharField()
    rho = number()
    p = number()
    n = serializers.IntegerField()


class CompletionSerializer(serializers.Serializer):
    condition = serializers.SlugField()
    n = serializers.IntegerField()
    mean_minutes = number()
    median_minutes = number()
    minutes = serializers.ListField(child=number())


class AnovaEffectSerializer(serializers.Serializer):
    effect = serializers.CharField()
    sum_sq = number()
    df = number()
    F = number()  # noqa: N815
    p = number()
    eta_sq = number()


class TukeyPairSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    mean_diff = number()
    p = number()
    significant = serializers.BooleanField()


class ConditionComparisonSerializer(serializers.Serializer):
    """Two-way ANOVA condition × system and Tukey HSD between conditions on per-rater z-scores."""

    criterion = serializers.CharField()
    systems = serializers.ListField(child=serializers.CharField())
    effects = AnovaEffectSerializer(many=True)
    tukey = TukeyPairSerializer(many=True)


class AlphaSerializer(serializers.Serializer):
    condition = serializers.SlugField()
    criterion = serializers.CharField()
    level = serializers.CharField()
    values = serializers.CharField()
    alpha = number()
    note = serializers.CharField(allow_blank=True)


class PlanningSerializer(serializers.Serializer):
    condition = serializers.SlugField()
    criterion = serializers.CharField()
    target = number()
    raters_needed = serializers.DictField(child=number(), help_text="by ICC form (Spearman-Brown)")


class RaterQualitySerializer(serializers.Serializer):
    rater = serializers.JSONField(help_text="the rater's id")
    name = serializers.CharField(help_text="a pseudonym unless raw_ids")
    study = serializers.SlugField()
    ratings = serializers.IntegerField()
    loo_r = number(help_text="leave-one-out correlation with the other raters")
    straight_lining = number()
    seconds_per_item = number()
    flagged = serializers.BooleanField()
    flag_reasons = serializers.CharField(allow_blank=True)
    failed_checks = serializers.BooleanField(required=False)


class SystemMeanSerializer(serializers.Serializer):
    condition = serializers.SlugField()
    criterion = serializers.CharField()
    system = serializers.CharField()
    mean_z = number()
    n = serializers.IntegerField()
    low = number()
    high = number()


class DistributionSerializer(serializers.Serializer):
    condition = serializers.SlugField()
    criterion = serializers.CharField()
    system = serializers.CharField()
    n = serializers.IntegerField()
    q1 = number()
    med = number()
    q3 = number()
    mean = number()
    whislo = number()
    whishi = number()


class PositionSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    letter = serializers.CharField()
    n = serializers.IntegerField()
    mean_z = number()
    mean_score = number()
    low = number()
    high = number()


class PositionEffectSerializer(serializers.Serializer):
    """Whether the place a response is shown in changes its score (Kruskal-Wallis H over positions)."""

    condition = serializers.SlugField()
    criterion = serializers.CharField()
    positions = PositionSerializer(many=True)
    H = number(required=False)  # noqa: N815
    df = serializers.IntegerField(required=False, allow_null=True)
    p = number(required=False)
    note = serializers.CharField(required=False, allow_blank=True)


class LabelCriterionSerializer(serializers.Serializer):
    """A criterion answered by labels or free text: shares, agreement and association per kind
    (``reports.label_selectors``)."""

    study = serializers.CharField()
    criterion = serializers.CharField()
    kind = serializers.CharField(help_text="categorical, multilabel or free_text")
    question = serializers.CharField(allow_blank=True)
    n = serializers.IntegerField()
    labels = serializers.ListField(child=serializers.CharField())
    raters = serializers.IntegerField()


class PerTurnSystemRateSerializer(serializers.Serializer):
    system = serializers.CharField()
    count = serializers.IntegerField()
    n = serializers.IntegerField(help_text="judged turns answered (one per rater and turn)")
    dialogues = serializers.IntegerField()
    rate = number()
    ci95 = serializers.ListField(child=number(), help_text="Wilson score interval (answers independent)")
    ci95_dialogues = serializers.ListField(child=number(), help_text="cluster bootstrap over dialogues, 2,000 draws")


class SystemAssociationSerializer(serializers.Serializer):
    """A chi-square test of systems × present/absent (``studies.analysis.labels.system_association``)."""

    chi2 = number()
    df = serializers.IntegerField()
    p = number()
    cramers_v = number()
    fisher_p = number(help_text="Fisher's exact test: a 2 × 2 table only, else null")
    note = serializers.CharField(allow_blank=True, help_text="why the test is weak or missing; empty otherwise")


class PerTurnBehaviourSerializer(serializers.Serializer):
    label = serializers.CharField()
    systems = PerTurnSystemRateSerializer(many=True)
    test = SystemAssociationSerializer(help_text="chi-square of system × present/absent; Fisher's exact p for two "
                                                 "systems")


class PerTurnLabelAgreementSerializer(serializers.Serializer):
    label = serializers.CharField()
    alpha = number(help_text="Krippendorff's alpha (nominal) of present/absent over turns")
    raw_agreement = number(help_text="share of agreeing rater pairs over turns")
    pairs = serializers.IntegerField(help_text="rater pairs compared")
    present = serializers.IntegerField(required=False, help_text="answers that ticked the label")


class PerTurnAgreementSerializer(serializers.Serializer):
    units = serializers.IntegerField(help_text="turns labelled by two or more raters")
    per_label = PerTurnLabelAgreementSerializer(many=True)
    alpha = number(help_text="a categorical criterion: alpha over its labels; null otherwise")
    raw_agreement = number(required=False, help_text="a categorical criterion: raw agreement over its labels")


class PerTurnCriterionSerializer(serializers.Serializer):
    """A per-turn criterion: each behaviour's rate per system, the test between systems and agreement per
    behaviour (``reports.per_turn_selectors``; ``studies.analysis.per_turn``)."""

    study = serializers.CharField()
    criterion = serializers.CharField()
    question = serializers.CharField(allow_blank=True)
    mode = serializers.CharField(help_text="binary, multilabel or categorical")
    labels = serializers.ListField(child=serializers.CharField())
    turns = serializers.IntegerField()
    dialogues = serializers.IntegerField()
    raters = serializers.IntegerField()
    rates = PerTurnBehaviourSerializer(many=True)
    agreement = PerTurnAgreementSerializer(help_text="per_label: nominal alpha and raw agreement over turns")


class ReliabilityReportSerializer(serializers.Serializer):
    """The reliability report of a study or an experiment (Santhanam & Shaikh 2019, Tables 1-9, and more;
    STATISTICS.md)."""

    system_scores = SystemScoresBlockSerializer(many=True, help_text="which system is better, per condition × criterion")
    conditions = ReportConditionSerializer(many=True)
    criteria = serializers.ListField(child=serializers.CharField())
    tables = IccTablesSerializer()
    criteria_correlation = CriteriaCorrelationSerializer(many=True, help_text="Table 9: Spearman between criteria")
    completion = CompletionSerializer(many=True)
    anova = ConditionComparisonSerializer(many=True, help_text="empty unless two conditions share two systems")
    alpha = AlphaSerializer(many=True)
    planning = PlanningSerializer(many=True)
    raters = RaterQualitySerializer(many=True)
    systems = SystemMeanSerializer(many=True)
    distributions = DistributionSerializer(many=True)
    excluded_raters = serializers.ListField(child=serializers.JSONField())
    notes = serializers.ListField(child=serializers.CharField())
    positions = PositionEffectSerializer(many=True)
    labels = LabelCriterionSerializer(many=True)
    per_turn = PerTurnCriterionSerializer(many=True, help_text="per-turn criteria (empty when the study has none)")
    pairwise = PairwiseStudySerializer(many=True, required=False,
                                       help_text="the pairwise design's section (empty when no study is pairwise)")
    bws_tuples = BwsTuplesEntrySerializer(many=True, required=False, help_text="the bws_tuples design's section")
    acute = AcuteStudySerializer(many=True, required=False, help_text="the ACUTE-Eval section")
