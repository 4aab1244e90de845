"""MDD-Eval's data: context-response pairs from dialogues, each augmentation technique (the model-based
ones on tiny random models), the clear skip of a technique without its model, and the pseudo-label
filter and class balancing on hand-made distributions."""
import random

import numpy as np
import pytest

from ml.data.mdd import LabelledCollator, LabelledDataset, LabelledPair, collator_for, read_ddpp_pairs, split_by_context
from ml.data.mdd_augment import (
    MODEL_BASED,
    TECHNIQUES,
    Augmenter,
    dialogue_pairs,
    technique_counts,
    word_drop,
    word_repeat,
    word_shuffle,
)
from ml.data.pseudo_labels import filter_and_balance
from ml.models import load_tokenizer
from tests.ml.mdd_toy import tiny_causal_lm_dir, tiny_masked_lm_dir, tiny_seq2seq_dir
from tests.ml.toy import toy_ddpp

DIALOGUES = [("a", ["hello there", "hi how are you", "fine thanks and you", "great i went hiking today",
                    "where did you go", "up the hill near town"]),
             ("b", ["do you like coffee", "yes every morning", "with milk or black"])]


def test_dialogue_pairs_have_contexts_of_one_to_four_turns_ending_before_the_response():
    pairs = dialogue_pairs(DIALOGUES, max_context_turns=4, seed=3)
    assert len(pairs) == 5 + 2  # every turn after the first is a response
    for pair in pairs:
        dialogue, turn = pair.id.split(":")
        turns = dict(DIALOGUES)[dialogue]
        assert pair.response == turns[int(turn)]
        assert 1 <= len(pair.context) <= min(4, int(turn))
        assert pair.context == turns[int(turn) - len(pair.context):int(turn)]
    assert len({len(p.context) for p in pairs}) > 1  # the length is drawn, not fixed
    assert all(len(p.context) == 1 for p in dialogue_pairs(DIALOGUES, max_context_turns=1))


def test_syntactic_perturbations():
    rng = random.Random(0)
    text = "i went up the big hill near the old town"
    for _ in range(20):
        dropped = word_drop(text, rng).split()
        assert 1 <= len(dropped) < 10 and all(w in text.split() for w in dropped)
        shuffled = word_shuffle(text, rng).split()
        assert sorted(shuffled) == sorted(text.split()) and shuffled != text.split()
        repeated = word_repeat(text, rng).split()
        assert 11 <= len(repeated) <= 13 and [w for i, w in enumerate(repeated) if i == 0 or w != repeated[i - 1]]
    assert word_drop("hello", rng) == "hello" and word_repeat("", rng) == ""


def test_augmenter_without_models_skips_them_with_one_line_each_and_runs_the_rest():
    augmenter = Augmenter(per_technique=3, seed=1)
    lines = augmenter.skip_lines()
    assert len(lines) == 5
    assert any(line.startswith("mask_fill skipped: no masked language model") for line in lines)
    assert any(line.startswith("back_translation skipped: needs two seq2seq") for line in lines)
    assert any(line.startswith("random_generated skipped: its pool is empty: generation") for line in lines)
    pairs = dialogue_pairs(DIALOGUES)
    records = augmenter.augment(pairs, chunk=0)
    counts = technique_counts(records)
    assert counts["original"] == len(pairs)
    for technique in ("word_drop", "word_shuffle", "word_repeat", "random_other_dialogue"):
        assert counts[technique] == 3 * len(pairs), technique
    assert all(counts[t] == 0 for t in (*MODEL_BASED, "random_generated", "random_back_translated"))
    for record in records:
        if record["technique"] == "random_other_dialogue":  # drawn from another dialogue
            own = dict(DIALOGUES)[record["pair"].split(":")[0]]
            assert record["response"] not in own
    assert augmenter.augment(pairs, chunk=0) == records  # a chunk redone gives the same records
    assert augmenter.augment(pairs, chunk=1) != records


def test_model_based_augmenters_on_tiny_models(tmp_path):
    augmenter = Augmenter(per_technique=2, mask_model=str(tiny_masked_lm_dir(tmp_path / "mlm")),
                          translate_forward=str(tiny_seq2seq_dir(tmp_path / "en-de", seed=1)),
                          translate_backward=str(tiny_seq2seq_dir(tmp_path / "de-en", seed=2)),
                          generator_model=str(tiny_causal_lm_dir(tmp_path / "gpt")), device="cpu", seed=5)
    assert augmenter.skip_lines() == []
    pairs = dialogue_pairs(DIALOGUES)
    records = augmenter.augment(pairs, batch_size=4)
    counts = technique_counts(records)
    assert set(counts) == set(TECHNIQUES)
    for technique in ("mask_fill", "back_translation", "generation", "random_generated", "random_back_translated"):
        assert 0 < counts[technique] <= 2 * len(pairs), technique
    # mask-and-fill keeps the words outside the blanked span: the start or the end of the response survives
    for record in (r for r in records if r["technique"] == "mask_fill"):
        original, filled = record["original"].split(), record["response"].split()
        assert filled[:1] == original[:1] or filled[-1:] == original[-1:], (original, filled)
    pools = {r["response"] for r in records if r["technique"] == "generation"}
    assert {r["response"] for r in records if r["technique"] == "random_generated"} <= pools
    originals = [r for r in records if r["technique"] == "original"]
    assert all(r.get("noised") for r in originals)  # the back-translation is the student's x̂
    # a seq2seq dialogue model works as the generator too
    seq2seq = Augmenter(per_technique=1, generator_model=str(tmp_path / "en-de"), device="cpu")
    assert technique_counts(seq2seq.augment(pairs[:2]))["generation"] > 0


