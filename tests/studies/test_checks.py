"""Attention checks and gold items (studies.rating.checks): definitions refused with the field named,
placement (set and seeded random), scoring of each rule kind at submit, exclusion from every
analysis input, and flagged raters left out of the report's "without flagged raters" tables."""
import io
import random

import pytest
from django.core.exceptions import ValidationError

from studies.analysis.report import ReportOptions, build_report
from studies.authoring import checks
from studies.authoring import selectors as study_selectors
from studies.authoring import services as authoring
from studies.errors import StudyStateError
from studies.models import Assignment, Study, StudyItem
from studies.rating import answers as answering
from studies.rating import check_rules
from studies.rating import entry as rater_entry
from studies.rating import selectors as rater_selectors
from studies.rating.checks import checks_place
from studies.reports import export_selectors
from studies.reports import selectors as report_selectors
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db

CONTEXT = "A: Where do you live?\nB: In a small town."
# As many responses as the studies' items show (three systems and the human one): a check item showing
# fewer would stand out.
LIKERT_TEXTS = ["This is an attention check: please choose 2 for this response.", "I like towns.",
                "Towns are quiet at night.", "We moved there last year."]


def rater(name):
    return rater_entry.rater_get_or_create(platform="invite", external_id=name)


def add_check(study, rules, *, kind="instructed", texts=None, **extra):
    return checks.check_item_create(study=study, kind=kind, context=CONTEXT,
                                    responses=texts or LIKERT_TEXTS, rules=rules, **extra)


def answer(assignment, check_answer, regular=3):
    """Answer every item; ``check_answer(slot)`` gives the check items' answers per criterion."""
    study = assignment.study
    names = list(study.criteria.values_list("name", flat=True))
    for slot in assignment.assignment_items.select_related("item"):
        if slot.item.check_kind:
            per_response = check_answer(slot)
        elif study.design == "bws":
            per_response = {r: i + 1 for i, r in enumerate(slot.response_order)}
        else:
            per_response = dict.fromkeys(slot.response_order, regular)
        answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                answers={name: per_response for name in names})
    return answering.assignment_submit(assignment=assignment)


def canonical(item):
    return list(item.item_responses.order_by("position").values_list("response_id", flat=True))


@pytest.fixture
def draft(make_study):
    return make_study("likert", publish=False, raters_per_item=3, items_per_assignment=4)


# --- definitions --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("rules", "field"), [
    ([], "rules"),
    ([{"response": 5, "value": 2}], "rules[0].response"),
    ([{"response": 1, "value": 9}], "rules[0].value"),
    ([{"response": 1, "min": 5, "max": 2}], "rules[0].max"),
    ([{"best": 1}], "rules[0].best"),
    ([{"criterion": "fluency", "response": 1, "value": 2}], "rules[0].criterion"),
    ([{"greater": 1, "than": 1}], "rules[0].than"),
    ([{"response": 1}], "rules[0]"),
])
def test_bad_rules_name_the_rule_and_write_nothing(draft, rules, field):
    before = StudyItem.objects.count()
    with pytest.raises(ValidationError) as error:
        add_check(draft, rules)
    assert field in error.value.message_dict
    assert StudyItem.objects.count() == before


def test_bws_check_must_show_the_tuple_size_and_use_ranks(make_study):
    bws = make_study("bws", publish=False)
    with pytest.raises(ValidationError) as error:
        add_check(bws, [{"response": 1, "value": 2}], texts=LIKERT_TEXTS[:2])
    assert {"responses", "rules[0].response"} <= set(error.value.message_dict)


def test_check_items_survive_an_item_rebuild_and_do_not_count_as_items(draft, corpus):
    check = add_check(draft, [{"response": 1, "value": 2}])
    assert check.position >= checks.CHECK_POSITION_BASE
    assert check.check_rules == [{"response": canonical(check)[0], "value": 2.0}]
    assert check_rules.rules_display(check) == [{"response": 1, "value": 2.0}]
    authoring.study_items_build(study=draft, corpus=corpus, systems=["hred"], reference_system="human", limit=2)
    assert draft.items.filter(check_kind="").count() == 2
    assert StudyItem.objects.filter(pk=check.pk).exists()


