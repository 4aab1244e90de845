"""The ratings export: where each response was shown (position and letter, from the rater's
own shuffle), the response text and context, active seconds, item order; CSV, JSON lines and XLSX with
the same rows; formula guard on every text cell; XLSX from the web, the API and the command."""
import csv
import io
import json

import openpyxl
import pytest
from django.core.management import CommandError, call_command

from studies.authoring import services as authoring
from studies.models import AssignmentItem, Rater, Response, Study, StudyItemResponse
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.reports import exporting
from studies.reports.export_selectors import RATINGS_EXPORT_FIELDS, context_text, shown_letter
from studies.reports.selectors import EXPORT_FIELDS
from studies.reports.xlsx_stream import text_value, write_xlsx

pytestmark = pytest.mark.django_db

HOSTILE = '=HYPERLINK("http://evil.example","x")'


def _rate(study, worker: str, *, active: float, offset: int = 0):
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(platform="invite",
                                                                                           external_id=worker))
    for slot in assignment.assignment_items.all():
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, active_seconds=active + slot.position,
                                answers={c: {r: (j + offset) % 6 + 1 for j, r in enumerate(slot.response_order)}
                                         for c in ("readability", "coherence")})
    return answering.assignment_submit(assignment=assignment, total_seconds=200)


@pytest.fixture
def rated(make_study):
    study = make_study("likert", raters_per_item=2, items_per_assignment=3)
    Response.objects.filter(system__name="hred").update(text=HOSTILE)
    return study, [_rate(study, "w1", active=10.0), _rate(study, "w2", active=20.0, offset=1)]


def _csv(client, url) -> list[dict]:
    response = client.get(url)
    assert response.status_code == 200, url
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def _xlsx_rows(content: bytes) -> tuple[list[str], list[list]]:
    book = openpyxl.load_workbook(io.BytesIO(content))
    rows = [[c.value for c in row] for sheet in book.worksheets for row in sheet.iter_rows()]
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (sheet.title, cell.coordinate, cell.value)
    return rows[0], rows[1:]


def test_each_rating_says_where_the_rater_saw_the_response(client, user, rated):
    study, assignments = rated
    client.force_login(user)
    rows = _csv(client, f"/studies/{study.slug}/export.csv?raw_ids=1")
    assert list(rows[0]) == list(RATINGS_EXPORT_FIELDS) and list(RATINGS_EXPORT_FIELDS[: len(EXPORT_FIELDS)]) == list(
        EXPORT_FIELDS)  # the old columns first, in their order
    slots = {(a.rater.external_id, s.item.conversation.external_id): s
             for a in assignments for s in AssignmentItem.objects.filter(assignment=a).select_related("item__conversation")}
    assert len(rows) == 2 * 3 * 4 * 2  # raters x items x responses (three systems, the reference) x criteria
    shuffled = 0
    for row in rows:
        slot = slots[(row["rater"], row["conversation"])]
        expected = slot.response_order.index(int(row["response"])) + 1  # the rater's own shuffle
        assert (int(row["shown_position"]), row["shown_letter"]) == (expected, "ABCD"[expected - 1])
        assert float(row["active_seconds"]) == slot.active_seconds == (10.0 if row["rater"] == "w1" else 20.0) + slot.position
        assert int(row["item_order"]) == slot.position + 1
        response = Response.objects.get(pk=row["response"])
        assert row["response_text"] == ("'" + HOSTILE if response.text == HOSTILE else response.text)
        assert row["context"] == context_text(slot.item.conversation.turns)
        assert row["context"].count("\n") == len(slot.item.conversation.turns) - 1
        canonical = list(StudyItemResponse.objects.filter(item=slot.item).order_by("position")
                         .values_list("response_id", flat=True))
        shuffled += int(row["shown_position"]) != canonical.index(int(row["response"])) + 1
    assert shuffled  # the rater's shuffle, not the item's canonical order


def test_context_names_speakers_and_letters_go_on_past_z():
    turns = [{"speaker": "A", "text": "Hello"}, {"speaker": "", "text": "Hi"}, "plain turn"]
    assert context_text(turns) == "A: Hello\nHi\nplain turn"
    assert [shown_letter(p) for p in (None, 1, 3, 26, 27, 52, 53)] == [None, "A", "C", "Z", "AA", "AZ", "BA"]


