"""The shapes of the report's design sections (typed report responses), for the OpenAPI schema:
``pairwise`` (``studies.designs.pairwise_report.pairwise_report``: per study, per criterion the win rates
with Wilson intervals and Holm, Bradley–Terry strengths with bootstrap intervals, position bias, side
balance, per-rater side preference and Krippendorff's alpha, ``studies.analysis.pairwise``), ``acute`` (the
same per ACUTE-Eval study, each win rate with the paper's significance mark, and the check pairs;
``studies.designs.acute_report``) and ``bws_tuples`` (counting scores per response and per system, split-half
reliability; ``studies.designs.bws_tuples_report``). They only describe the answers; numbers that can be
undefined are nullable (the API writes NaN as null), and rows keep any keys beyond these."""
from __future__ import annotations

from rest_framework import serializers

from studies.api.schema_fields import number


class PairwiseWinRateSerializer(serializers.Serializer):
    """One system pair: a's wins over the decisive judgments (ties apart), Wilson 95% interval, exact
    binomial p against 0.5 and its Holm adjustment over the criterion's pairs."""

    criterion = serializers.CharField()
    system_a = serializers.CharField()
    system_b = serializers.CharField()
    n = serializers.IntegerField()
    wins_a = serializers.IntegerField()
    wins_b = serializers.IntegerField()
    ties = serializers.IntegerField()
    tie_share = number()
    score_a = number(help_text="a's mean score, ties as half")
    win_rate_a = number(help_text="null without decisive judgments")
    ci_low = number()
    ci_high = number()
    p = number()
    p_holm = number()
    bt_expected_a = number(required=False, help_text="a's score the Bradley–Terry fit predicts (where it exists)")
    mark = serializers.CharField(required=False, allow_blank=True,
                                 help_text="ACUTE-Eval: the paper's significance mark (*, **, ***)")


class BradleyTerryStrengthSerializer(serializers.Serializer):
    system = serializers.CharField()
    theta = number(help_text="log-strength, posterior mode under a weak N(0, 2²) prior (mean 0)")
    theta_mle = number(required=False, help_text="the maximum-likelihood log-strength; null where it is infinite")
    ci_low = number(help_text="percentile bootstrap; null with fewer than two usable resamples")
    ci_high = number()
    win_prob_vs_mean = number(help_text="P(beats a system of average strength)")


class BradleyTerrySerializer(serializers.Serializer):
    strengths = BradleyTerryStrengthSerializer(many=True)
    resamples = serializers.IntegerField()
    dropped = serializers.IntegerField(help_text="resamples left out: 0, every resample is kept")
    degenerate = serializers.IntegerField(required=False, help_text="resamples (kept) in which the MLE would not exist")
    mle_exists = serializers.BooleanField(required=False)
    note = serializers.CharField(required=False, allow_blank=True, help_text="why the MLE is infinite, if it is")
    estimator = serializers.CharField(required=False)
    prior_sd = number(required=False)
    over = serializers.CharField(help_text="the bootstrap's cluster: rater or item")


class PositionBiasSerializer(serializers.Serializer):
    """The share of decisive judgments that chose the left side, Wilson interval, exact binomial p."""

    n = serializers.IntegerField()
    decisive = serializers.IntegerField()
    left_wins = serializers.IntegerField()
    ties = serializers.IntegerField()
    left_share = number()
    ci_low = number()
    ci_high = number()
    p = number()


class PairwiseAgreementSerializer(serializers.Serializer):
    alpha = number(help_text="Krippendorff's alpha (nominal over a, b, tie); null where undefined")
    units = serializers.IntegerField(help_text="items with two raters or more")
    raw_agreement = number(required=False, help_text="agreeing pairs among the pairs of judgments on one item "
                                                     "(raw agreement beside alpha); null without pairs")
    pairs = serializers.IntegerField(required=False, help_text="pairs of judgments on one item")
    note = serializers.CharField(allow_blank=True, required=False)


class SideShownSerializer(serializers.Serializer):
    system = serializers.CharField()
    shown = serializers.IntegerField()
    left_share = number()


class SideBalanceSerializer(serializers.Serializer):
    systems = SideShownSerializer(many=True)
    min_left_share = number()
    max_left_share = number()


