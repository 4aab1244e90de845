"""Heuristic metrics on hand-checked sentences: FRE against textstat, the dullness penalty, and the
coherence metric with the packaged MiniLM (real pretrained weights, loaded offline)."""
import math

import pytest
import textstat

from metrics.implementations.base import ScoringInput
from metrics.implementations.coherence import content_words, penalty
from metrics.registry import implementation

SENTENCES = ["The cat sat on the mat.", "Notwithstanding considerable institutional heterogeneity, outcomes diverged.",
             "I would love to come to the beach with you on Sunday!"]


def test_readability_equals_textstat_and_counts_symbol_only_text():
    metric = implementation("readability")
    values = metric.score([ScoringInput(turns=["hi"], response=s) for s in [*SENTENCES, "", "?!... :)"]])
    assert values[:3] == [textstat.flesch_reading_ease(s) for s in SENTENCES]
    assert values[0] > values[2] > values[1]  # plain words read more easily than jargon
    assert values[3:] == [0.0, 0.0] and metric.warnings == 2


def test_penalty_is_one_for_content_and_above_one_for_dull_replies():
    assert penalty("The train to Lisbon leaves at noon from platform four.") == 1.0
    dull = "I don't know what you mean."
    words = content_words(dull)
    assert words >= 1
    assert penalty(dull) == pytest.approx(1 + math.log10((2 + words) / 2))
    partly = "I'm not sure, but the museum opens at nine."
    # only the dull part ("i'm not sure") is removed before counting L''
    expected = 1 + math.log10((2 + content_words(partly)) / (2 + content_words(", but the museum opens at nine.")))
    assert penalty(partly) == pytest.approx(expected) and 1.0 < expected < penalty(dull)


def test_coherence_with_minilm_orders_responses_sensibly():
    metric = implementation("coherence", {"device": "cpu"})
    context = ["Where can I buy fresh bread around here?"]
    values = metric.score([
        ScoringInput(turns=context, response="Where can I buy fresh bread around here?"),
        ScoringInput(turns=context, response="There is a bakery on the corner that sells fresh loaves every morning."),
        ScoringInput(turns=context, response="The quarterly tax filing deadline was moved to April."),
        ScoringInput(turns=context, response="I don't know."),
    ])
    assert values[0] == pytest.approx(1.0, abs=1e-5)  # same meaning, no penalty
    assert values[1] > values[2]  # on topic beats off topic
    assert values[1] > values[3]  # a dull reply is penalised
    assert metric.device == "cpu"


def test_coherence_can_compare_with_the_reference_instead():
    metric = implementation("coherence", {"against": "reference", "device": "cpu"})
    same = ScoringInput(turns=["Anything"], response="See you at the station at six.", reference="See you at the station at six.")
    assert metric.score([same])[0] == pytest.approx(1.0, abs=1e-5)


def test_unknown_metric_is_named():
    with pytest.raises(KeyError, match="unknown metric 'bleurt'"):
        implementation("bleurt")