def test_csv_jsonl_and_xlsx_hold_the_same_rows(client, user, api, rated):
    study, _ = rated
    client.force_login(user)
    rows = _csv(client, f"/studies/{study.slug}/export.csv")
    lines = b"".join(client.get(f"/studies/{study.slug}/export.jsonl").streaming_content).decode().splitlines()
    jsonl = [json.loads(line) for line in lines]
    response = client.get(f"/studies/{study.slug}/export.xlsx")  # was a silent redirect to the study page
    assert response.status_code == 200 and response["Content-Type"] == exporting.CONTENT_TYPES["xlsx"]
    assert "no-store" in response["Cache-Control"] and f'{study.slug}-ratings.xlsx' in response["Content-Disposition"]
    header, cells = _xlsx_rows(b"".join(response.streaming_content))
    assert header == list(RATINGS_EXPORT_FIELDS) and len(cells) == len(rows) == len(jsonl)
    index = {name: i for i, name in enumerate(header)}
    for text_row, json_row, sheet_row in zip(rows, jsonl, cells, strict=True):
        assert sheet_row[index["rater"]] == text_row["rater"] == json_row["rater"]
        assert sheet_row[index["value"]] == float(text_row["value"]) == json_row["value"]  # numbers stay numbers
        assert sheet_row[index["shown_position"]] == int(text_row["shown_position"]) == json_row["shown_position"]
        assert sheet_row[index["context"]] == text_row["context"] == json_row["context"]
        assert sheet_row[index["response_text"]] == text_row["response_text"]
        if json_row["response_text"] == HOSTILE:  # JSON keeps it verbatim, the spreadsheets defuse it
            assert text_row["response_text"] == "'" + HOSTILE
        assert sheet_row[index["submitted_at"]] == text_row["submitted_at"] == json_row["submitted_at"]
    api_xlsx = api.get(f"/api/studies/{study.slug}/ratings/?format=xlsx")
    assert api_xlsx.status_code == 200 and _xlsx_rows(b"".join(api_xlsx.streaming_content))[1] == cells
    assert client.get(f"/studies/{study.slug}/export.pdf").status_code == 404
    assert api.get(f"/api/studies/{study.slug}/ratings/?format=pdf").status_code == 400


def test_xlsx_before_the_first_rating_is_a_header(client, user, make_study):
    study = make_study("bme")
    client.force_login(user)
    response = client.get(f"/studies/{study.slug}/export.xlsx")
    assert response.status_code == 200
    header, cells = _xlsx_rows(b"".join(response.streaming_content))
    assert header == list(RATINGS_EXPORT_FIELDS) and cells == []


def test_xlsx_goes_on_to_another_sheet_past_the_row_limit_and_cuts_overlong_cells(monkeypatch, rated):
    study, _ = rated
    monkeypatch.setattr(exporting, "XLSX_MAX_ROWS", 11)  # a header and ten ratings a sheet
    buffer = io.BytesIO()
    assert exporting.export_xlsx(Study.objects.filter(pk=study.pk), buffer) == 48
    book = openpyxl.load_workbook(buffer)
    assert book.sheetnames == ["ratings", "ratings 2", "ratings 3", "ratings 4", "ratings 5"]
    assert [sheet.max_row for sheet in book.worksheets] == [11, 11, 11, 11, 9]
    assert all(next(sheet.iter_rows(values_only=True)) == RATINGS_EXPORT_FIELDS for sheet in book.worksheets)
    long = "x" * 40_000
    cut = text_value(long, exporting.CUT_MARK)
    assert len(cut) == exporting.XLSX_MAX_CELL and cut.endswith(exporting.CUT_MARK)
    assert text_value("bell\x07 tab\t line\n", "…") == "bell tab\t line\n"  # XML 1.0 cannot carry \x07


def test_command_writes_xlsx_to_a_file_only(tmp_path, rated):
    study, _ = rated
    with pytest.raises(CommandError, match="-o FILE.xlsx"):
        call_command("export_ratings", "--study", study.slug, "--format", "xlsx")
    path = tmp_path / "ratings.xlsx"
    call_command("export_ratings", "--study", study.slug, "--format", "xlsx", "-o", str(path))
    header, cells = _xlsx_rows(path.read_bytes())
    assert header == list(RATINGS_EXPORT_FIELDS) and len(cells) == 48


