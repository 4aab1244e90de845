"""ACUTE-Eval's results as the paper reports them: on synthetic judgments with known win rates the
report recovers them; the binomial p and marks against SciPy, the Wilson intervals against
statsmodels, Bradley–Terry's order, position bias; the report page, figure, sheets and live panel."""
import csv
import io
from collections import Counter

import numpy as np
import pytest
from django.test import Client
from scipy.stats import binomtest
from statsmodels.stats.proportion import proportion_confint

from studies.analysis.acute import significance_mark, win_table
from studies.designs import design_for
from studies.designs.acute_report import acute_report, comparisons_frame
from studies.models import Study
from tests.studies.acute_helpers import acute_study, rate_all, system_of

pytestmark = pytest.mark.django_db
TRUE_RATES = {("alpha", "beta"): 0.75, ("alpha", "gamma"): 0.9, ("beta", "gamma"): 0.6}


def known_rates_study(user, *, raters: int = 4):
    """10 pairs per system pair, ``raters`` raters: within each system pair and question the judgments
    go to system a exactly in the share TRUE_RATES gives (every 20 judgments), whatever the side."""
    study = acute_study(user, {"alpha": 10, "beta": 10, "gamma": 10}, raters_per_item=raters)
    seen: Counter = Counter()

    def choose(slot, criterion):
        left, right = slot.response_order
        systems = system_of([left, right])
        a, b = sorted((systems[left], systems[right]))
        key = (a, b, criterion)
        a_wins = seen[key] % 20 < round(20 * TRUE_RATES[(a, b)])
        seen[key] += 1
        winner = a if a_wins else b
        return "left" if systems[left] == winner else "right"

    for r in range(raters):
        rate_all(study, f"known{r}", choose, seed=r)
    return study


def test_acute_results_table_recovers_known_win_rates(user):
    study = known_rates_study(user)
    [entry] = acute_report(Study.objects.filter(pk=study.pk), resamples=50)
    assert entry["n"] == 4 * 30 * 4
    for criterion in entry["criteria"]:
        rates = {(r["system_a"], r["system_b"]): r for r in criterion["win_rates"]}
        assert set(rates) == set(TRUE_RATES)
        for pair, truth in TRUE_RATES.items():
            assert rates[pair]["n"] == 40 and rates[pair]["win_rate_a"] == pytest.approx(truth, abs=1e-12)
            assert rates[pair]["ci_low"] < truth < rates[pair]["ci_high"]


def test_acute_binomial_p_and_significance_marks_match_scipy_binomtest(user):
    study = known_rates_study(user)
    [entry] = acute_report(Study.objects.filter(pk=study.pk), resamples=20)
    for row in entry["criteria"][0]["win_rates"]:
        expected = binomtest(row["wins_a"], row["wins_a"] + row["wins_b"], 0.5, alternative="two-sided").pvalue
        assert row["p"] == pytest.approx(expected, abs=1e-12)
        assert row["mark"] == ("***" if expected < 0.001 else "**" if expected < 0.01 else "*" if expected < 0.05 else "")
    marks = {(r["system_a"], r["system_b"]): r["mark"] for r in entry["criteria"][0]["win_rates"]}
    assert marks[("alpha", "gamma")] == "***" and marks[("beta", "gamma")] == ""  # 36/40 vs 24/40


@pytest.mark.parametrize(("p", "mark"), [(None, ""), (0.2, ""), (0.049, "*"), (0.0099, "**"), (0.0009, "***"),
                                         (0.05, ""), (0.01, "*"), (0.001, "**")])
def test_acute_significance_mark_thresholds(p, mark):
    assert significance_mark(p) == mark