def test_a_study_with_only_check_items_cannot_be_published(user):
    experiment = authoring.experiment_create(owner=user, title="E")
    study = authoring.study_create(experiment=experiment, title="S", design="likert")
    add_check(study, [{"response": 1, "value": 2}])
    with pytest.raises(StudyStateError, match="no items"):
        authoring.study_publish(study=study)


def test_checks_are_set_only_in_draft(make_study):
    study = make_study("likert")
    with pytest.raises(StudyStateError, match="published"):
        add_check(study, [{"response": 1, "value": 2}])
    with pytest.raises(StudyStateError):
        checks.study_checks_configure(study=study, per_assignment=1)


def test_configure_refuses_bad_settings_by_field(draft):
    with pytest.raises(ValidationError) as error:
        checks.study_checks_configure(study=draft, per_assignment=-1, positions="a, 3", min_pass_rate=2)
    assert set(error.value.message_dict) == {"per_assignment", "positions", "min_pass_rate"}
    draft.refresh_from_db()
    assert draft.checks_config == {}


# --- placement ----------------------------------------------------------------------------------------

def test_checks_at_set_positions(draft):
    for _ in range(3):
        add_check(draft, [{"response": 1, "value": 2}])
    checks.study_checks_configure(study=draft, positions="2, 5")
    authoring.study_publish(study=draft)
    assignment = rater_entry.assignment_start(study=draft, rater=rater("w1"), seed=3)
    kinds = list(assignment.assignment_items.order_by("position").values_list("item__check_kind", flat=True))
    assert len(kinds) == 4 + 2
    assert [i for i, k in enumerate(kinds) if k] == [1, 4]


def test_random_positions_are_seeded_and_vary_between_raters(draft):
    for _ in range(4):
        add_check(draft, [{"response": 1, "value": 2}])
    checks.study_checks_configure(study=draft, per_assignment=2)
    regular = [11, 12, 13, 14]
    pool_ids = list(draft.items.filter(check_kind="instructed").values_list("id", flat=True))
    first = checks_place(draft, regular, random.Random(7))
    assert first == checks_place(draft, regular, random.Random(7))
    assert [i for i in first if i in regular] == regular and len(set(first) & set(pool_ids)) == 2
    layouts = {tuple(i in pool_ids for i in checks_place(draft, regular, random.Random(s))) for s in range(30)}
    assert len(layouts) > 3  # positions really drawn, not fixed


def test_checks_do_not_take_item_slots_or_room(make_study):
    study = make_study("likert", publish=False, raters_per_item=1, items_per_assignment=6)
    add_check(study, [{"response": 1, "value": 2}])
    authoring.study_publish(study=study)
    rater_entry.assignment_start(study=study, rater=rater("w1"), seed=1)
    assert not rater_selectors.study_has_room(study)  # the 6 regular items have their one rater
    assert study_selectors.study_progress(study)["items"] == 6


# --- scoring ------------------------------------------------------------------------------------------

def _scored(study, check_answer):
    authoring.study_publish(study=study)
    assignment = rater_entry.assignment_start(study=study, rater=rater("w1"), seed=2)
    return answer(assignment, check_answer)


def _by_number(slot, values):
    """Values for the check's responses 1, 2, ... in the researcher's numbering; the responses after
    those the rules name get the last value."""
    order = canonical(slot.item)
    values = list(values) + [values[-1]] * (len(order) - len(values))
    return {order[n]: v for n, v in enumerate(values)}