def test_an_experiment_exports_every_condition_in_one_file(client, user, other_user, make_study):
    experiment = authoring.experiment_create(owner=user, title="Walk")
    studies = [make_study(d, raters_per_item=2, items_per_assignment=1, experiment=experiment) for d in ("likert", "bws")]
    for study in studies:
        assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
            platform="invite", external_id=f"w-{study.design}"))
        slot = assignment.assignment_items.get()
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
            c: {r: j + 1 for j, r in enumerate(slot.response_order)} for c in ("readability", "coherence")})
    client.force_login(user)
    page = client.get(f"/experiments/{experiment.slug}/report/").content.decode()
    for ext in ("csv", "jsonl", "xlsx"):
        assert f'href="/experiments/{experiment.slug}/export.{ext}"' in page
    rows = _csv(client, f"/experiments/{experiment.slug}/export.csv")
    assert {r["study"] for r in rows} == {s.slug for s in studies} and len(rows) == 2 * 4 * 2
    response = client.get(f"/experiments/{experiment.slug}/export.xlsx")
    assert len(_xlsx_rows(b"".join(response.streaming_content))[1]) == len(rows)
    assert client.get(f"/experiments/{experiment.slug}/export.pdf").status_code == 404
    client.force_login(other_user)
    assert client.get(f"/experiments/{experiment.slug}/export.csv").status_code == 404


def test_the_xlsx_writer_keeps_types_and_reads_back_in_openpyxl():
    header = ["text", "int", "float", "bool", "none", "nan", "hostile", "newline"]
    rows = [["a & <b>", 3, 2.5, True, None, float("nan"), "'=1+1", "one\ntwo"],
            ["é ü 中文", -1, 1e-12, False, None, float("inf"), "x", ""]]
    buffer = io.BytesIO()
    assert write_xlsx(buffer, header, rows, sheet_name="ratings") == 2
    book = openpyxl.load_workbook(buffer)
    sheet = book["ratings"]
    assert [c.value for c in sheet[1]] == header and sheet.freeze_panes == "A2" and sheet.auto_filter.ref == "A1:H1"
    assert [c.font.b for c in sheet[1]] == [True] * 8
    got = [[c.value for c in row] for row in sheet.iter_rows(min_row=2, max_col=8)]
    assert got == [["a & <b>", 3, 2.5, True, None, None, "'=1+1", "one\ntwo"],
                   ["é ü 中文", -1, 1e-12, False, None, None, "x", None]]
    assert [c.data_type for c in sheet[2]][:4] == ["s", "n", "n", "b"]


def test_report_shows_position_effects_from_the_raters_own_shuffles(client, api, user, rated):
    from studies.reports.export_selectors import ratings_export_rows
    from studies.reports.position_selectors import position_frame

    study, _ = rated
    studies = Study.objects.filter(pk=study.pk)
    frame = position_frame(studies)
    exported = {(r["rater"], r["response"], r["criterion"]): r["shown_position"]
                for r in ratings_export_rows(studies, raw_ids=True)}
    names = dict(Rater.objects.values_list("pk", "external_id"))
    assert len(frame) == len(exported) == 48 and frame["shown_position"].notna().all()
    # the slots exploded and joined in pandas agree with the export's per-row lookup
    assert {(names[r.rater], r.response, r.criterion): int(r.shown_position) for r in frame.itertuples()} == exported
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/report/").content.decode()
    assert 'id="positions"' in page and "Kruskal–Wallis" in page
    book = openpyxl.load_workbook(io.BytesIO(client.get(f"/studies/{study.slug}/report.xlsx").content))
    header = [c.value for c in book["Position effects"][1]]
    assert {"condition", "condition_title", "criterion", "position", "letter", "mean_z", "H", "p"} <= set(header)
    icc_header = [c.value for c in book["ICC"][1]]  # downloads carry titles beside the slugs
    assert icc_header[icc_header.index("condition") + 1] == "condition_title"
    assert {row[icc_header.index("condition_title")] for row in book["ICC"].iter_rows(min_row=2, values_only=True)} == {
        study.title}
    api_positions = api.get(f"/api/studies/{study.slug}/report/").json()["positions"]
    assert [(e["criterion"], [p["n"] for p in e["positions"]]) for e in api_positions] == [
        ("readability", [6, 6, 6, 6]), ("coherence", [6, 6, 6, 6])]