def test_acute_win_table_gives_both_directions_with_wilson_intervals_as_statsmodels(user):
    study = known_rates_study(user, raters=2)
    frame = comparisons_frame(Study.objects.filter(pk=study.pk))
    rows = {(r["criterion"], r["system"], r["opponent"]): r for r in win_table(frame)}
    forward, backward = rows[("humanness", "alpha", "beta")], rows[("humanness", "beta", "alpha")]
    assert forward["win_rate"] + backward["win_rate"] == pytest.approx(1.0, abs=1e-12)
    low, high = proportion_confint(forward["wins"], forward["decisive"], alpha=0.05, method="wilson")
    assert (forward["ci_low"], forward["ci_high"]) == pytest.approx((low, high), abs=1e-9)
    low, high = proportion_confint(backward["wins"], backward["decisive"], alpha=0.05, method="wilson")
    assert (backward["ci_low"], backward["ci_high"]) == pytest.approx((low, high), abs=1e-9)
    assert forward["p"] == backward["p"] and forward["mark"] == backward["mark"]


def test_acute_bradley_terry_orders_the_systems_as_their_true_strengths(user):
    study = known_rates_study(user)
    [entry] = acute_report(Study.objects.filter(pk=study.pk), resamples=50)
    for criterion in entry["criteria"]:
        order = [s["system"] for s in criterion["bt"]["strengths"]]
        assert order == ["alpha", "beta", "gamma"]
        first = criterion["bt"]["strengths"][0]
        assert first["ci_low"] <= first["theta"] <= first["ci_high"]


def test_acute_position_bias_recovers_a_rater_habit_of_picking_the_left(user):
    study = acute_study(user, {"a": 8, "b": 8}, raters_per_item=5)
    rng = np.random.default_rng(7)
    for r in range(5):
        rate_all(study, f"lefty{r}", lambda slot, c: "left" if rng.random() < 0.85 else "right", seed=r)
    [entry] = acute_report(Study.objects.filter(pk=study.pk), resamples=20)
    bias = entry["criteria"][0]["position_bias"]
    assert bias["left_share"] > 0.7 and bias["p"] < 0.01
    assert bias["p"] == pytest.approx(binomtest(bias["left_wins"], bias["decisive"], 0.5).pvalue, abs=1e-12)


def test_acute_report_page_figure_sheets_and_live_panel_render(user):
    study = known_rates_study(user, raters=2)
    client = Client()
    client.force_login(user)
    html = client.get(f"/studies/{study.slug}/report/").content.decode()
    assert 'data-testid="acute-report"' in html and "ACUTE-Eval" in html and "***" in html
    figure = client.get(f"/studies/{study.slug}/report/figures/acute-{study.pk}-engagingness.svg")
    assert figure.status_code == 200 and b"<svg" in figure.content
    design = design_for(study)
    [section] = design.report_sections(Study.objects.filter(pk=study.pk), exclude_flagged=False)
    sheets = design.report_sheets(section)
    assert "ACUTE-Eval win rates" in sheets and len(sheets["ACUTE-Eval win rates"]) == 4 * 3
    [panel] = design.live_panels(study)
    assert {row["criterion"] for row in panel.data} == {"engagingness", "interestingness", "humanness",
                                                        "knowledgeability"}
    xlsx = client.get(f"/studies/{study.slug}/report.xlsx")
    assert xlsx.status_code == 200 and io.BytesIO(xlsx.content).read(2) == b"PK"


def test_acute_every_output_answers_at_zero_and_one_judgment(client, api, user):
    from studies.rating import answers as answering
    from studies.rating import entry as rater_entry
    from tests.studies.test_report_first_rating import _all_outputs_answer

    study = acute_study(user, {"a": 2, "b": 2}, raters_per_item=2, items_per_assignment=1)
    client.force_login(user)
    empty = _all_outputs_answer(client, api, study, n_figures=None)
    assert empty["csv"].decode().count("\n") == 1  # the header alone
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
        platform="invite", external_id="first"))
    slot = assignment.assignment_items.get()
    answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
        c.name: {"choice": "left", "reason": "livelier"} for c in study.criteria.all()})
    answering.assignment_submit(assignment=assignment, total_seconds=30)
    one = _all_outputs_answer(client, api, study, n_figures=None)
    rows = list(csv.DictReader(io.StringIO(one["csv"].decode())))
    assert len(rows) == 4 and {r["reason"] for r in rows} == {"livelier"}
    assert 'data-testid="acute-report"' in one["page"]