@pytest.mark.parametrize(("rules", "given", "passed"), [
    ([{"response": 1, "value": 2}], [2, 5], True),
    ([{"response": 1, "value": 2}], [3, 5], False),
    ([{"response": 2, "min": 4, "max": 6}], [1, 4], True),
    ([{"response": 2, "min": 4}], [1, 3], False),
    ([{"greater": 2, "than": 1}], [2, 5], True),
    ([{"greater": 2, "than": 1}], [5, 5], False),
    ([{"criterion": "coherence", "response": 1, "value": 1}], [1, 6], True),
])
def test_likert_gold_and_instructed_rules(draft, rules, given, passed):
    add_check(draft, rules, kind="gold")
    checks.study_checks_configure(study=draft, per_assignment=1)
    done = _scored(draft, lambda slot: _by_number(slot, given))
    assert (done.checks_shown, done.checks_passed, done.checks_failed) == (1, int(passed), not passed)


def test_magnitude_ordering_rule(make_study):
    study = make_study("rme", publish=False)
    add_check(study, [{"greater": 1, "than": 2}], kind="gold", texts=["I live in Leeds, near the station.", "Bananas.", "Maybe."],
              reference="I live in a town.")
    done = _scored(study, lambda slot: _by_number(slot, [150, 20]))
    assert (done.checks_shown, done.checks_passed) == (1, 1)
    study2 = make_study("rme", publish=False)
    add_check(study2, [{"greater": 1, "than": 2}], kind="gold", texts=["Leeds.", "Bananas.", "Maybe."], reference="A town.")
    authoring.study_publish(study=study2)
    a = rater_entry.assignment_start(study=study2, rater=rater("w2"), seed=2)
    assert answer(a, lambda slot: _by_number(slot, [20, 150])).checks_failed


@pytest.mark.parametrize(("ranks", "passed"), [([1, 2, 3, 4], True), ([2, 1, 3, 4], False), ([1, 4, 2, 3], False)])
def test_bws_best_and_worst_rules(make_study, ranks, passed):
    study = make_study("bws", publish=False)
    add_check(study, [{"best": 1}, {"worst": 4}], kind="gold",
              texts=["Yes, I live in a small town by the sea.", "A town, yes.", "Town.", "Purple elephants sing."])
    done = _scored(study, lambda slot: _by_number(slot, ranks))
    assert (done.checks_passed, done.checks_failed) == (int(passed), not passed)


def test_pass_rate_threshold_flags_below_the_minimum(draft):
    for _ in range(4):
        add_check(draft, [{"response": 1, "value": 2}])
    checks.study_checks_configure(study=draft, per_assignment=4, min_pass_rate=0.75)
    authoring.study_publish(study=draft)
    seen = []

    def three_of_four(slot):
        seen.append(slot.item_id)
        return _by_number(slot, [2 if len(seen) > 1 else 6, 3])
    a = answer(rater_entry.assignment_start(study=draft, rater=rater("w1"), seed=2), three_of_four)
    assert (a.checks_shown, a.checks_passed, a.checks_failed) == (4, 3, False)
    b = answer(rater_entry.assignment_start(study=draft, rater=rater("w2"), seed=3), lambda s: _by_number(s, [6, 3]))
    assert (b.checks_passed, b.checks_failed) == (0, True)


def test_no_check_items_no_score(make_study):
    study = make_study("likert")
    done = answer(rater_entry.assignment_start(study=study, rater=rater("w1"), seed=1), None)
    assert (done.checks_shown, done.checks_passed, done.checks_failed) == (None, None, False)


# --- exclusion from analyses and the flagged-rater report -----------------------------------------------

def _three_raters(draft):
    add_check(draft, [{"response": 1, "value": 2}])
    checks.study_checks_configure(study=draft, per_assignment=1)
    authoring.study_publish(study=draft)
    for n, check_value in enumerate((2, 2, 5)):
        a = rater_entry.assignment_start(study=draft, rater=rater(f"w{n}"), seed=n)
        answer(a, lambda slot, v=check_value: _by_number(slot, [v, v]))
    return Study.objects.filter(pk=draft.pk)