class RaterSideSerializer(serializers.Serializer):
    rater = serializers.CharField(help_text="the rater's pseudonym in this experiment")
    n = serializers.IntegerField()
    decisive = serializers.IntegerField()
    left_wins = serializers.IntegerField()
    left_share = number()
    tie_share = number()
    p = number()
    p_holm = number()
    side_preference = serializers.BooleanField()


class PairwiseCriterionSerializer(serializers.Serializer):
    criterion = serializers.CharField()
    n = serializers.IntegerField()
    raters = serializers.IntegerField()
    win_rates = PairwiseWinRateSerializer(many=True)
    bt = BradleyTerrySerializer(allow_null=True, help_text="null where the strengths do not exist (bt_error)")
    bt_error = serializers.CharField(allow_null=True)
    position_bias = PositionBiasSerializer()
    side_balance = SideBalanceSerializer()
    rater_sides = RaterSideSerializer(many=True)
    raters_with_side_preference = serializers.IntegerField()
    agreement = PairwiseAgreementSerializer()


class PairwiseStudySerializer(serializers.Serializer):
    """One pairwise study of the report."""

    pk = serializers.IntegerField()
    slug = serializers.SlugField()
    title = serializers.CharField()
    n = serializers.IntegerField(help_text="judgments analysed")
    excluded_raters = serializers.IntegerField(help_text="raters left out (exclude_flagged)")
    criteria = PairwiseCriterionSerializer(many=True)


class AcuteChecksSerializer(serializers.Serializer):
    pairs = serializers.IntegerField(help_text="check pairs (a known answer; left out of every result)")
    judgments = serializers.IntegerField()
    scored_raters = serializers.IntegerField()
    failed_raters = serializers.IntegerField()


class AcuteStudySerializer(PairwiseStudySerializer):
    """One ACUTE-Eval study (Li, Weston & Roller 2019): the pairwise analysis with the paper's marks."""

    checks = AcuteChecksSerializer()
    failed_included = serializers.IntegerField(
        required=False, help_text="raters who failed the check pairs and are in these figures (0 with exclude_flagged; "
                                  "ParlAI leaves out workers who failed onboarding by default)")


class TupleDesignSerializer(serializers.Serializer):
    responses = serializers.IntegerField()
    tuples = serializers.IntegerField()
    tuple_size = serializers.IntegerField(required=False)
    appearances_min = serializers.IntegerField(required=False)
    appearances_max = serializers.IntegerField(required=False)
    pair_mean = number(required=False, help_text="mean co-occurrences of a pair of responses")
    pair_sd = number(required=False)


class TuplesPerTupleSerializer(serializers.Serializer):
    mean = number()
    min = serializers.IntegerField()
    max = serializers.IntegerField()


class TupleResponseScoreSerializer(serializers.Serializer):
    response = serializers.IntegerField()
    system = serializers.CharField()
    appearances = serializers.IntegerField()
    best = serializers.IntegerField()
    worst = serializers.IntegerField()
    score = number(help_text="(#best − #worst) / #appearances, in [−1, 1]")


class TupleSystemScoreSerializer(serializers.Serializer):
    system = serializers.CharField()
    n = serializers.IntegerField()
    mean = number()
    sd = number()
    low = number(help_text="t 95% interval over the system's responses")
    high = number()


class SplitHalfSerializer(serializers.Serializer):
    spearman_mean = number()
    spearman_sd = number()
    pearson_mean = number()
    pearson_sd = number()
    spearman_brown = number(help_text="2r/(1+r) of the mean Spearman")
    pearson_brown = number()
    trials = serializers.IntegerField()


class BwsTuplesEntrySerializer(serializers.Serializer):
    """One best-worst tuples condition × criterion (Kiritchenko & Mohammad 2016, 2017)."""

    condition = serializers.SlugField()
    criterion = serializers.CharField()
    design = TupleDesignSerializer()
    trials = serializers.IntegerField()
    seed = serializers.IntegerField()
    annotations = serializers.IntegerField()
    raters = serializers.IntegerField(required=False)
    annotations_per_tuple = TuplesPerTupleSerializer(required=False)
    responses = TupleResponseScoreSerializer(many=True)
    systems = TupleSystemScoreSerializer(many=True)
    split_half = SplitHalfSerializer(allow_null=True)
    note = serializers.CharField(allow_blank=True)
