"""Live reliability on the study page: values equal the ICC functions and pingouin, Spearman-Brown
raters needed, the cache per ratings version (a second view recomputes nothing), the settings form
and the close rule."""
import math

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from django.core.exceptions import ValidationError

from studies import tasks
from studies.analysis import live
from studies.analysis.icc import icc
from studies.authoring.demo import demo_load
from studies.models import Assignment, Rating, Study
from studies.rating import answers as answering
from studies.rating import entry as entering
from studies.reports import export_selectors, live_selectors, live_services

pytestmark = pytest.mark.django_db
pg.options["round"] = None
pg.options["round.column.CI95"] = None


@pytest.fixture
def demo(user):
    experiment = demo_load()
    experiment.collaborators.add(user)
    return experiment


@pytest.fixture
def likert(demo):
    return Study.objects.get(slug="demo-likert")


def exported(study) -> pd.DataFrame:
    return pd.DataFrame(list(export_selectors.ratings_export_rows(Study.objects.filter(pk=study.pk))))


def test_live_values_equal_the_icc_functions_and_pingouin(likert):
    result = live_selectors.live_reliability(likert)
    rows = exported(likert)
    assert [c["criterion"] for c in result["criteria"]] == sorted(rows["criterion"].unique())
    for entry in result["criteria"]:
        part = rows[rows["criterion"] == entry["criterion"]]
        ours = icc(part["response"], part["rater"], part["normalised_value"])
        theirs = pg.intraclass_corr(part, "response", "rater", "normalised_value").set_index("Type")
        assert (entry["n_items"], entry["n_raters"], entry["n_ratings"]) == (48, 5, 240)
        assert entry["raters_per_item"] == {"mean": 5.0, "min": 5, "max": 5} and entry["k0"] == 5
        for form in ("ICC(C,k)", "ICC(A,k)", "ICC(C,1)", "ICC(A,1)"):
            got = entry["forms"][form]
            assert got["value"] == pytest.approx(ours[form].value, abs=1e-12)
            assert got["value"] == pytest.approx(theirs.loc[form, "ICC"], abs=1e-9)
            assert got["ci95"] == pytest.approx(list(theirs.loc[form, "CI95"]), abs=1e-9)
            assert got["p"] == pytest.approx(theirs.loc[form, "pval"], abs=1e-9)
        for form, single in (("ICC(C,k)", "ICC(C,1)"), ("ICC(A,k)", "ICC(A,1)")):
            rho1 = ours[single].value
            assert entry["raters_needed"][form] == math.ceil(0.8 * (1 - rho1) / (rho1 * 0.2))
        # the course over raters ends at the current values and its first point uses two raters
        points = entry["trajectory"]
        assert points[0]["raters"] == 2 and points[-1]["raters"] == 5
        assert [p["raters"] for p in points] == sorted({p["raters"] for p in points})
        assert points[-1]["ICC(A,k)"]["value"] == pytest.approx(entry["forms"]["ICC(A,k)"]["value"], abs=1e-12)
        assert entry["figure"].startswith("<svg") and "raters so far" in entry["figure"]


def test_trajectory_point_equals_the_icc_of_the_first_raters():
    rng = np.random.default_rng(5)
    rows = [(c, u, r, float(rng.normal(u % 7, 1)), 100 * r + u) for c in ("coherence",) for u in range(30)
            for r in range(6) if rng.random() < 0.7]
    frame = pd.DataFrame(rows, columns=["criterion", "unit", "rater", "score", "order"])
    entry = live.live_summary(frame, target=0.7)[0]
    assert entry["method"] == "incomplete" and entry["target"] == 0.7
    for point in entry["trajectory"]:
        part = frame[frame["rater"] < point["raters"]]  # raters arrive in id order here
        expected = icc(part["unit"], part["rater"], part["score"])
        assert point["ratings"] == len(part)
        assert point["ICC(C,k)"]["value"] == pytest.approx(expected["ICC(C,k)"].value, abs=1e-12)
        assert point["ICC(A,k)"]["ci95"] == pytest.approx(list(expected["ICC(A,k)"].ci95), abs=1e-12)
    counts = frame.groupby("unit").size()
    assert entry["raters_per_item"] == {"mean": counts.mean(), "min": counts.min(), "max": counts.max()}


@pytest.mark.parametrize(("rho1", "target", "needed"), [
    (0.5, 0.8, 4),       # 0.8 * 0.5 / (0.5 * 0.2) = 4 exactly
    (0.3, 0.8, 10),      # 9.33 -> 10
    (0.9, 0.8, 1),       # one rater already enough
    (0.0, 0.8, None),    # never reachable
    (-0.2, 0.8, None),
])
def test_spearman_brown_raters_needed(rho1, target, needed):
    assert live.raters_needed(rho1, target) == needed


def test_a_criterion_without_an_icc_says_why():
    frame = pd.DataFrame([("c", 1, 1, 3.0, 1), ("c", 2, 1, 4.0, 2)], columns=["criterion", "unit", "rater", "score", "order"])
    entry = live.live_summary(frame)[0]
    assert "at least 2 raters" in entry["error"] and "forms" not in entry
    assert not live.target_reached([entry], form="ICC(A,k)", target=0.1)


