"""The human-vs-metric scatter SVGs (one per condition × criterion) colour a system the
same in every panel: the view takes the colours from the whole report's systems, not the panel's."""
import pytest

from metrics.scoring import services
from metrics.web import plots
from metrics.web import views as metric_views
from studies.authoring import services as authoring

pytestmark = pytest.mark.django_db


def _cell(condition, systems):
    points = [{"unit": i, "system": s, "human": float(i), "metric": i / 3} for i, s in enumerate(systems * 3)]
    return {"condition": condition, "criterion": "coherence", "points": points, "response_level": {}}


def test_the_scatter_view_colours_a_system_alike_in_every_panel(client, user, monkeypatch):
    experiment = authoring.experiment_create(owner=user, title="Colours")
    model = services.metric_model_default(key="readability")
    report = {"cells": [_cell("first", ["alpha", "beta"]), _cell("second", ["beta"])]}
    monkeypatch.setattr(metric_views, "_report", lambda request, slug, name: (experiment, model, report, []))
    client.force_login(user)
    svgs = {c: client.get(f"/experiments/{experiment.slug}/metrics/{model.name}/scatter/{c}/coherence.svg")
            .content.decode().lower() for c in ("first", "second")}
    alpha, beta = plots.SYSTEM_COLOURS[0], plots.SYSTEM_COLOURS[1]
    assert alpha in svgs["first"] and beta in svgs["first"]
    assert beta in svgs["second"] and alpha not in svgs["second"]  # beta alone, still beta's colour
