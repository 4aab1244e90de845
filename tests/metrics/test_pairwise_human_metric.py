"""Human vs metric on a pairwise study: the page shows the share of pairs where the metric scores higher
the response the human majority preferred, matching a count made here from the stored rows."""
from collections import Counter

import pytest

from metrics.models import MetricScore
from metrics.scoring import services
from metrics.scoring.pairwise import pairwise_human_metric
from studies.models import Comparison, Study
from tests.studies import test_pairwise as pairwise_helpers

pytestmark = pytest.mark.django_db


def test_pairwise_human_vs_metric_page_and_counts(client, user, make_study):
    study = pairwise_helpers.finished_study(make_study, n_raters=4)
    model = services.metric_model_default(key="readability")
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))
    client.force_login(user)
    page = client.get(f"/experiments/{study.experiment.slug}/metrics/{model.name}/")
    assert page.status_code == 200 and 'data-testid="pairwise-human-metric"' in page.content.decode()

    (entry,) = pairwise_human_metric(Study.objects.filter(pk=study.pk), model)
    row = next(r for r in entry["rows"] if r["criterion"] == "coherence")
    scores = dict(MetricScore.objects.filter(metric_model=model).values_list("response_id", "value"))
    votes: dict[int, Counter] = {}
    responses: dict[int, tuple[int, int]] = {}
    for c in Comparison.objects.filter(criterion__name="coherence"):
        winner = {"left": c.left_id, "right": c.right_id, "tie": "tie"}[c.choice]
        votes.setdefault(c.item_id, Counter())[winner] += 1
        responses[c.item_id] = (c.left_id, c.right_id)
    agree = counted = 0
    for item, counter in votes.items():
        (top, n), *rest = counter.most_common()
        if top == "tie" or (rest and rest[0][1] == n):
            continue
        left, right = responses[item]
        if scores[left] == scores[right]:
            continue
        counted += 1
        agree += top == (left if scores[left] > scores[right] else right)
    assert counted > 10 and (row["counted"], row["agree"]) == (counted, agree) and row["pairs"] == len(votes)
    assert row["human_share"] == pytest.approx(1.0)  # the simulated raters all agree
