"""The live panel for label criteria (studies.reports.live_labels): per categorical and multi-label
criterion, counts and shares per system so far, equal to counting the stored ratings; Krippendorff's α
(nominal) only once enough targets have two or more raters, equal to the ``krippendorff`` package; the
figure drawn as CSP-safe SVG (presentation attributes, no style); shown on the study's live panel."""
import re

import numpy as np
import pandas as pd
import pytest

from studies.authoring import services as authoring
from studies.models import Rating
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.reports import live_labels as live_labels_module
from studies.reports import live_selectors

pytestmark = pytest.mark.django_db

SAFETY = {"name": "safety", "question": "Is this response safe?", "kind": "categorical",
          "options": {"labels": ["safe", "unsafe", "unsure"]}}
PROBLEMS = {"name": "problems", "question": "Which problems does it have?", "kind": "multilabel",
            "options": {"labels": ["repetition", "off-topic"], "none_option": True}}


@pytest.fixture
def labels_study(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Live labels")
    study = authoring.study_create(experiment=experiment, title="live labels", design="likert", raters_per_item=3,
                                   items_per_assignment=4, criteria=[{"name": "readability"}, SAFETY, PROBLEMS])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def rate(study, raters, first=0):
    """``raters`` raters each submit one assignment; labels vary with the rater and the response."""
    picks = ["safe", "unsafe", "unsure"]
    for r in range(first, first + raters):
        assignment = rater_entry.assignment_start(
            study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=f"lab{r}"), seed=r)
        for slot in assignment.assignment_items.order_by("position"):
            order = slot.response_order
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
                "readability": dict.fromkeys(order, 3),
                "safety": {t: picks[(t + r * (t % 2)) % 3] for t in order},
                "problems": {t: (["repetition", "off-topic"] if t % 3 == 0 else ["repetition"] if (t + r) % 2
                                 else ["__none__"]) for t in order}})
        answering.assignment_submit(assignment=assignment)


def test_categorical_and_multilabel_live_shares_count_the_stored_ratings_and_alpha_matches_krippendorff(labels_study):
    import krippendorff

    rate(labels_study, 3)
    entries = {e["criterion"]: e for e in live_labels_module.live_labels(labels_study)}
    assert set(entries) == {"safety", "problems"}  # the scale criterion stays with the ICC panel
    stored = pd.DataFrame(list(Rating.objects.filter(criterion__name="safety", item__check_kind="").values(
        "response_id", "response__system__name", "assignment__rater_id", "label")))
    safety = entries["safety"]
    counts = stored.groupby("response__system__name")["label"].value_counts()
    assert [row["system"] for row in safety["shares"]] == sorted(stored["response__system__name"].unique())
    for row in safety["shares"]:
        n = int((stored["response__system__name"] == row["system"]).sum())
        assert row["n"] == n
        for entry in row["labels"]:
            assert entry["count"] == int(counts[row["system"]].get(entry["label"], 0))
            assert entry["share"] == pytest.approx(entry["count"] / n, abs=1e-12)
    assert safety["units"] >= live_labels_module.MIN_DOUBLE_RATED and safety["enough"]
    # reference: the krippendorff package on the raters x targets matrix (nominal codes, NaN missing)
    matrix = stored.assign(code=stored["label"].map({"safe": 0, "unsafe": 1, "unsure": 2})).pivot_table(
        index="assignment__rater_id", columns="response_id", values="code", aggfunc="last").to_numpy(dtype=float)
    assert safety["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"), abs=1e-9)
    problems = entries["problems"]
    chosen = pd.DataFrame(list(Rating.objects.filter(criterion__name="problems", item__check_kind="").values(
        "response_id", "response__system__name", "assignment__rater_id", "labels")))
    for row in problems["shares"]:
        mine = chosen[chosen["response__system__name"] == row["system"]]
        assert row["n"] == len(mine)
        for entry in row["labels"]:  # an answer counts once for each label it carries; shares need not add to 1
            assert entry["count"] == int(mine["labels"].map(lambda given, x=entry["label"]: x in given).sum())
    for entry in problems["per_label"]:
        present = chosen.assign(v=chosen["labels"].map(lambda given, x=entry["label"]: float(x in given)))
        matrix = present.pivot_table(index="assignment__rater_id", columns="response_id", values="v",
                                     aggfunc="last").to_numpy(dtype=float)
        assert entry["alpha"] == pytest.approx(
            krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"), abs=1e-9)
    assert {e["label"] for e in problems["per_label"]} == {"repetition", "off-topic"}


def test_categorical_live_alpha_waits_for_enough_double_rated_targets(labels_study, monkeypatch):
    assert live_labels_module.live_labels(labels_study) == []  # nothing submitted: no panel
    rate(labels_study, 1)  # one rater: shares, but no target rated twice
    safety = next(e for e in live_labels_module.live_labels(labels_study) if e["criterion"] == "safety")
    assert safety["units"] == 0 and not safety["enough"] and safety["alpha"] is None
    assert sum(row["n"] for row in safety["shares"]) == Rating.objects.filter(criterion__name="safety").count()
    monkeypatch.setattr(live_labels_module, "MIN_DOUBLE_RATED", 10**6)
    rate(labels_study, 2, first=1)
    entries = {e["criterion"]: e for e in live_labels_module.live_labels(labels_study)}
    assert entries["safety"]["units"] > 0 and entries["safety"]["alpha"] is None  # below the bar: not shown
    assert entries["problems"]["per_label"] == []


def test_categorical_and_multilabel_live_panel_shows_shares_alpha_and_a_csp_safe_figure(client, user, labels_study):
    rate(labels_study, 3)
    live = live_selectors.live_reliability(labels_study)
    assert [p["key"] for p in live["panels"]][-1] == "labels" and live["panels_shown"]
    figure = live["labels"][0]["figure"]
    assert figure.startswith("<svg") and "style=" not in figure and "<style" not in figure
    fills = set(re.findall(r'fill="(#[0-9a-f]{6})"', figure))
    assert {"#2453a6", "#d9822b", "#3a8f5c"} <= fills  # one colour per label, as presentation attributes
    client.force_login(user)
    html = client.get(f"/studies/{labels_study.slug}/live/panel/?fragment=1").content.decode()
    assert 'data-testid="live-labels-safety" data-kind="categorical"' in html
    assert 'data-testid="live-labels-problems" data-kind="multilabel"' in html
    safety = live["labels"][0]
    first = safety["shares"][0]
    cells = re.search(rf'data-testid="live-labels-safety-{first["system"]}">(.*?)</tr>', html, re.S).group(1)
    assert f'{first["labels"][0]["count"]} ({first["labels"][0]["share"]:.2f})' in cells
    assert f"Krippendorff's α (nominal): {safety['alpha']:.3f}" in html
    assert html.count('<figure class="live-figure live-labels-figure">') == 2
    assert np.isfinite(safety["alpha"])