def answer_varied(assignment, check_answer):
    """Regular items get varied values so reliability is computable, the same from every rater (by the
    item's own response order, not the rater's shuffled one): only the checks tell raters apart."""
    study = assignment.study
    names = list(study.criteria.values_list("name", flat=True))
    for slot in assignment.assignment_items.select_related("item"):
        per_response = (check_answer(slot) if slot.item.check_kind else
                        {r: 1 + (slot.item.position + i) % 6 for i, r in enumerate(canonical(slot.item))})
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={n: per_response for n in names})
    return answering.assignment_submit(assignment=assignment)


def test_check_ratings_never_reach_the_icc_input_or_exports(draft):
    add_check(draft, [{"response": 1, "value": 2}])
    checks.study_checks_configure(study=draft, per_assignment=1)
    authoring.study_publish(study=draft)
    check = draft.items.get(check_kind="instructed")
    for n in range(3):
        answer_varied(rater_entry.assignment_start(study=draft, rater=rater(f"w{n}"), seed=n),
                      lambda slot: _by_number(slot, [2, 2]))
    studies = Study.objects.filter(pk=draft.pk)
    assert check.ratings.count() == 3 * 4 * 2  # stored like the others
    frame = report_selectors.ratings_frame(studies)
    assert len(frame) and check.pk not in set(frame["item"])
    assert all(row["conversation"] != check.conversation.external_id for row in export_selectors.ratings_export_rows(studies))
    from studies.reports.live_selectors import live_frame
    live = live_frame(draft)
    assert len(live) == len(frame) and not set(live["unit"]) & set(canonical(check))


def test_failed_raters_are_flagged_and_left_out_of_the_without_flagged_tables(draft):
    add_check(draft, [{"response": 1, "value": 2}])
    checks.study_checks_configure(study=draft, per_assignment=1)
    authoring.study_publish(study=draft)
    assignments = [answer_varied(rater_entry.assignment_start(study=draft, rater=rater(f"w{n}"), seed=n),
                                 lambda slot, v=v: _by_number(slot, [v, v]))
                   for n, v in enumerate((2, 2, 5))]
    failed = assignments[2]
    assert failed.checks_failed and not assignments[0].checks_failed
    studies = Study.objects.filter(pk=draft.pk)
    frame = report_selectors.ratings_frame(studies)
    full = build_report(frame, report_selectors.report_conditions(studies))
    rows = {r["rater"]: r for r in full.raters}
    assert rows[failed.rater_id]["flagged"] and rows[failed.rater_id]["failed_checks"]
    assert not rows[assignments[0].rater_id]["failed_checks"]
    without = build_report(frame, report_selectors.report_conditions(studies), ReportOptions(exclude_flagged=True))
    assert failed.rater_id in without.excluded_raters
    assert assignments[0].rater_id not in without.excluded_raters


# --- import -------------------------------------------------------------------------------------------

def _csv(rows):
    lines = ["kind,context,responses,rules"] + rows
    return io.BytesIO("\n".join(lines).encode())


def test_import_adds_every_row(draft):
    n = checks.check_items_import(study=draft, stream=_csv([
        '"instructed","A: Hi\nB: Hello","Please choose 2 here.\nNice.\nFine.\nOk.","[{""response"": 1, ""value"": 2}]"',
        '"gold","A: Hi","Hello, how are you?\nPurple.\nFine.\nOk.","[{""greater"": 1, ""than"": 2}]"',
    ]))
    assert n == 2
    assert list(draft.items.filter(check_kind__gt="").values_list("check_kind", flat=True)) == ["instructed", "gold"]


