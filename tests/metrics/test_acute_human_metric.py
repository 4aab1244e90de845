"""Dialogue-level metrics on ACUTE-Eval over self-chats, end to end through the real services: the self-chat
corpus is offered only dialogue-level metrics (a turn-level one is refused, nothing queued), a scoring run
of the packaged MiniLM's consecutive-turn cosine scores each conversation, and the human-vs-metric page
shows, per question, how often the metric scores higher the conversation the raters' majority chose —
the same share as a count made here from the stored judgments and scores (check pairs left out)."""
import re
from collections import Counter

import pytest

from metrics.models import MetricScore, ScoringRun
from metrics.scoring import services
from metrics.scoring.pairwise import pairwise_human_metric
from studies.authoring import checks
from studies.authoring import services as authoring
from studies.models import Comparison, Conversation, Study
from tests.studies.acute_helpers import acute_study, conversations_corpus, rate_all, system_of

pytestmark = pytest.mark.django_db

TOPICAL = ["do you like hiking in the mountains?", "yes, I love hiking mountain trails", "which mountain trail is your "
           "favourite?", "the ridge trail, the mountain views are great"]
SCATTERED = ["do you like hiking in the mountains?", "my printer ran out of toner", "the stock market fell today",
             "bananas are yellow"]


def selfchat_acute(user):
    """Self-chats of a topical bot and a scattered one (wording varied per conversation), an ACUTE study on
    them with a check pair, and three raters who prefer the topical bot on every real pair."""
    corpus = conversations_corpus(user, {"topical": 3, "scattered": 3}, slug="selfchats")
    corpus.source_format = "selfchat"
    corpus.save(update_fields=["source_format"])
    for conversation in Conversation.objects.filter(corpus=corpus):
        lines = TOPICAL if conversation.metadata["system"] == "topical" else SCATTERED
        n = conversation.external_id.rsplit("-", 1)[1]
        conversation.turns = [{"speaker": ("user", "bot")[t % 2], "text": f"{text} ({n})"} for t, text in enumerate(lines)]
        conversation.save(update_fields=["turns"])
    study = acute_study(user, corpus=corpus, publish=False, criteria=[{"name": "engagingness"}, {"name": "humanness"}])
    checks.check_item_create(study=study, kind="gold", rules=[{"greater": 1, "than": 2}],
                             conversations=["user: hi\nbot: hello, how are you today?", "user: hi\nbot: hi hi hi hi"])
    authoring.study_publish(study=study)

    def choose(slot, criterion):
        left, right = slot.response_order
        systems = system_of([left, right])
        if systems[left] == systems[right]:  # the check pair
            return "left"
        return "left" if systems[left] == "topical" else "right"
    for n in range(3):
        rate_all(study, f"acute-rater-{n}", choose, seed=n)
    return study, corpus


def test_selfchats_scored_by_a_dialogue_metric_reach_acute_human_vs_metric(client, user):
    study, corpus = selfchat_acute(user)
    client.force_login(user)
    turn_level = services.metric_model_default(key="readability")
    dialogue_level = services.metric_model_default(key="cosine_turns")
    offered = client.get(f"/metrics/?corpus={corpus.slug}").content.decode()
    listed = re.search(r'data-testid="offered-models">(.*?)</select>', offered, re.S).group(1)
    assert f'value="{dialogue_level.name}"' in listed and f'value="{turn_level.name}"' not in listed
    assert f'value="{dialogue_level.name}"' in re.search(
        r'data-testid="offered-models">(.*?)</select>', client.get(f"/metrics/?study={study.slug}").content.decode(),
        re.S).group(1)

    refused = client.post("/metrics/runs/start/", {"metric_model": turn_level.name, "corpus": corpus.slug},
                          follow=True).content.decode()
    assert "turn-level" in refused and corpus.slug in refused and not ScoringRun.objects.exists()
    page = client.get(f"/experiments/{study.experiment.slug}/metrics/{turn_level.name}/").content.decode()
    assert 'data-testid="not-offered"' in page and f"?study={study.slug}" in page

    client.post("/metrics/runs/start/", {"metric_model": dialogue_level.name, "corpus": corpus.slug})
    run = services.scoring_run_execute(run=ScoringRun.objects.get(corpus=corpus))
    scores = dict(MetricScore.objects.filter(metric_model=dialogue_level).values_list("conversation_id", "value"))
    assert run.status == "done" and set(scores) == set(corpus.conversations.values_list("pk", flat=True))

    [entry] = pairwise_human_metric(Study.objects.filter(pk=study.pk), dialogue_level)
    assert entry["noun"] == "conversation"
    for row in entry["rows"]:
        votes: dict[int, Counter] = {}
        sides: dict[int, tuple[int, int]] = {}
        for c in Comparison.objects.filter(item__study=study, item__check_kind="", criterion__name=row["criterion"]):
            votes.setdefault(c.item_id, Counter())[{"left": c.left_conversation_id,
                                                    "right": c.right_conversation_id}[c.choice]] += 1
            sides[c.item_id] = (c.left_conversation_id, c.right_conversation_id)
        agree = sum(max(votes[i], key=votes[i].get) == max(sides[i], key=scores.get) for i in votes)
        assert row["pairs"] == len(votes) == 3 and row["counted"] == 3 and row["agree"] == agree
        assert row["share"] == pytest.approx(agree / 3)

    html = client.get(f"/experiments/{study.experiment.slug}/metrics/{dialogue_level.name}/").content.decode()
    assert 'id="score-first"' not in html and 'data-testid="pairwise-human-metric"' in html
    assert "does cosine_turns prefer the conversation humans preferred?" in html.replace(dialogue_level.name,
                                                                                           "cosine_turns")
    assert f"{entry['rows'][0]['share']:.2f}" in html
