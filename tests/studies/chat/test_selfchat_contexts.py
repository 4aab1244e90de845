"""Self-chats: each bot sees the transcript's dialogue (the opener is bot b's own turn); personas and
openers drawn per conversation (seeded, balanced, the same for every run of one seed, so systems meet the
same contexts) and recorded on each conversation; several runs of several pairs of bots into one corpus
that one ACUTE-Eval study compares; a cancelled run stops before its next call."""
from collections import Counter

import pytest
from django.core.exceptions import ValidationError

from studies.authoring import services as authoring
from studies.chat import selfchat
from studies.chat.local_bot import LocalBot
from studies.models import Conversation, Corpus, SelfChatRun
from tests.studies.chat.test_selfchat import OPENERS, bot_requests, endpoint, make_run

pytestmark = pytest.mark.django_db
PERSONAS = ["I am a chef.", "I love the sea.", "I grow tomatoes."]


@pytest.fixture
def two_bots(loopback_allowed):
    with LocalBot() as first, LocalBot() as second:
        yield first, second


def test_selfchat_bot_b_sees_the_dialogue_of_the_transcript(user, two_bots):
    first, second = two_bots
    endpoint("rule-a", first.url("rule"))
    endpoint("parrot-b", second.url("parrot", "openai"), protocol="openai", model_name="parrot-1")
    run = selfchat.selfchat_run(run=make_run(user, conversations=1, turns=4))
    transcript = Conversation.objects.get(corpus=run.corpus).turns
    sent_b = [r["body"]["messages"] for r in bot_requests(second)]
    sent_a = [r["body"]["turns"] for r in bot_requests(first)]
    for seen, upto in zip(sent_b, (2, 4), strict=True):  # b answers after transcript turns 0..1 and 0..3
        roles = ["assistant" if t["speaker"] == "parrot-b" else "user" for t in transcript[:upto]]
        assert [m["role"] for m in seen] == roles
        assert [m["content"] for m in seen] == [t["text"] for t in transcript[:upto]]
        assert all(x["role"] != y["role"] for x, y in zip(seen, seen[1:], strict=False))  # never two in a row
    for seen, upto in zip(sent_a, (1, 3), strict=True):
        assert [t["speaker"] for t in seen] == ["system" if t["speaker"] == "rule-a" else "user"
                                               for t in transcript[:upto]]
        assert [t["text"] for t in seen] == [t["text"] for t in transcript[:upto]]


def test_selfchat_persona_draws_are_balanced_seeded_and_the_same_for_every_run_of_a_seed():
    drawn = selfchat.balanced_draws(PERSONAS, 10, seed=7, stream="personas-a")
    assert sorted(Counter(drawn).values()) == [3, 3, 4]
    assert drawn == selfchat.balanced_draws(PERSONAS, 10, seed=7, stream="personas-a")
    assert drawn != selfchat.balanced_draws(PERSONAS, 10, seed=8, stream="personas-a")
    assert selfchat.balanced_draws([], 3, seed=1, stream="x") == ["", "", ""]


def test_selfchat_personas_are_sent_after_the_system_prompt_and_recorded_on_each_conversation(user, two_bots):
    first, second = two_bots
    endpoint("rule-a", first.url("rule"))
    endpoint("parrot-b", second.url("parrot", "openai"), protocol="openai", model_name="parrot-1")
    run = make_run(user, conversations=6, turns=2, seed=3, personas={"a": PERSONAS, "b": ["I am a parrot."]},
                   bot_settings={"b": {"system_prompt": "Be brief."}})
    run = selfchat.selfchat_run(run=run)
    conversations = Conversation.objects.filter(corpus=run.corpus).order_by("external_id")
    assert Counter(c.metadata["personas"]["a"] for c in conversations) == Counter(dict.fromkeys(PERSONAS, 2))
    for conversation in conversations:
        meta = conversation.metadata
        assert meta["personas"]["b"] == "I am a parrot." and meta["bots"]["a"]["persona"] == meta["personas"]["a"]
        assert meta["seed"] == 3 and meta["opener"] == conversation.turns[0]["text"]
        dialogue = conversation.selfchat
        assert dialogue.personas == {"a": meta["personas"]["a"], "b": "I am a parrot."}
    contexts = [r["body"].get("context") for r in bot_requests(first)]
    assert contexts == [c.metadata["personas"]["a"] for c in conversations]
    assert bot_requests(second)[0]["body"]["messages"][0] == {"role": "system", "content": "Be brief.\n\nI am a parrot."}


def test_selfchat_openers_are_drawn_balanced_and_a_second_run_into_the_corpus_meets_the_same_contexts(
        user, two_bots):
    first, second = two_bots
    endpoint("rule-a", first.url("rule"))
    endpoint("parrot-b", second.url("parrot"))
    one = make_run(user, b="rule-a", conversations=7, turns=1, seed=11, personas={"a": PERSONAS})
    assert sorted(Counter(one.dialogues.values_list("opener", flat=True)).values()) == [2, 2, 3]
    two = make_run(user, a="parrot-b", b="parrot-b", conversations=7, turns=1, personas={"a": PERSONAS},
                   corpus=one.corpus)
    assert two.seed == 11  # the corpus's first run's seed, so both systems get the same draws
    pairs = [list(run.dialogues.order_by("index").values_list("opener", "personas")) for run in (one, two)]
    assert pairs[0] == pairs[1]
    assert list(one.dialogues.order_by("index").values_list("opener", flat=True)) != OPENERS * 2 + OPENERS[:1]


