"""SelF-Eval's data: turn-replacement samples (scores (n − i)/n, levels 0..n, seeded, capped, turns
from other dialogues), Rep-0/1/2, dialogue packing and its truncation count, the batch grid, and the
FED dialogue-level / DSTC9 readers on small hand-made files."""
import json
import math

import pytest
import torch

from ml.data.dialogue_judgments import split_context
from ml.data.replacement import (
    Dialogue,
    ReplacementCollator,
    ReplacementDataset,
    build_samples,
    pack_dialogue,
    read_dialogues,
    rep_levels,
    scatter_scores,
    speaker_labels,
)
from ml.models import load_tokenizer


def dialogues(count=6, turns=4):
    """Every turn text names its dialogue, so a replaced turn shows where it came from."""
    return [Dialogue([f"d{m} t{k}" for k in range(turns + m % 3)], f"d{m}") for m in range(count)]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def test_levels_scores_and_replacements_follow_the_paper():
    source = dialogues()
    groups = build_samples(source, per_level=3, seed=5)
    for m, group in enumerate(groups):
        n = len(source[m].turns)
        assert group.n == n and len(group.levels) == n + 1  # i = 0..n
        assert group.levels[0][0].turns == source[m].turns and len(group.levels[0]) == 1
        for i, level in enumerate(group.levels):
            assert len(level) == min(3, math.comb(n, i))  # capped at per_level, all when fewer exist
            assert len({s.positions for s in level}) == len(level)  # distinct position sets
            for sample in level:
                assert sample.replaced == i and sample.score(n) == pytest.approx((n - i) / n)
                for k, text in enumerate(sample.turns):
                    if k in sample.positions:
                        assert not text.startswith(f"d{m} ")  # from another dialogue
                        assert any(text in d.turns for d in source)
                    else:
                        assert text == source[m].turns[k]


def test_samples_are_seeded_and_capped():
    source = dialogues()
    assert [s.turns for g in build_samples(source, seed=3) for s in g.samples()] == \
        [s.turns for g in build_samples(source, seed=3) for s in g.samples()]
    assert [s.turns for g in build_samples(source, seed=3) for s in g.samples()] != \
        [s.turns for g in build_samples(source, seed=4) for s in g.samples()]
    capped = build_samples(source, per_level=2, max_turns=3, seed=3)
    assert all(g.n == 3 and len(g.levels) == 4 for g in capped)
    assert [len(level) for level in capped[0].levels] == [1, 2, 2, 1]
    with pytest.raises(ValueError, match="at least two dialogues"):
        build_samples(source[:1])


def test_rep_levels_replace_none_one_and_more_than_one_turn():
    source = dialogues(8)
    triples = rep_levels(source, seed=1)
    assert len(triples) == 8
    for m, (rep0, rep1, rep2) in enumerate(triples):
        assert rep0.turns == source[m].turns
        assert rep1.replaced == 1 and sum(a != b for a, b in zip(rep1.turns, source[m].turns, strict=True)) == 1
        assert 2 <= rep2.replaced <= len(source[m].turns)
        assert sum(a != b for a, b in zip(rep2.turns, source[m].turns, strict=True)) == rep2.replaced
    assert [t.turns for x in rep_levels(source, seed=1) for t in x] == [t.turns for x in triples for t in x]


def test_read_dialogues_from_ddpp_and_plain_lines(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"id": 7, "context": ["hi", "hello"], "positive_responses": ["a", "b", ""]}) + "\n"
                    + json.dumps({"id": 9, "turns": [{"speaker": "x", "text": "one"}, "two"]}) + "\n")
    read = read_dialogues(path, responses_per_context=2)
    assert [d.turns for d in read] == [["hi", "hello", "a"], ["hi", "hello", "b"], ["one", "two"]]
    path.write_text('{"id": 1}\n')
    with pytest.raises(ValueError, match="d.json line 1: needs 'turns'"):
        read_dialogues(path)


def test_pack_dialogue_prefixes_speakers_separates_turns_and_keeps_the_beginning(tokenizer):
    packed, cut = pack_dialogue(tokenizer, ["hello there", "hi", "how are you"], max_length=512)
    assert not cut
    text = tokenizer.decode(packed["input_ids"])
    assert text == "[CLS] a : hello there [SEP] b : hi [SEP] a : how are you [SEP]"
    short, cut = pack_dialogue(tokenizer, ["hello there", "hi", "how are you"], max_length=8)
    assert cut and len(short["input_ids"]) == 8
    assert short["input_ids"][:7] == packed["input_ids"][:7] and short["input_ids"][-1] == tokenizer.sep_token_id
    assert speaker_labels(["User", "System", "User"], 3) == ["A", "B", "A"]
    assert speaker_labels(["bot", "bot", "human"], 3) == ["A", "A", "B"]


def test_dataset_counts_truncated_samples_and_the_grid_places_every_score(tokenizer):
    groups = build_samples(dialogues(4, turns=3), per_level=2, seed=0)
    dataset = ReplacementDataset(groups, tokenizer, max_length=10)
    assert dataset.truncated == sum(len(g.samples()) for g in groups)  # every sample is longer than 10 tokens
    assert ReplacementDataset(groups, tokenizer, max_length=512).truncated == 0
    batch = ReplacementCollator(tokenizer.pad_token_id)([dataset[0], dataset[1]])
    count = len(dataset[0][0]) + len(dataset[1][0])
    assert batch["input_ids"].shape[0] == count and batch["shape"] == (2, 5, 2)  # n = 3 and 4 turns
    scores = torch.arange(count, dtype=torch.float32)
    grid, mask = scatter_scores(scores, batch["slots"], batch["shape"])
    assert int(mask.sum()) == count and grid[mask].sort().values.tolist() == scores.tolist()
    # level index = n − i: the dialogue itself (i = 0) sits at index n of its row
    assert grid[0, 3, 0] == 0.0 and mask[0, 3].tolist() == [True, False] and not mask[0, 4].any()


def test_split_context_reads_speaker_prefixes_and_continuation_lines():
    assert split_context("User: hi there\nSystem: hello\nhow can I help?\nUser: bye") == (
        ["hi there", "hello how can I help?", "bye"], ["User", "System", "User"])
    assert split_context("no speaker here") == (["no speaker here"], [""])


def test_a_limit_keeps_a_seeded_subset_in_file_order_not_the_first_lines(tmp_path):
    from ml.trainers import TrainingConfig
    from ml.trainers.self_eval import load_groups

    path = tmp_path / "d.json"
    path.write_text("".join(json.dumps({"id": i, "turns": [f"a{i}", f"b{i}"]}) + "\n" for i in range(50)))
    config = TrainingConfig.for_stage("coarse", metric="self_eval")
    ids = [g.dialogue.id for g in load_groups(str(path), config, limit=10, seed=3)]
    assert len(ids) == 10 and ids != [str(i) for i in range(10)]
    assert [int(i) for i in ids] == sorted(int(i) for i in ids)
    assert ids == [g.dialogue.id for g in load_groups(str(path), config, limit=10, seed=3)]
    assert ids != [g.dialogue.id for g in load_groups(str(path), config, limit=10, seed=4)]
