"""metrics.ppi.estimates: prediction-powered estimates from the database, checked against ppi_py called directly on
arrays read here from the stored ratings and metric scores (1e-9); refusals; pairwise win rates."""
import io

import numpy as np
import ppi_py
import pytest
from scipy import stats

from metrics.models import MetricScore
from metrics.ppi import estimates as ppi
from metrics.scoring import services
from studies.authoring import services as study_services
from studies.corpora import services as corpus_imports
from studies.models import Comparison, Rater, Rating, Response, Study
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from tests.conftest import jsonl_bytes
from tests.studies import test_pairwise as pairwise_helpers

pytestmark = pytest.mark.django_db
TOL = 1e-9


def _ppi_py_ci(y, f, fu, alpha=0.05):
    """ppi_py's interval with ppi_py's own power-tuning estimator, unclipped (Concord's default, see
    studies.analysis.ppi): ``_calc_lam_glm`` on the mean's gradients, as ``ppi_mean_ci`` calls it."""
    y, f, fu = (np.asarray(a, dtype=float).reshape(-1, 1) for a in (y, f, fu))
    lam = float(ppi_py.ppi._calc_lam_glm(y, f, fu, np.eye(1), clip=False))
    return ppi_py.ppi_mean_ci(y, f, fu, alpha=alpha, lam=lam), lam
QUALITY = {"seq2seq": 2.0, "hred": 3.5, "thred": 4.0, "human": 5.0}


WORDS = ["well", "that", "is", "a", "fair", "point", "and", "I", "would", "say", "the", "answer", "depends", "on", "what", "you", "mean", "by", "it", "after", "all"]


def varied_corpus_lines(n: int, seed: int = 4) -> bytes:
    """Responses of varied length and wording, so that the heuristic metrics vary from unit to unit."""
    rng = np.random.default_rng(seed)
    header = {"concord": "dialogues/1", "systems": list(QUALITY), "reference": "human"}
    conversations = [{"id": f"v{i}", "turns": [f"Hello number {i}", f"Hi there {i}, how are you?"],
                      "responses": {s: " ".join(rng.choice(WORDS, int(rng.integers(2, 18)))) + "." for s in QUALITY}}
                     for i in range(n)]
    return jsonl_bytes(conversations, header)


@pytest.fixture
def corpus12(user):
    return corpus_imports.dialogues_import(stream=io.BytesIO(varied_corpus_lines(12)), source_name="twelve.jsonl",
                                           corpus_slug="twelve", owner=user).corpus


def rated_study(user, corpus, *, limit=8, raters=3, seed=0, reward=None):
    experiment = study_services.experiment_create(owner=user, title="ppi")
    study = study_services.study_create(experiment=experiment, title="PPI Likert", design="likert",
                                        raters_per_item=raters, items_per_assignment=limit or 12)
    if reward is not None:
        Study.objects.filter(pk=study.pk).update(reward=reward)
    study_services.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"],
                                     reference_system="human", limit=limit, seed=seed)
    study_services.study_publish(study=study)
    rng = np.random.default_rng(seed)
    systems = dict(Response.objects.values_list("pk", "system__name"))
    for r in range(raters):
        rater = Rater.objects.create(platform="invite", external_id=f"ppi-{seed}-{r}")
        assignment = rater_entry.assignment_start(study=study, rater=rater, seed=r)
        for slot in assignment.assignment_items.all():
            answers = {c: {resp: int(np.clip(round(QUALITY[systems[resp]] + rng.normal(0, 0.8)), 1, 6))
                           for resp in slot.response_order} for c in ("readability", "coherence")}
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=5.0)
        answering.assignment_submit(assignment=assignment, total_seconds=60.0)
    study.refresh_from_db()
    return study


def score(model, *, study=None, corpus=None):
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, corpus=corpus,
                                                                 enqueue=False))