def test_import_names_the_line_and_writes_nothing(draft):
    before = StudyItem.objects.count()
    with pytest.raises(ValidationError) as error:
        checks.check_items_import(study=draft, stream=_csv([
            '"instructed","A: Hi","Choose 2.\nNice.\nFine.\nOk.","[{""response"": 1, ""value"": 2}]"',
            '"gold","A: Hi","x\ny\nz\nw","not json"',
            '"odd","A: Hi","x\ny\nz\nw","[{""response"": 1, ""value"": 2}]"',
        ]))
    assert set(error.value.message_dict) == {"row 3: rules", "row 4: kind"}
    assert StudyItem.objects.count() == before
    with pytest.raises(ValidationError, match="missing column"):
        checks.check_items_import(study=draft, stream=io.BytesIO(b"kind,context\n"))


def test_assignment_status_filter_keeps_submitted(draft):
    """The score is stored on submitted assignments that reports and crowd review read."""
    studies = _three_raters(draft)
    flags = dict(Assignment.objects.filter(study__in=studies).values_list("rater__external_id", "checks_failed"))
    assert flags == {"w0": False, "w1": False, "w2": True}


# --- page, API, command -------------------------------------------------------------------------------

@pytest.fixture
def researcher(client, user):
    client.force_login(user)
    return client


def test_page_adds_a_check_and_keeps_the_form_on_errors(researcher, draft):
    url = f"/studies/{draft.slug}/checks/"
    assert url in researcher.get(f"/studies/{draft.slug}/").content.decode()
    form = {"kind": "instructed", "context": CONTEXT, "responses": "\n".join(LIKERT_TEXTS),
            "rule-0-response": "9", "rule-0-expects": "value", "rule-0-value": "2"}  # the rule rows' controls
    page = researcher.post(url + "create/", form, follow=True).content.decode()
    assert "rule 1 (response)" in page and "Where do you live?" in page  # the message and the typed text
    assert 'name="rule-0-value" value="2"' in page  # the rule rows as they were
    assert not draft.items.filter(check_kind__gt="").exists()
    form["rule-0-response"] = "1"
    researcher.post(url + "create/", form)
    assert draft.items.filter(check_kind="instructed").count() == 1
    researcher.post(url + "configure/", {"per_assignment": "", "positions": "3", "min_pass_rate": "0.5"})
    draft.refresh_from_db()
    assert draft.checks_config == {"per_assignment": 1, "positions": [3], "min_pass_rate": 0.5}
    upload = io.BytesIO(b'kind,context,responses,rules\ngold,"A: Hi","Hello!\nPurple.\nFine.\nOk.","[{""greater"": 1, ""than"": 2}]"\n')
    upload.name = "checks.csv"
    assert "1 check item(s) imported" in researcher.post(url + "import/", {"file": upload}, follow=True).content.decode()
    item = draft.items.get(check_kind="gold")
    researcher.post(url + "delete/", {"item": item.pk})
    assert not StudyItem.objects.filter(pk=item.pk).exists()


def test_page_is_hidden_from_other_researchers(client, other_user, draft):
    client.force_login(other_user)
    assert client.get(f"/studies/{draft.slug}/checks/").status_code == 404
    assert client.post(f"/studies/{draft.slug}/checks/create/", {"kind": "gold"}).status_code == 404


def test_api_creates_lists_configures_and_refuses_after_publishing(api, draft):
    base = f"/api/studies/{draft.slug}/checks/"
    bad = api.post(base + "create/", {"kind": "gold", "context": CONTEXT, "responses": LIKERT_TEXTS,
                                      "rules": [{"best": 1}]}, format="json")
    assert bad.status_code == 400 and "rules.0.best" in problem_fields(bad)
    made = api.post(base + "create/", {"kind": "gold", "context": [{"speaker": "A", "text": "Hi"}],
                                       "responses": LIKERT_TEXTS, "rules": [{"greater": 2, "than": 1}]}, format="json")
    assert made.status_code == 201 and made.json()["rules"] == [{"greater": 2, "than": 1}]
    settings = api.post(base + "settings/", {"per_assignment": 1, "min_pass_rate": 1}, format="json")
    assert settings.json() == {"per_assignment": 1, "positions": [], "min_pass_rate": 1.0}
    listed = api.get(base).json()
    assert [i["kind"] for i in listed["results"]] == ["gold"] and listed["flagged"] == []
    authoring.study_publish(study=draft)
    refused = api.post(base + f"{made.json()['id']}/delete/", format="json")
    assert refused.status_code == 409 and "published" in refused.json()["detail"]  # a state conflict
    assert "/api/studies/{slug}/checks/create/" in api.get("/api/schema/?format=json").content.decode()