def test_second_view_does_not_recompute_and_a_rating_change_does(researcher_client, likert, monkeypatch,
                                                                   django_assert_max_num_queries):
    calls = []
    real = live.live_summary
    monkeypatch.setattr(live, "live_summary", lambda *a, **k: calls.append(1) or real(*a, **k))
    url = f"/studies/{likert.slug}/live/panel/?fragment=1"
    first = researcher_client.get(url)
    assert first.status_code == 200 and len(calls) == 1
    page = first.content.decode()
    assert 'data-testid="live-results"' in page and "ICC-A = ICC(A,k)" in page and "raters per item so far: mean 5.0" in page
    assert researcher_client.get(url).status_code == 200 and len(calls) == 1
    with django_assert_max_num_queries(5):  # the ratings version (ids, ratings, assignments, titles, questions); no rating rows
        live_selectors.live_reliability(likert)
    assert len(calls) == 1
    rating = Rating.objects.filter(assignment__study=likert).first()
    Rating.objects.filter(pk=rating.pk).update(value=rating.value % 6 + 1)  # bulk update: a new version
    live_selectors.live_reliability(likert)
    assert len(calls) == 2


@pytest.fixture
def researcher_client(client, user):
    client.force_login(user)
    return client


def test_settings_form_saves_and_bad_input_changes_nothing(researcher_client, likert):
    url = f"/studies/{likert.slug}/live/"
    response = researcher_client.post(url, {"target": "1.5", "form": "ICC(A,k)"}, follow=True)
    assert "target: " in response.content.decode()
    likert.refresh_from_db()
    assert likert.live_config == {} and likert.status == Study.Status.PUBLISHED
    researcher_client.post(url, {"target": "0.99", "form": "ICC(C,k)", "close_when_reached": "on"})
    likert.refresh_from_db()
    assert likert.live_config == {"target": 0.99, "form": "ICC(C,k)", "close_when_reached": True}
    assert likert.status == Study.Status.PUBLISHED  # .99 is not reached by five demo raters
    with pytest.raises(ValidationError, match="live_config.form"):
        live_services.study_live_config_set(study=likert, target=0.8, form="ICC(1,1)")


def test_close_rule_closes_only_when_switched_on_and_the_lower_bound_reaches_the_target(likert):
    lows = [c["forms"]["ICC(A,k)"]["ci95"][0] for c in live_selectors.live_reliability(likert)["criteria"]]
    below = round(min(lows) - 0.01, 4)
    live_services.study_live_config_set(study=likert, target=below, form="ICC(A,k)", close_when_reached=False)
    assert not live_services.study_close_if_reliable(study=likert)  # reached, but the rule is off
    live_services.study_live_config_set(study=likert, target=min(round(max(lows) + 0.01, 4), 0.99),
                                        form="ICC(A,k)", close_when_reached=True)
    assert not live_services.study_close_if_reliable(study=likert)  # on, but one criterion is short
    likert.refresh_from_db()
    assert likert.status == Study.Status.PUBLISHED
    live_services.study_live_config_set(study=likert, target=below, form="ICC(A,k)", close_when_reached=True)
    assert live_services.study_close_if_reliable(study=likert)
    likert.refresh_from_db()
    assert likert.status == Study.Status.CLOSED and likert.closed_at is not None
    assert not live_services.study_close_if_reliable(study=likert)  # already closed: nothing to do


@pytest.mark.parametrize("rule_on", [True, False])
def test_submit_queues_the_close_check_only_when_the_rule_is_on(likert, monkeypatch,
                                                                django_capture_on_commit_callbacks, rule_on):
    live_services.study_live_config_set(study=likert, target=0.01, close_when_reached=rule_on)
    queued = []
    monkeypatch.setattr(tasks.study_close_if_reliable_run, "delay", lambda study_id: queued.append(study_id))
    assignment = likert.assignments.first()
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.STARTED)
    with django_capture_on_commit_callbacks(execute=True):
        answering.assignment_submit(assignment=assignment)
    assert queued == ([likert.pk] if rule_on else [])
    if rule_on:  # what the worker then runs
        assert tasks.study_close_if_reliable_run(likert.pk) is True
        likert.refresh_from_db()
        assert likert.status == Study.Status.CLOSED


def _fresh(study):
    from django.core.cache import cache

    cache.clear()
    return live_selectors.live_reliability(study)


def _values(result):
    return [(c["criterion"], c["n_ratings"], c["forms"]["ICC(A,k)"]["value"], c["forms"]["ICC(C,k)"]["ci95"])
            for c in result["criteria"]]


