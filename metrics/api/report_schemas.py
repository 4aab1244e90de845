"""The shapes of the human-vs-metric report (``metrics.scoring.selectors.human_metric_report``) and the
prediction-powered estimates (``metrics.ppi.estimates.ppi_report``) for the OpenAPI schema (typed report
responses). They only describe the answers; ``tests/api/test_report_schemas.py`` validates live answers
against what they declare. Undefined numbers (NaN) are written as null, hence nullable; rows may carry
more keys than listed (the components allow additional properties)."""
from __future__ import annotations

from rest_framework import serializers

from studies.api.schema_fields import number


class CorrelationSerializer(serializers.Serializer):
    method = serializers.CharField(help_text="pearson, spearman or kendall")
    r = number()
    p = number()
    n = serializers.IntegerField()
    ci95 = serializers.ListField(child=number(), allow_null=True, help_text="Fisher z; null for too few points")
    p_method = serializers.CharField(required=False, help_text="asymptotic, or exact permutation (all n! pairings) for 8 pairs or fewer")


class CorrelationsSerializer(serializers.Serializer):
    pearson = CorrelationSerializer()
    spearman = CorrelationSerializer()
    kendall = CorrelationSerializer()


class HumanMetricPointSerializer(serializers.Serializer):
    unit = serializers.IntegerField(help_text="the rated response (or conversation)")
    system = serializers.CharField()
    human = number()
    metric = number()


class HumanMetricCellSerializer(serializers.Serializer):
    """One condition × criterion: the metric against the mean human score, per response and per system
    (Pearson, Spearman, Kendall; METRICS.md), and the human ceiling (split-half agreement)."""

    condition = serializers.SlugField()
    criterion = serializers.CharField()
    n_responses = serializers.IntegerField()
    unit = serializers.CharField()
    missing_scores = serializers.IntegerField()
    response_level = CorrelationsSerializer(required=False, allow_null=True)
    system_level = CorrelationsSerializer(required=False, allow_null=True)
    human_ceiling = number(required=False, help_text="one rater against the others' mean (leave-one-rater-out "
                           "Spearman); null for imported judgments, whose raters are annotator positions")
    human_ceiling_note = serializers.CharField(required=False, help_text="what the ceiling is, or why it is hidden")
    points = HumanMetricPointSerializer(many=True, required=False)


class LabelMetricCellSerializer(serializers.Serializer):
    """One condition × label criterion × label: "this rating gave the label" against the metric's score of
    the rated target, over ratings (``studies.analysis.labels.label_metric_association``); undefined (null)
    where every rating or none gave the label, or the scores do not vary."""

    condition = serializers.SlugField()
    criterion = serializers.CharField()
    kind = serializers.CharField(help_text="categorical or multilabel")
    label = serializers.CharField()
    n = serializers.IntegerField(help_text="ratings with a metric score")
    positives = serializers.IntegerField(help_text="of them, those that gave the label")
    r_pb = number(help_text="point-biserial correlation")
    p = number()
    auc = number(help_text="P(a rating with the label has the higher score); ties count half")


class PpiPaySerializer(serializers.Serializer):
    """What the planner's extra items would cost with the study's pay plan (platform fees on top)."""

    more_with_metric = serializers.IntegerField(allow_null=True, help_text="the most items any system needs more of")
    more_without_metric = serializers.IntegerField(allow_null=True)
    reachable = serializers.BooleanField(help_text="every plan's target is reachable within the frame")
    cost_with_metric = number(help_text="null without a reward")
    cost_without_metric = number()
    reward = number()
    raters_per_item = serializers.IntegerField()
    items_per_assignment = serializers.IntegerField()
    remaining_in_frame = serializers.IntegerField(help_text="frame items not drawn yet")


class HumanMetricReportSerializer(serializers.Serializer):
    metric_model = serializers.CharField()
    metric = serializers.CharField()
    cells = HumanMetricCellSerializer(many=True)
    label_cells = LabelMetricCellSerializer(many=True, help_text="criteria answered by labels: the metric per label")
    notes = serializers.ListField(child=serializers.CharField())
    below_baselines = serializers.ListField(
        child=serializers.DictField(), help_text="where the model is below an untrained baseline on these studies' "
                                                 "own ratings (as a model card's `below` entries)")
    warnings = serializers.ListField(child=serializers.CharField(),
                                     help_text="the card's warnings and those of below_baselines, as lines")


class _EstimateFields(serializers.Serializer):
    estimate = number()
    ci_low = number()
    ci_high = number()
    human_estimate = number()
    human_ci_low = number()
    human_ci_high = number()
    lam = number(help_text="the power-tuning weight of the metric (0: human only)")
    n = serializers.IntegerField()
    n_unlabelled = serializers.IntegerField()
    n_effective = number()
    rho = number()
    p = number()
    human_p = number()
    note = serializers.CharField(allow_blank=True)
    width = number()
    human_width = number()
    se = number(required=False, help_text="the standard error the interval uses (small-sample)")
    se_asymptotic = number(required=False, help_text="ppi_py's normal standard error, for comparison")
    df = number(required=False, help_text="Student t degrees of freedom of the interval")
    method = serializers.CharField(required=False, allow_blank=True, help_text="how the interval was made")
    warning = serializers.CharField(required=False, allow_blank=True,
                                    help_text="set below the n where the interval's coverage was measured")


class RaterNoiseSerializer(serializers.Serializer):
    units = serializers.IntegerField()
    ratings_per_unit = number()
    within_unit_variance = number()
    between_unit_variance = number()
    noise_share = number(help_text="share of the variance of unit means that raters' disagreement accounts for")
    noise_share_capped = serializers.BooleanField(required=False, help_text="the estimate was above 1")