def test_ppi_study_estimates_match_ppi_py_on_the_stored_rows(user, corpus12):
    study = rated_study(user, corpus12, reward="1.20")
    model = services.metric_model_default(key="readability")
    score(model, corpus=corpus12)
    got = ppi.study_estimates(study, model, target_width=0.5)
    assert got["problem"] is None and got["method"] == "random" and got["frame_size"] == 12 * 4
    scores = dict(MetricScore.objects.filter(metric_model=model).values_list("response_id", "value"))
    frame = set(study.item_draw["frame"])
    coherence = next(c for c in got["criteria"] if c["criterion"] == "coherence")
    assert [r["system"] for r in coherence["systems"]] == ["hred", "human", "seq2seq", "thred"]
    arrays = {}
    for row in coherence["systems"]:
        ratings = Rating.objects.filter(criterion__name="coherence", response__system__name=row["system"],
                                        assignment__study=study)
        by_response: dict[int, list[float]] = {}
        for response_id, value in ratings.values_list("response_id", "value"):
            by_response.setdefault(response_id, []).append(value)
        labelled = sorted(by_response)
        unlabelled = sorted(set(Response.objects.filter(system__name=row["system"], position=0, conversation_id__in=frame)
                                .values_list("pk", flat=True)) - set(labelled))
        y = np.array([np.mean(by_response[r]) for r in labelled])
        f, fu = np.array([scores[r] for r in labelled]), np.array([scores[r] for r in unlabelled])
        arrays[row["system"]] = (labelled, y, f, fu)
        (low, high), lam = _ppi_py_ci(y, f, fu)
        assert row["se_asymptotic"] == pytest.approx((high[0] - low[0]) / (2 * stats.norm.ppf(0.975)), abs=TOL)
        assert row["estimate"] == pytest.approx(ppi_py.ppi_mean_pointestimate(y, f, fu, lam=lam)[0], abs=TOL)
        half = stats.t.ppf(0.975, row["df"]) * row["se"]
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((row["estimate"] - half, row["estimate"] + half), abs=TOL)
        assert (row["human_ci_low"], row["human_ci_high"]) == pytest.approx(
            tuple(stats.ttest_1samp(y, 0).confidence_interval(0.95)), abs=TOL)
        assert (row["n"], row["n_unlabelled"], row["frame"]) == (8, 4, 12)
        assert row["rater_noise"]["ratings_per_unit"] == 3.0
    # a difference: paired by conversation (every item carries every system)
    diff = next(d for d in coherence["differences"] if (d["a"], d["b"]) == ("hred", "seq2seq"))
    (_, ya, fa, fua), (_, yb, fb, fub) = arrays["hred"], arrays["seq2seq"]  # response ids follow conversation order
    (low, high), lam = _ppi_py_ci(ya - yb, fa - fb, fua - fub)
    assert diff["paired"] and diff["estimate"] == pytest.approx((low[0] + high[0]) / 2, abs=TOL)
    assert diff["se_asymptotic"] == pytest.approx((high[0] - low[0]) / (2 * stats.norm.ppf(0.975)), abs=TOL)
    assert diff["estimate"] > 0 and diff["p"] < 0.05  # hred is rated 1.5 points above seq2seq
    assert coherence["ranking"][0]["system"] == "human" and coherence["ranking"][-1]["system"] == "seq2seq"
    # the planner: ppi_mean_power on the same arrays, and the pay plan's cost of the extra items
    plan = next(p for p in coherence["plan"] if p["system"] == "thred")
    _, y, f, _ = arrays["thred"]
    n0 = (2 * 1.959963984540054 * y.std() / 0.5) ** 2
    assert plan["needed_without_metric"] == int(np.ceil(n0))
    if n0 < 12:
        power = ppi_py.ppi_mean_power(y, f, cost_Y=1.0, cost_Yhat=1e-9, effective_n=n0, n_max=12)
        assert plan["needed_with_metric"] == max(power["n"], 2)
    pay = got["pay"]
    more = pay["more_without_metric"]
    assert more == max(p["more_without_metric"] for c in got["criteria"] for p in c["plan"])
    assert pay["cost_without_metric"] == pytest.approx(1.20 * np.ceil(more * 3 / 8)) and pay["remaining_in_frame"] == 4