def test_selfchat_bad_personas_and_seed_are_named_by_field_and_line(user, two_bots):
    first, _ = two_bots
    endpoint("rule-a", first.url("rule"))
    with pytest.raises(ValidationError) as refused:
        make_run(user, b="rule-a", personas={"a": ["fine", " "], "b": ["x" * 2001]}, seed=-1)
    errors = refused.value.message_dict
    assert "line 2" in errors["personas.a"][0] and "line 1" in errors["personas.b"][0]
    assert "2000" in errors["personas.b"][0] and "seed" in errors
    with pytest.raises(ValidationError) as refused:
        make_run(user, b="rule-a", personas={"c": ["x"]})
    assert "personas" in refused.value.message_dict and not SelfChatRun.objects.exists()


def test_selfchat_runs_of_two_pairs_of_bots_into_one_corpus_feed_one_acute_study(user, two_bots):
    first, second = two_bots
    endpoint("rule-a", first.url("rule"))
    endpoint("parrot-b", second.url("parrot"))
    endpoint("rule-c", first.url("rule"))
    corpus = selfchat.selfchat_run(run=make_run(user, b="rule-a", conversations=2, turns=2, title="Bots")).corpus
    selfchat.selfchat_run(run=make_run(user, a="parrot-b", b="rule-c", conversations=2, turns=2, corpus=corpus))
    selfchat.selfchat_run(run=make_run(user, a="rule-c", b="rule-c", conversations=2, turns=2, corpus=corpus))
    assert Corpus.objects.filter(source_format="selfchat").count() == 1
    systems = Counter(c.metadata["system"] for c in Conversation.objects.filter(corpus=corpus))
    assert systems == {"rule-a": 2, "parrot-b": 2, "rule-c": 2}
    experiment = authoring.experiment_create(owner=user, title="ACUTE over three bots")
    study = authoring.study_create(experiment=experiment, title="acute", design="acute", unit="dialogue")
    assert authoring.study_items_build(study=study, corpus=corpus) == 3 * 2  # 3 system pairs, 2 pairs each
    pairs = Counter(frozenset(item.item_conversations.values_list("conversation__metadata__system", flat=True))
                    for item in study.items.all())
    assert set(pairs.values()) == {2} and len(pairs) == 3


def test_selfchat_cancel_stops_before_the_next_call_and_a_rerun_continues(user, two_bots):
    first, second = two_bots
    endpoint("rule-a", first.url("rule"))
    endpoint("parrot-b", second.url("parrot"))
    run = make_run(user, conversations=3, turns=2)
    calls = []

    def cancel_after_three(dialogue):
        calls.append(dialogue.pk)
        if len(calls) == 3:
            selfchat.selfchat_cancel(run=run)

    run = selfchat.selfchat_run(run=run, on_turn=cancel_after_three)
    assert run.status == SelfChatRun.Status.CANCELLED
    assert len(bot_requests(first)) + len(bot_requests(second)) == 3
    assert Conversation.objects.filter(corpus=run.corpus).count() == 1
    assert selfchat.selfchat_run(run=run).status == SelfChatRun.Status.CANCELLED  # a late delivery does nothing
    assert len(bot_requests(first)) + len(bot_requests(second)) == 3
    with pytest.raises(ValidationError):
        selfchat.selfchat_cancel(run=run)
    selfchat.selfchat_rerun(run=run)
    run = selfchat.selfchat_run(run=run)
    assert run.status == SelfChatRun.Status.DONE and Conversation.objects.filter(corpus=run.corpus).count() == 3
    assert len(bot_requests(first)) + len(bot_requests(second)) == 6
    with pytest.raises(ValidationError) as refused:
        selfchat.selfchat_cancel(run=run)
    assert "done" in refused.value.messages[0]


def test_selfchat_personas_and_openers_are_in_the_acute_export(user, two_bots):
    from studies.designs import acute_report
    from studies.models import Study
    from tests.studies.acute_helpers import rate_all

    first, second = two_bots
    endpoint("rule-a", first.url("rule"))
    endpoint("parrot-b", second.url("parrot"))
    corpus = selfchat.selfchat_run(run=make_run(user, b="rule-a", conversations=2, turns=2, title="Personas",
                                                personas={"a": PERSONAS})).corpus
    selfchat.selfchat_run(run=make_run(user, a="parrot-b", b="parrot-b", conversations=2, turns=2, corpus=corpus,
                                       personas={"a": ["I am a parrot."]}))
    experiment = authoring.experiment_create(owner=user, title="ACUTE personas")
    study = authoring.study_create(experiment=experiment, title="acute", design="acute", unit="dialogue")
    authoring.study_items_build(study=study, corpus=corpus)
    authoring.study_publish(study=study)
    rate_all(study, "r1", lambda slot, criterion: "left")
    rows = list(acute_report.export_rows(Study.objects.filter(pk=study.pk)))
    assert rows and {"left_persona", "right_persona", "left_opener", "right_opener"} <= set(rows[0])
    by_id = {c.external_id: c.metadata for c in Conversation.objects.filter(corpus=corpus)}
    for row in rows:
        for side in ("left", "right"):
            meta = by_id[row[f"{side}_conversation"]]
            assert row[f"{side}_persona"] == meta["personas"]["a"] != ""  # the judged bot is bot a
            assert row[f"{side}_opener"] == meta["opener"]