class PpiSystemSerializer(_EstimateFields):
    """A system's mean score: prediction-powered (Angelopoulos et al. 2023, PPI++) beside human only."""

    system = serializers.CharField()
    frame = serializers.IntegerField(required=False)
    rater_noise = RaterNoiseSerializer(required=False, allow_null=True)


class PpiDifferenceSerializer(_EstimateFields):
    a = serializers.CharField()
    b = serializers.CharField()
    paired = serializers.BooleanField()


class PpiRankSerializer(serializers.Serializer):
    system = serializers.CharField()
    place = serializers.IntegerField()
    best = serializers.IntegerField()
    worst = serializers.IntegerField()
    sure = serializers.BooleanField()
    estimate = number()
    next = serializers.CharField(allow_null=True, required=False)
    p_next_holm = number(required=False)


class PpiPlanSerializer(serializers.Serializer):
    system = serializers.CharField()
    target_width = number()
    alpha = number()
    sd_human = number()
    n_now = serializers.IntegerField()
    frame_size = serializers.IntegerField()
    reachable = serializers.BooleanField()
    needed_without_metric = serializers.IntegerField(allow_null=True)
    needed_with_metric = serializers.IntegerField(allow_null=True)
    more_without_metric = serializers.IntegerField(allow_null=True)
    more_with_metric = serializers.IntegerField(allow_null=True)
    ppi_corr = number()


class PpiCombinationSerializer(serializers.Serializer):
    """Several metrics combined by cross-fitted weights (``studies.analysis.ppi_combined``), for one system."""

    system = serializers.CharField()
    metrics = serializers.ListField(child=serializers.CharField())
    estimate = number()
    ci_low = number()
    ci_high = number()
    se = number()
    df = number()
    n = serializers.IntegerField()
    n_unlabelled = serializers.IntegerField()
    folds = serializers.IntegerField()
    weights = serializers.DictField(child=number())
    best_single = serializers.CharField(allow_null=True)
    best_single_se = number()
    worth_it = serializers.BooleanField(help_text="its standard error is below the best single metric's")
    verdict = serializers.CharField()
    method = serializers.CharField()
    warning = serializers.CharField(allow_blank=True)


class PpiCriterionSerializer(serializers.Serializer):
    criterion = serializers.CharField()
    pooled = PpiSystemSerializer(required=False, allow_null=True, help_text="every system's units together")
    combination = PpiCombinationSerializer(many=True, required=False)
    labelled_per_system = serializers.DictField(child=serializers.IntegerField(), required=False)
    warnings = serializers.ListField(child=serializers.CharField(), required=False)
    systems = PpiSystemSerializer(many=True)
    differences = PpiDifferenceSerializer(many=True)
    ranking = PpiRankSerializer(many=True)
    plan = PpiPlanSerializer(many=True)
    target_width = number()
    frame_size = serializers.IntegerField()


class PpiWinRateSerializer(_EstimateFields):
    """A pair's win rate: the share of judgments a wins over b (ties half), prediction-powered beside human only,
    the metric's outcome being which of the two responses it scores higher (``metrics.ppi.estimates._pairwise``)."""

    a = serializers.CharField()
    b = serializers.CharField()


class PpiStrengthSerializer(serializers.Serializer):
    system = serializers.CharField()
    strength = number(help_text="Bradley-Terry log-strength against the reference system (0)")
    ci_low = number()
    ci_high = number()
    human_strength = number()
    human_ci_low = number()
    human_ci_high = number()
    reference = serializers.BooleanField(help_text="the system the others are measured against")


class PpiBradleyTerrySerializer(serializers.Serializer):
    """Bradley-Terry strengths through the logistic form, ``ppi_logistic_ci`` beside ``classical_logistic_ci``
    (``studies.analysis.ppi.bradley_terry``); ``strengths`` empty and ``problem`` saying why where no fit exists."""

    n = serializers.IntegerField()
    n_unlabelled = serializers.IntegerField()
    strengths = PpiStrengthSerializer(many=True)
    problem = serializers.CharField(allow_null=True)


class PpiPairwiseCriterionSerializer(serializers.Serializer):
    criterion = serializers.CharField()
    win_rates = PpiWinRateSerializer(many=True)
    bradley_terry = PpiBradleyTerrySerializer(
        allow_null=True, help_text="null where the humans decided every judgment the same way or fewer than two "
                                   "systems were compared")


class PpiStudySerializer(serializers.Serializer):
    slug = serializers.SlugField()
    title = serializers.CharField()
    unit = serializers.CharField()
    metric_model = serializers.CharField()
    alpha = number()
    criteria = PpiCriterionSerializer(many=True)
    pairwise = PpiPairwiseCriterionSerializer(many=True, required=False,
                                              help_text="a pairwise study's win rates and Bradley-Terry strengths")
    problem = serializers.CharField(allow_null=True, help_text="why there are no estimates, if so")
    method = serializers.CharField(allow_null=True, required=False, help_text="how the items were drawn")
    frame_size = serializers.IntegerField(allow_null=True, required=False)
    corpus = serializers.CharField(allow_null=True, required=False)
    items = serializers.IntegerField(allow_null=True, required=False)
    pay = PpiPaySerializer(allow_null=True, required=False,
                           help_text="what the planner's extra items would cost (reward, places, totals)")
    combination_problem = serializers.CharField(required=False, help_text="why the metrics were not combined")


class PredictionPoweredReportSerializer(serializers.Serializer):
    metric_model = serializers.CharField()
    metric = serializers.CharField()
    alpha = number()
    combined_with = serializers.ListField(child=serializers.CharField(), required=False,
                                          help_text="the further metric models combined with this one")
    studies = PpiStudySerializer(many=True)
    notes = serializers.ListField(child=serializers.CharField())
