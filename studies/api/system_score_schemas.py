"""The report's "which system is better" blocks for the OpenAPI schema (``studies.reports.system_scores``,
``studies.analysis.system_scores``): each system's score with its 95 % interval and n, each pair of systems
with its test, p and Holm-adjusted p, and the raters and items it rests on. These serializers only
describe the answer; ``tests/api/test_report_schemas.py`` validates live answers against them."""
from __future__ import annotations

from rest_framework import serializers

from studies.api.schema_fields import number


class SystemScoreSerializer(serializers.Serializer):
    system = serializers.CharField()
    score = number(help_text="mean score (scale designs) or share of decisive judgments won (choice designs)")
    ci_low = number(help_text="95 % interval: Student t over units, or Wilson")
    ci_high = number()
    n = serializers.IntegerField(help_text="units (scale) or decisive judgments (choice) the interval rests on")


class SystemDifferenceSerializer(serializers.Serializer):
    system_a = serializers.CharField()
    system_b = serializers.CharField()
    test = serializers.CharField(help_text="paired t on per-item means, Welch t, or exact binomial (sign) test")
    n = serializers.IntegerField(help_text="paired items, units, or decisive judgments")
    diff = number(help_text="mean of a − b (scale designs)")
    ci_low = number()
    ci_high = number()
    statistic = number()
    df = number()
    p = number()
    p_holm = number(help_text="Holm-adjusted over the pairs of this condition × criterion")
    wilcoxon_p = number(help_text="Wilcoxon signed-rank p beside the paired t (scale designs)")
    better = serializers.CharField(allow_null=True, help_text="the better system where p (Holm) < .05")
    win_rate_a = number(required=False, help_text="the first system's share of decisive judgments (choice designs)")


class SystemScoresBlockSerializer(serializers.Serializer):
    """One condition × criterion: which system is better, and on how much data."""

    condition = serializers.SlugField()
    criterion = serializers.CharField()
    design = serializers.CharField()
    measure = serializers.CharField()
    pair_measure = serializers.CharField(help_text="what a pair's number is: a difference, or a win rate")
    method = serializers.CharField()
    note = serializers.CharField(allow_blank=True)
    n_raters = serializers.IntegerField()
    n_items = serializers.IntegerField(allow_null=True)
    n_ratings = serializers.IntegerField()
    paired = serializers.BooleanField()
    systems = SystemScoreSerializer(many=True)
    pairs = SystemDifferenceSerializer(many=True)
