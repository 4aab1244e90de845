"""Chat transcripts scored by a dialogue-level metric (``cosine_turns``: the packaged MiniLM's cosine of
consecutive turns) and shown on the human-vs-metric page: a scoring run over a chat study scores the
ended chats' conversations (one score each, none for a chat still going on), the page lists the chat
study as scored once they are, and its correlations match SciPy on the same (human, metric) pairs."""
import numpy as np
import pytest
from scipy import stats

from metrics.models import MetricScore
from metrics.scoring import selectors, services
from studies.models import Chat, Rating, Study
from tests.studies.chat.helpers import bot_system, chat_and_rate, chat_study

pytestmark = pytest.mark.django_db


def test_chat_transcripts_scored_by_a_dialogue_metric_on_the_human_vs_metric_page(client, user, local_bot,
                                                                                loopback_allowed):
    bot_system("chat-rule", local_bot.url("rule"))
    bot_system("chat-parrot", local_bot.url("parrot"))
    study = chat_study(user, ["chat-rule", "chat-parrot"], design_config={"points": 5}, raters_per_item=5,
                       items_per_assignment=2, unit_config={"min_turns": 2, "max_turns": 6})
    for n in range(4):
        chat_and_rate(study, f"chatter-{n}", seed=n, good_system="chat-rule")
    unfinished = chat_and_rate(study, "still-chatting", seed=9, finish=False)
    model = services.metric_model_default(key="cosine_turns")
    client.force_login(user)
    page = client.get(f"/experiments/{study.experiment.slug}/metrics/{model.name}/").content.decode()
    assert 'id="score-first"' in page and f'value="{study.slug}"' in page  # offered for scoring first
    offered = client.get(f"/metrics/?study={study.slug}").content.decode()  # only dialogue-level metrics
    listed = offered.split('data-testid="offered-models">')[1].split("</select>")[0]
    assert f'value="{model.name}"' in listed and 'value="readability"' not in listed
    turn_level = client.get(f"/experiments/{study.experiment.slug}/metrics/readability/").content.decode()
    assert 'data-testid="not-offered"' in turn_level  # a turn-level metric points to the dialogue-level ones

    run = services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))
    ended = set(Chat.objects.filter(item__study=study, status=Chat.Status.ENDED).values_list("conversation_id", flat=True))
    scored = dict(MetricScore.objects.filter(metric_model=model).values_list("conversation_id", "value"))
    assert run.status == "done" and set(scored) == ended and len(ended) == 8
    in_progress = Chat.objects.get(assignment=unfinished).conversation_id
    assert in_progress not in scored  # a chat still going on is not scored
    assert all(np.isfinite(v) and -1 <= v <= 1 for v in scored.values())

    report = selectors.compute_human_metric_report(Study.objects.filter(pk=study.pk), model, bootstrap=0)
    cell = next(c for c in report["cells"] if c["criterion"] == "overall")
    assert cell["unit"] == "chat" and cell["n_responses"] == 8 and cell["missing_scores"] == 0
    ratings = Rating.objects.filter(assignment__study=study, criterion__name="overall")
    human = {cid: value for cid, value in ratings.values_list("conversation_id", "value")}
    pairs = [(human[c], scored[c]) for c in sorted(human)]
    expected = stats.spearmanr([h for h, _ in pairs], [m for _, m in pairs]).statistic
    assert cell["response_level"]["spearman"]["r"] == pytest.approx(expected, abs=1e-9)
    assert {p["system"] for p in cell["points"]} == {"chat-rule", "chat-parrot"}

    page = client.get(f"/experiments/{study.experiment.slug}/metrics/{model.name}/")
    html = page.content.decode()
    assert page.status_code == 200 and 'id="score-first"' not in html  # every ended chat is scored now
    assert f"{cell['response_level']['spearman']['r']:.2f}" in html