def test_pseudo_labels_drop_uncertain_pairs_and_balance_classes():
    probabilities = np.array([
        [0.90, 0.05, 0.05],  # random, confident
        [0.80, 0.10, 0.10],  # random, confident
        [0.75, 0.20, 0.05],  # random, confident
        [0.60, 0.30, 0.10],  # random, below 0.7: dropped
        [0.10, 0.70, 0.20],  # adversarial, exactly 0.7: kept
        [0.05, 0.85, 0.10],  # adversarial, confident
        [0.30, 0.30, 0.40],  # relevant, dropped
        [0.01, 0.04, 0.95],  # relevant, confident
        [0.02, 0.08, 0.90],  # relevant, confident
        [0.10, 0.10, 0.80],  # relevant, confident
        [0.00, 0.05, 0.95],  # relevant, confident
    ])
    kept, counts = filter_and_balance(probabilities, threshold=0.7, seed=0)
    assert counts["before"] == {"random": 4, "adversarial": 2, "relevant": 5}
    assert counts["after_threshold"] == {"random": 3, "adversarial": 2, "relevant": 4}
    assert counts["after_balance"] == {"random": 2, "adversarial": 2, "relevant": 2}
    assert (counts["pairs_before"], counts["pairs_after"], counts["empty_classes"]) == (11, 6, [])
    assert {4, 5} <= set(kept) and not {3, 6} & set(kept) and kept == sorted(kept)
    assert filter_and_balance(probabilities, threshold=0.7, seed=0)[0] == kept  # seeded
    unbalanced, counts = filter_and_balance(probabilities, threshold=0.7, balance=False)
    assert unbalanced == [0, 1, 2, 4, 5, 7, 8, 9, 10]
    kept, counts = filter_and_balance(probabilities, threshold=0.9)  # only random and relevant survive
    assert counts["empty_classes"] == ["adversarial"] and counts["after_balance"] == {
        "random": 1, "adversarial": 0, "relevant": 1}
    assert filter_and_balance(probabilities, threshold=0.99)[0] == []
    with pytest.raises(ValueError, match="shape"):
        filter_and_balance(np.ones((3, 2)))


def test_ddpp_pairs_split_by_context_and_collate_with_an_mlm_view(tmp_path):
    pairs = read_ddpp_pairs(toy_ddpp(tmp_path / "toy.json", 10))
    assert len(pairs) == 150 and [p.target for p in pairs[:15:5]] == [(1, 0, 0), (0, 1, 0), (0, 0, 1)]
    train, validation = split_by_context(pairs, validation=0.2, seed=1)
    assert len(validation) == 30 and not {p.group for p in train} & {p.group for p in validation}
    tokenizer = load_tokenizer()
    dataset = LabelledDataset([LabelledPair(["do you like tea ?"], "yes i love tea very much", (0.1, 0.2, 0.7))] * 4,
                              tokenizer, noised=True)
    collator = collator_for(tokenizer, mlm=True, mlm_probability=0.5)
    assert isinstance(collator, LabelledCollator)
    batch = collator([dataset[i] for i in range(4)])
    assert batch["target"].shape == (4, 3) and "noised_input_ids" in batch
    assert not torch_equal(batch["noised_input_ids"], batch["input_ids"])  # the response was noised
    chosen = batch["mlm_labels"] != -100
    assert chosen.any() and not chosen[:, 0].any()  # [CLS] is never chosen
    assert (batch["input_ids"][chosen] == batch["mlm_labels"][chosen]).all()


def torch_equal(a, b) -> bool:
    return a.shape == b.shape and bool((a == b).all())


def test_dialogue_sources_read_both_formats_and_name_a_bad_line(tmp_path):
    from ml.trainers.mdd_eval import read_dialogues

    source = tmp_path / "mixed.jsonl"
    source.write_text('{"id": "x", "turns": [{"speaker": "A", "text": "hi"}, "hello"]}\n'
                      '{"dialog_id": 7, "context": ["how are you"], "positive_responses": ["fine", "good"]}\n')
    assert read_dialogues(source) == [("mixed/x", ["hi", "hello"]), ("mixed/7", ["how are you", "fine"])]
    source.write_text('{"id": 1, "turns": ["a", "b"]}\n{"id": 2, "text": "no turns"}\n')
    with pytest.raises(ValueError, match="mixed.jsonl line 2: neither 'turns' nor 'context'"):
        read_dialogues(source)
    source.write_text('{"id": 1, "turns": ["a", "b"]}\nnot json\n')
    with pytest.raises(ValueError, match="mixed.jsonl line 2: not JSON"):
        read_dialogues(source)