def test_ppi_refuses_unscored_frames_and_unrecorded_draws(user, corpus12):
    study = rated_study(user, corpus12, limit=6, raters=2)
    model = services.metric_model_default(key="readability")
    score(model, study=study)  # the study's items only: the rest of the frame has no score
    got = ppi.study_estimates(study, model)
    assert "24 of the frame's 48 units have no score" in got["problem"] and got["score_corpus"] == "twelve"
    assert got["criteria"] == []
    Study.objects.filter(pk=study.pk).update(item_draw={})
    study.refresh_from_db()
    assert "not recorded" in ppi.study_estimates(study, model)["problem"]


def test_ppi_census_study_estimates_equal_human_only(user, corpus12):
    study = rated_study(user, corpus12, limit=None, raters=2)
    model = services.metric_model_default(key="coherence")
    score(model, study=study)
    got = ppi.study_estimates(study, model)
    assert got["method"] == "all"
    for row in got["criteria"][0]["systems"]:
        assert row["n_unlabelled"] == 0 and row["ci_low"] == pytest.approx(row["human_ci_low"], abs=TOL)
        assert "adds nothing" in row["note"]


def test_ppi_pairwise_win_rates_match_ppi_py(user, make_study):
    study = pairwise_helpers.finished_study(make_study, n_raters=2, contrarian=True)  # 24 of 36 items rated
    model = services.metric_model_default(key="readability")
    rng = np.random.default_rng(1)  # the small corpus's templated responses score alike: store varied scores
    MetricScore.objects.bulk_create([MetricScore(metric_model=model, response_id=pk, value=float(rng.normal()))
                                     for pk in Response.objects.values_list("pk", flat=True)])
    got = ppi.study_estimates(study, model)
    assert got["problem"] is None and got["method"] == "all"
    criterion = next(c for c in got["pairwise"] if c["criterion"] == "coherence")
    row = next(w for w in criterion["win_rates"] if (w["a"], w["b"]) == ("hred", "seq2seq"))
    # the same arrays from the stored rows: per rated item, hred's share of the judgments (ties half); the metric's
    # outcome on every conversation of the frame with both systems
    scores = dict(MetricScore.objects.filter(metric_model=model).values_list("response_id", "value"))
    response = {(c, s): r for r, c, s in Response.objects.filter(position=0, conversation_id__in=study.item_draw["frame"])
                .values_list("pk", "conversation_id", "system__name")}
    shares: dict[int, list[float]] = {}
    for c in Comparison.objects.filter(criterion__name="coherence", item__study=study).select_related(
            "left__system", "item"):
        if {c.left.system.name, c.right.system.name} == {"hred", "seq2seq"}:
            hred_left = c.left.system.name == "hred"
            share = {"left": 1.0 if hred_left else 0.0, "right": 0.0 if hred_left else 1.0, "tie": 0.5}[c.choice]
            shares.setdefault(c.item.conversation_id, []).append(share)

    def outcome(conversation):
        a, b = scores[response[(conversation, "hred")]], scores[response[(conversation, "seq2seq")]]
        return 1.0 if a > b else 0.0 if a < b else 0.5

    both = sorted(c for (c, s) in response if s == "hred" and (c, "seq2seq") in response)
    labelled = sorted(shares)
    y = np.array([np.mean(shares[c]) for c in labelled])
    f, fu = np.array([outcome(c) for c in labelled]), np.array([outcome(c) for c in both if c not in shares])
    assert len(fu) > 0 and row["n"] == len(labelled)
    (low, high), _ = _ppi_py_ci(y, f, fu)
    assert row["estimate"] == pytest.approx((low[0] + high[0]) / 2, abs=TOL)
    assert row["se_asymptotic"] == pytest.approx((high[0] - low[0]) / (2 * stats.norm.ppf(0.975)), abs=TOL)
    assert row["human_estimate"] == pytest.approx(y.mean(), abs=TOL)
    bt = criterion["bradley_terry"]  # the human reference wins every comparison here: no finite strengths
    assert bt["n"] == len(set(Comparison.objects.filter(criterion__name="coherence").values_list("item_id", flat=True)))
    assert "wins or loses every comparison" in bt["problem"] and bt["strengths"] == []
