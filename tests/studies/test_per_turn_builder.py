"""The study builder's per-turn rows: ABC-Eval's 16 behaviours as a ready-made row (each with its definition,
editable), posted as structured fields, stored as the per-turn kind's options and shown back; a bad row named."""
import json
import re

import pytest

from studies.authoring import services as authoring
from studies.authoring.criteria_rows import rows_of_criteria, rows_parse
from studies.designs.kinds.abc_eval import ABC_EVAL_BEHAVIOURS, abc_eval_criterion
from tests.studies.test_builder import study_post

pytestmark = pytest.mark.django_db


def abc_row(n: int = 0, **changes) -> dict[str, str]:
    row = {**rows_of_criteria([abc_eval_criterion()])[0], **changes}
    return {f"c-{n}-{key}": value for key, value in row.items()}


def test_abc_eval_row_round_trips_through_the_builder_rows():
    row = rows_of_criteria([abc_eval_criterion()])[0]
    assert row["kind"] == "per_turn" and row["mode"] == "binary" and len(row["labels"].splitlines()) == 16
    specs, problems = rows_parse([row])
    assert problems == []
    assert specs[0]["options"]["labels"] == [label for label, _ in ABC_EVAL_BEHAVIOURS]


def test_abc_eval_builder_page_offers_the_ready_made_row_with_definitions(client, user):
    client.force_login(user)
    authoring.experiment_create(owner=user, title="E", slug="e")
    html = client.get("/experiments/e/studies/new/").content.decode()
    assert 'data-testid="add-abc-eval"' in html
    preset = json.loads(re.search(r'<script id="builder-abc-eval" type="application/json">(.*?)</script>', html,
                                  re.S).group(1))
    assert "lack of empathy: " in preset["definitions"] and preset["kind"] == "per_turn"


def test_abc_eval_edited_definition_and_dropped_label_stored_from_the_builder(client, user):
    client.force_login(user)
    experiment = authoring.experiment_create(owner=user, title="E", slug="e")
    row = rows_of_criteria([abc_eval_criterion()])[0]
    labels = row["labels"].splitlines()[:-1]  # no "topic switch"
    definitions = "\n".join(line for line in row["definitions"].splitlines() if not line.startswith("topic switch"))
    definitions = definitions.replace("redundant: ", "redundant: Says the same thing twice. Was: ")
    response = client.post("/experiments/e/studies/new/", study_post(
        "ABC", unit="dialogue", **abc_row(labels="\n".join(labels), definitions=definitions)))
    assert response.status_code == 302, re.findall(r'role="alert"[^>]*>([^<]+)<', response.content.decode())
    criterion = experiment.studies.get().criteria.get()
    assert criterion.kind == "per_turn" and len(criterion.options["labels"]) == 15
    assert criterion.options["definitions"]["redundant"].startswith("Says the same thing twice.")
    page = client.get(f"/studies/{experiment.studies.get().slug}/edit/").content.decode()
    assert "Says the same thing twice." in page  # shown back in the row, editable


def test_per_turn_builder_row_with_a_definition_of_no_label_is_named_and_nothing_saved(client, user):
    client.force_login(user)
    experiment = authoring.experiment_create(owner=user, title="E", slug="e")
    response = client.post("/experiments/e/studies/new/", study_post(
        "ABC", unit="dialogue", **abc_row(definitions="boring: never interesting")))
    assert response.status_code == 200
    assert "what the labels mean" in response.content.decode()
    assert not experiment.studies.exists()
