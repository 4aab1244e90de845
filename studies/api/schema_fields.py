"""Fields shared by the serializers that only describe a response for the OpenAPI schema (the typed reports
of ``studies.api.report_schemas``, ``studies.api.design_report_schemas`` and ``metrics.api.report_schemas``)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


def number(**kwargs) -> serializers.FloatField:
    """A number that may be undefined: the API writes NaN (too few raters, no variation) as null
    (``config.renderers``), so the schema declares it nullable."""
    return serializers.FloatField(allow_null=True, **kwargs)


class DesignConfigSchema(serializers.Serializer):
    """A design's settings (``studies.designs``: each design's ``defaults``); a design takes only its own keys
    (another's is refused by name), every key optional (its default otherwise)."""

    points = serializers.IntegerField(required=False, help_text="likert: the scale's points (default 6)")
    labels = serializers.ListField(child=serializers.CharField(), required=False,
                                   help_text="likert: a label per point, lowest first (default none)")
    reference_value = serializers.FloatField(required=False, help_text="rme: the reference's value (default 100)")
    min = serializers.FloatField(required=False, help_text="rme, bme: the lowest value a rater may give (default 0)")
    max = serializers.FloatField(required=False, help_text="rme, bme: the highest (default 999)")
    anchor_min = serializers.FloatField(required=False, help_text="bme: the anchors' lowest value (default 50)")
    anchor_max = serializers.FloatField(required=False, help_text="bme: the anchors' highest value (default 150)")
    tuple_size = serializers.IntegerField(required=False, help_text="bws, bws_tuples: items per tuple (default 4)")
    factor = serializers.IntegerField(required=False, help_text="bws_tuples: tuples per item (default 2)")
    tries = serializers.IntegerField(required=False, help_text="bws_tuples: attempts at a balanced design (default 20)")
    seed = serializers.IntegerField(required=False, help_text="bws_tuples: the design's seed (default 0)")
    allow_tie = serializers.BooleanField(required=False, help_text="pairwise (default true), acute (default false)")
    reason = serializers.ChoiceField(choices=["off", "optional", "required"], required=False,
                                     help_text="pairwise (default optional), acute (default required)")
    reason_max_length = serializers.IntegerField(required=False, help_text="pairwise, acute (default 300)")
    pairs_per_conversation = serializers.IntegerField(required=False, help_text="pairwise: 0 for every pair")
    pairs_per_system_pair = serializers.IntegerField(required=False, help_text="acute: 0 for every pair")
    judged_speaker = serializers.CharField(required=False, allow_blank=True, help_text="acute: the speaker judged")
    schedule_seed = serializers.IntegerField(required=False, help_text="pairwise, acute: the pairs' seed (default 0)")


@extend_schema_field(DesignConfigSchema)
class DesignConfigField(serializers.DictField):
    """A design's settings: checked by the design itself (``config_clean``, each problem named
    ``design_config.<key>``); typed in the schema by ``DesignConfigSchema``."""