def test_the_frame_is_updated_incrementally_and_reloaded_when_kept_rows_change(likert, monkeypatch):
    late = likert.assignments.order_by("-pk").first()
    Assignment.objects.filter(pk=late.pk).update(status=Assignment.Status.STARTED)
    live_selectors.live_reliability(likert)  # four raters cached
    loads = []
    real = live_selectors._load
    monkeypatch.setattr(live_selectors, "_load", lambda study, ids=None: loads.append(ids) or real(study, ids))

    answering.assignment_submit(assignment=late)  # a fifth rater submits
    incremental = live_selectors.live_reliability(likert)
    assert loads == [[late.pk]]  # only the new assignment's ratings were fetched
    assert incremental["criteria"][0]["n_raters"] == 5
    from_scratch = live.live_summary(real(likert))
    for got, want in zip(incremental["criteria"], from_scratch, strict=True):
        assert got["n_ratings"] == want["n_ratings"]
        assert got["forms"]["ICC(A,k)"]["ci95"] == pytest.approx(want["forms"]["ICC(A,k)"]["ci95"], abs=1e-12)

    Assignment.objects.filter(pk=late.pk).update(status=Assignment.Status.REJECTED)
    rejected = live_selectors.live_reliability(likert)
    assert loads == [[late.pk]] and rejected["criteria"][0]["n_raters"] == 4  # rows dropped, nothing fetched

    rating = Rating.objects.filter(assignment__study=likert, assignment__status=Assignment.Status.SUBMITTED).first()
    Rating.objects.filter(pk=rating.pk).update(value=rating.value % 6 + 1)  # an edit inside a kept assignment
    edited = live_selectors.live_reliability(likert)
    assert loads[-1] is None  # full reload
    monkeypatch.setattr(live_selectors, "_load", real)
    for got, want in zip(_values(edited), _values(_fresh(likert)), strict=True):
        assert got[:2] == want[:2] and got[2] == pytest.approx(want[2], abs=1e-12)


# --- the study page never depends on raters' answers ---------------------------------------


def _one_answer_each(study, raters=3):
    """Every rater gives one answer throughout (rater i always i + 2): no variance between items, so the
    course of the ICC has points without a confidence bound."""
    criteria = list(study.criteria.values_list("name", flat=True))
    for i in range(raters):
        assignment = entering.assignment_start(
            study=study, rater=entering.rater_get_or_create(platform="invite", external_id=f"same-{i}"), seed=i)
        for slot in assignment.assignment_items.all():
            answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                    answers={c: {r: i + 2 for r in slot.response_order} for c in criteria})
        answering.assignment_submit(assignment=assignment)


def test_raters_who_each_give_one_answer_throughout_leave_the_study_page_and_the_panel_working(client, user,
                                                                                                make_study):
    study = make_study("likert", raters_per_item=4)  # stays open after three raters
    _one_answer_each(study)
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/")
    assert page.status_code == 200
    assert f"/studies/{study.slug}/close/" in page.content.decode()  # the close button is there
    panel = client.get(f"/studies/{study.slug}/live/panel/?fragment=1")
    assert panel.status_code == 200
    text = panel.content.decode()
    assert 'data-testid="live-failed"' not in text and text.count('<figure class="live-figure"><svg') == 2
    entry = live_selectors.live_reliability(study)["criteria"][0]
    assert all(p["ICC(C,k)"]["ci95"][0] is None for p in entry["trajectory"])  # the case that broke the figure


def test_the_curve_draws_points_without_any_confidence_bound():
    from studies.reports.live_plots import reliability_curve_figure

    points = [{"raters": j, "ICC(C,k)": {"value": v, "ci95": [None, None]}, "ICC(A,k)": {"value": None, "ci95": [None, None]}}
              for j, v in ((2, -0.4), (3, 0.2))]
    figure = reliability_curve_figure({"criterion": "coherence", "trajectory": points}, target=0.8)
    assert figure.axes[0].get_ylim() == pytest.approx((-0.4, 1.0))  # the lowest value drawn stays in view


def test_the_study_page_shows_its_controls_without_computing_reliability(client, user, likert, monkeypatch, caplog):
    def broken(study):
        raise ZeroDivisionError("raters' answers the computation did not foresee")

    monkeypatch.setattr(live_selectors, "live_reliability", broken)
    client.force_login(user)
    page = client.get(f"/studies/{likert.slug}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert f"/studies/{likert.slug}/close/" in text and f"/studies/{likert.slug}/state/pause/" in text
    assert f'data-live-panel="/studies/{likert.slug}/live/panel/?fragment=1"' in text
    panel = client.get(f"/studies/{likert.slug}/live/panel/?fragment=1")
    assert panel.status_code == 200 and 'data-testid="live-failed"' in panel.content.decode()
    assert any("could not be computed" in r.getMessage() and r.exc_info for r in caplog.records)  # kept in the log
    alone = client.get(f"/studies/{likert.slug}/live/panel/")  # without scripts: a page of its own
    assert alone.status_code == 200 and "Back to the study" in alone.content.decode()


def test_the_live_panel_is_only_for_those_who_may_see_the_study(client, other_user, likert):
    client.force_login(other_user)
    assert client.get(f"/studies/{likert.slug}/live/panel/?fragment=1").status_code == 404