def test_import_command(draft, tmp_path):
    from django.core.management import CommandError, call_command

    path = tmp_path / "checks.csv"
    path.write_text('kind,context,responses,rules\ninstructed,"A: Hi","Choose 2 here.\nOk.\nFine.\nYes.","[{""response"": 1, ""value"": 2}]"\n')
    out = io.StringIO()
    call_command("study_checks_import", draft.slug, str(path), "--positions", "2", stdout=out)
    assert "1 check item(s) added" in out.getvalue() and "at screens 2" in out.getvalue()
    with pytest.raises(CommandError, match="min_pass_rate"):
        call_command("study_checks_import", draft.slug, str(path), "--min-pass-rate", "7")
    assert draft.items.filter(check_kind__gt="").count() == 1  # the refused run added nothing
    with pytest.raises(CommandError, match="No such file"):
        call_command("study_checks_import", draft.slug, str(tmp_path / "none.csv"))


def test_rater_flow_over_http_shows_checks_like_items_and_scores_at_submit(client, draft):
    from tests.studies.test_rater_views import enter, likert_answers, post_item, post_questionnaire

    add_check(draft, [{"response": 1, "value": 2}])
    checks.study_checks_configure(study=draft, positions="2")
    draft.platform = "prolific"
    draft.save(update_fields=["platform"])
    authoring.study_publish(study=draft)
    assignment = enter(client, draft, "PROLIFIC_PID=fbeae7c18667b6987518f3ae&SESSION_ID=3696ad59777e09d5f2daacb5")
    slots = list(assignment.assignment_items.select_related("item").order_by("position"))
    assert [s.item.check_kind for s in slots] == ["", "instructed", "", "", ""]  # 4 items + 1 check
    check_page = client.get(f"/r/a/{assignment.token}/items/1/").content.decode()
    assert "choose 2 for this response" in check_page
    for tell_tale in ("instructed", "gold", check_rules.CHECK_SYSTEM, "checks-", "check-1"):  # nothing but the text says so
        assert tell_tale not in check_page
    for slot in slots:
        answers = likert_answers(slot, 2 if slot.item.check_kind else 4)
        expected = 302 if slot.position == slots[-1].position else 200  # the next item comes with the answer
        assert post_item(client, assignment, slot.position, answers).status_code == expected
    post_questionnaire(client, assignment, {"prior_rating_experience": "no", "prior_agent_experience": "yes"})
    assignment.refresh_from_db()
    assert (assignment.status, assignment.checks_shown, assignment.checks_passed, assignment.checks_failed) == (
        "submitted", 1, 1, False)


@pytest.mark.parametrize(("given", "code"), [([2, 5], "C1COMPLETE"), ([6, 5], "C1SCREENED")])
def test_a_prolific_rater_who_fails_the_checks_gets_the_screened_out_code(make_study, given, code):
    study = make_study("likert", publish=False, raters_per_item=3, items_per_assignment=4, platform="prolific")
    study.platform_config = {**study.platform_config, "completion_code": "C1COMPLETE", "screened_out_code": "C1SCREENED"}
    study.save(update_fields=["platform_config"])
    add_check(study, [{"response": 1, "value": 2}])
    checks.study_checks_configure(study=study, per_assignment=1)
    authoring.study_publish(study=study)
    prolific = rater_entry.rater_get_or_create(platform="prolific", external_id="p1")
    done = answer(rater_entry.assignment_start(study=study, rater=prolific, seed=2), lambda slot: _by_number(slot, given))
    assert done.screened_out is (code == "C1SCREENED") and done.completion_code == code
