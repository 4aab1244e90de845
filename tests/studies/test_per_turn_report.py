"""Per-turn answers in the study report (page, XLSX, API) and the ratings exports: rates per system with
their intervals, the test between systems and agreement per behaviour, recomputed here from what was stored."""
import io
import json

import openpyxl
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from studies.analysis.per_turn import behaviour_agreement, behaviour_rates
from studies.models import AssignmentItem
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from tests.studies.per_turn_helpers import study_make

pytestmark = pytest.mark.django_db
LABELS = ["redundant", "irrelevant", "contradiction"]


def answer_of(rater: int, conversation: int, system: str, turn: int) -> list[str]:
    """botB repeats itself more; raters disagree now and then on 'irrelevant'."""
    chosen = []
    if system == "botB" and (conversation + turn) % 3 != 0 or system == "botA" and (conversation + turn) % 5 == 0:
        chosen.append("redundant")
    if (conversation + rater + turn) % 4 == 0:
        chosen.append("irrelevant")
    return chosen


@pytest.fixture
def rated(user):
    study = study_make(user, n=6, raters=3)
    for r in range(3):
        rater = rater_entry.rater_get_or_create(platform="invite", external_id=f"rater-{r}")
        assignment = rater_entry.assignment_start(study=study, rater=rater, seed=r)
        for slot in AssignmentItem.objects.filter(assignment=assignment).select_related("item__conversation"):
            conversation = slot.item.conversation
            system = conversation.metadata["system"]
            answers = {"problems": {conversation.pk: {t: answer_of(r, conversation.pk, system, t) for t in (1, 3)}}}
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
        answering.assignment_submit(assignment=assignment)
    return study


def expected_frame(study) -> pd.DataFrame:
    rows = []
    for conversation in study.items.select_related("conversation"):
        c = conversation.conversation
        for r in range(3):
            for t in (1, 3):
                rows.append((c.pk, c.metadata["system"], f"rater-{r}", t, answer_of(r, c.pk, c.metadata["system"], t)))
    return pd.DataFrame(rows, columns=["unit", "system", "rater", "turn", "answer"])


def test_per_turn_report_api_rates_intervals_tests_and_agreement(api, rated):
    body = api.get(f"/api/studies/{rated.slug}/report/").json()
    assert body["labels"] == []  # not counted twice as a label criterion
    assert not any(note.startswith("No submitted ratings yet") for note in body["notes"])
    [entry] = body["per_turn"]
    assert (entry["criterion"], entry["turns"], entry["dialogues"], entry["raters"]) == ("problems", 36, 6, 3)
    frame = expected_frame(rated)
    expected = behaviour_rates(frame, LABELS)
    for got, want in zip(entry["rates"], expected, strict=True):
        assert got["label"] == want["label"]
        for row, want_row in zip(got["systems"], want["systems"], strict=True):
            assert (row["system"], row["count"], row["n"]) == (want_row["system"], want_row["count"], want_row["n"])
            low, high = proportion_confint(row["count"], row["n"], alpha=0.05, method="wilson")
            assert row["ci95"] == pytest.approx([low, high], abs=1e-9)
    redundant = {row["system"]: row["rate"] for row in entry["rates"][0]["systems"]}
    assert redundant["botB"] > redundant["botA"]
    assert entry["rates"][0]["test"]["p"] == pytest.approx(expected[0]["test"]["p"], abs=1e-9)
    agreement = behaviour_agreement(frame.assign(rater=frame["rater"]), LABELS)
    for got, want in zip(entry["agreement"]["per_label"], agreement["per_label"], strict=True):
        assert got["raw_agreement"] == pytest.approx(want["raw_agreement"], abs=1e-12)
        assert got["alpha"] == pytest.approx(want["alpha"], abs=1e-9) or (got["alpha"] is None)


def test_per_turn_report_page_and_xlsx_sheet(client, user, rated):
    client.force_login(user)
    page = client.get(f"/studies/{rated.slug}/report/").content.decode()
    assert 'data-testid="per-turn-report"' in page and "dialogue bootstrap" in page
    assert 'data-behaviour="redundant"' in page
    book = openpyxl.load_workbook(io.BytesIO(client.get(f"/studies/{rated.slug}/report.xlsx").content))
    sheet = book["Per-turn behaviours"]
    header = [c.value for c in sheet[1]]
    rows = [dict(zip(header, [c.value for c in row], strict=True)) for row in sheet.iter_rows(min_row=2)]
    assert len(rows) == len(LABELS) * 2  # one per behaviour and system
    assert {"wilson_low", "dialogue_bootstrap_low", "alpha_nominal", "raw_agreement", "p"} <= set(header)
    redundant_b = next(r for r in rows if r["behaviour"] == "redundant" and r["system"] == "botB")
    assert redundant_b["turns"] == 18


def test_per_turn_answers_in_the_ratings_exports(api, rated):
    response = api.get(f"/api/studies/{rated.slug}/ratings/?format=csv")
    frame = pd.read_csv(io.StringIO(b"".join(response.streaming_content).decode()))
    assert len(frame) == 18  # one row per rater and dialogue
    assert frame["answer"].str.contains("turn 2:").all() and frame["answer"].str.contains("turn 4:").all()
    lines = b"".join(api.get(f"/api/studies/{rated.slug}/ratings/?format=jsonl").streaming_content).decode()
    first = json.loads(lines.splitlines()[0])
    assert "turn 2:" in first["answer"]


def test_per_turn_report_hidden_from_another_researcher(client, other_user, rated):
    client.force_login(other_user)
    assert client.get(f"/studies/{rated.slug}/report/").status_code == 404
    assert client.get(f"/studies/{rated.slug}/report.xlsx").status_code == 404
