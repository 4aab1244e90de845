"""Categorical, multi-label and free-text criteria (studies.designs.kinds) and the reason any criterion
may ask for: settings refused field by field, the rater's answers parsed with one message per field,
autosaved and shown again, check rules expecting a label or a label set, and labels and texts never
read as numbers."""
import pytest
from django.core.exceptions import ValidationError
from django.http import QueryDict

from studies.authoring import checks, editing
from studies.authoring import services as authoring
from studies.designs import KINDS, design_for
from studies.designs.common import target_key
from studies.models import Criterion, Rating, Study
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating import form_tokens
from studies.reports import selectors as report_selectors
from tests.problems import problem_fields
from tests.visible import visible_text


def key(slot, target):
    """The letter a rater page names ``target`` by on ``slot``'s screen (its fields never carry an id)."""
    return target_key(slot.response_order, target)


pytestmark = pytest.mark.django_db

SAFETY = {"name": "safety", "question": "Is this response safe?", "kind": "categorical",
          "options": {"labels": ["safe", "unsafe", "unsure"]}, "rationale": "required"}
PROBLEMS = {"name": "problems", "question": "Which problems does it have?", "kind": "multilabel",
            "options": {"labels": ["repetition", "contradiction", "off-topic", "ungrammatical"]}}
NOTES = {"name": "notes", "question": "What would make it better?", "kind": "free_text",
         "options": {"min_length": 10, "max_length": 50}}


@pytest.fixture
def kinds_study(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Kinds")
    study = authoring.study_create(experiment=experiment, title="kinds", design="likert", raters_per_item=2,
                                   items_per_assignment=4, criteria=[{"name": "readability"}, SAFETY, PROBLEMS, NOTES])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    study.refresh_from_db()
    return study


def started(study, name="r1"):
    authoring.study_publish(study=study)
    return rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(platform="invite",
                                                                                           external_id=name), seed=1)


def create(user, criteria, design="likert"):
    experiment = authoring.experiment_create(owner=user, title="refused")
    return authoring.study_create(experiment=experiment, title="x", design=design, criteria=criteria)


@pytest.mark.parametrize(("spec", "field", "words"), [
    ({"kind": "categorical", "options": {"labels": ["only one"]}}, "criteria[0].options.labels", "2 to 12 labels"),
    ({"kind": "categorical", "options": {"labels": ["a", "A"]}}, "criteria[0].options.labels", "different"),
    ({"kind": "categorical", "options": {"labels": ["a", "x" * 61]}}, "criteria[0].options.labels", "60"),
    ({"kind": "categorical", "options": {"labels": ["a", 3]}}, "criteria[0].options.labels", "text"),
    ({"kind": "multilabel", "options": {"labels": ["a", "__none__"]}}, "criteria[0].options.labels", "__"),
    ({"kind": "multilabel", "options": {"labels": ["a", "b"], "none_option": "yes"}},
     "criteria[0].options.none_option", "true or false"),
    ({"kind": "free_text", "options": {"min_length": -1}}, "criteria[0].options.min_length", "whole number"),
    ({"kind": "free_text", "options": {"min_length": 40, "max_length": 20}}, "criteria[0].options.max_length",
     "at least min_length"),
    ({"kind": "stars"}, "criteria[0].kind", "unknown kind"),
    ({"kind": "scale", "rationale": "sometimes"}, "criteria[0].rationale", "optional, required"),
], ids=["categorical-one-label", "categorical-same-label", "categorical-long-label", "categorical-number-label",
        "multilabel-reserved", "multilabel-none-option", "free_text-min", "free_text-max-below-min",
        "categorical-unknown-kind", "categorical-rationale-setting"])
def test_categorical_multilabel_free_text_settings_refused_naming_the_field(user, spec, field, words):
    with pytest.raises(ValidationError) as refused:
        create(user, [{"name": "q", **spec}])
    assert words in " ".join(refused.value.message_dict[field])
    assert not Study.objects.filter(title="x").exists()


@pytest.mark.parametrize("design", ["bws_tuples", "pairwise"])
def test_categorical_criterion_refused_by_a_design_without_rating_rows(user, design):
    with pytest.raises(ValidationError) as refused:
        create(user, [SAFETY], design=design)
    assert "own scale" in refused.value.message_dict["criteria[0].kind"][0]


def test_categorical_multilabel_free_text_settings_stored_with_defaults(kinds_study):
    stored = {c.name: (c.kind, c.options, c.rationale) for c in kinds_study.criteria.all()}
    assert stored == {
        "readability": ("scale", {}, ""),
        "safety": ("categorical", {"labels": ["safe", "unsafe", "unsure"]}, "required"),
        "problems": ("multilabel", {"labels": PROBLEMS["options"]["labels"], "none_option": True}, ""),
        "notes": ("free_text", {"min_length": 10, "max_length": 50}, ""),
    }


def test_categorical_labels_edited_on_a_draft_and_refused_once_raters_started(kinds_study):
    specs = [{"name": c.name, "kind": c.kind, "options": c.options, "rationale": c.rationale}
             for c in kinds_study.criteria.all()]
    specs[1] = {**specs[1], "options": {"labels": "safe, unsafe"}, "rationale": "optional"}
    editing.study_update(study=kinds_study, values={"criteria": specs})
    safety = kinds_study.criteria.get(name="safety")
    assert (safety.options, safety.rationale) == ({"labels": ["safe", "unsafe"]}, "optional")
    with pytest.raises(ValidationError) as refused:
        editing.study_update(study=kinds_study, values={"criteria": [{**specs[1], "options": {"labels": []}}]})
    assert "criteria[0].options.labels" in refused.value.message_dict
    assert kinds_study.criteria.count() == 4
    started(kinds_study)
    with pytest.raises(ValidationError):
        editing.study_update(study=kinds_study, values={"criteria": [{**specs[1], "kind": "free_text"}]})
    assert kinds_study.criteria.get(name="safety").kind == "categorical"


def form(study, slot, **fields):
    post = QueryDict(mutable=True)
    for key, value in fields.items():
        post.setlist(key, value if isinstance(value, list) else [value])
    return design_for(study).answers_parse(post, study=study, order=slot.response_order,
                                           criteria=list(study.criteria.all()))


def test_categorical_multilabel_free_text_form_messages_one_per_field(kinds_study):
    assignment = started(kinds_study)
    slot = assignment.assignment_items.order_by("position").first()
    a, b = slot.response_order[:2]
    others = {f"r{key(slot, t)}-{name}": value for t in slot.response_order[2:] for name, value in (
        ("readability", "3"), ("safety", "safe"), ("safety.rationale", "fine"), ("problems", "__none__"),
        ("notes", "Nothing to add."))}
    answers, errors = form(kinds_study, slot, **{
        f"r{key(slot, a)}-readability": "4", f"r{key(slot, b)}-readability": "2",
        f"r{key(slot, a)}-safety": "safe", f"r{key(slot, b)}-safety": "dangerous",
        f"r{key(slot, a)}-safety.rationale": "polite", f"r{key(slot, b)}-safety.rationale": "  ",
        f"r{key(slot, a)}-problems": ["repetition", "off-topic"], f"r{key(slot, b)}-problems": ["__none__", "repetition"],
        f"r{key(slot, a)}-notes": "Shorter, please.", f"r{key(slot, b)}-notes": "ok", **others})
    assert errors == {
        f"r{key(slot, b)}-safety": "“dangerous” is not one of the labels (safe, unsafe, unsure)",
        f"r{key(slot, b)}-safety.rationale": "say why in a few words",
        f"r{key(slot, b)}-problems": "“None of these” cannot go with other labels",
        f"r{key(slot, b)}-notes": "write at least 10 characters (now 2)",
    }
    assert answers["safety"][a] == "safe" and answers["problems"][a] == ["repetition", "off-topic"]
    assert answers["notes"][a] == "Shorter, please." and answers["safety.rationale"][a] == "polite"
    assert b not in answers["safety"] and b not in answers["notes"]
    _, errors = form(kinds_study, slot)
    assert errors[f"r{key(slot, a)}-safety"] == "pick one of the labels for this response"
    assert errors[f"r{key(slot, a)}-problems"] == "tick the labels that apply, or “None of these”"
    assert errors[f"r{key(slot, a)}-notes"] == "write at least 10 characters (now 0)"
    _, errors = form(kinds_study, slot, **{f"r{key(slot, a)}-notes": "x" * 51})
    assert errors[f"r{key(slot, a)}-notes"] == "write at most 50 characters (now 51)"


def full_answers(slot, *, safety="safe", problems=None, notes="Could be shorter."):
    order = slot.response_order
    return {"readability": dict.fromkeys(order, 3), "safety": dict.fromkeys(order, safety),
            "safety.rationale": dict.fromkeys(order, "no harm in it"),
            "problems": dict.fromkeys(order, problems if problems is not None else ["repetition"]),
            "notes": dict.fromkeys(order, notes)}


def test_multilabel_none_of_these_is_stored_as_an_empty_set_and_shown_again(kinds_study):
    assignment = started(kinds_study)
    slot = assignment.assignment_items.order_by("position").first()
    answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                             answers=full_answers(slot, problems=["__none__"]))
    rows = Rating.objects.filter(assignment=assignment, criterion__name="problems")
    assert [r.labels for r in rows] == [[]] * len(slot.response_order)
    slot.refresh_from_db()
    shown = design_for(kinds_study).stored_values(slot, kinds_study, list(kinds_study.criteria.all()))
    assert shown[f"r{key(slot, slot.response_order[0])}-problems"] == ["__none__"]
    answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                             answers=full_answers(slot, problems=["off-topic", "repetition"]))
    assert {tuple(r.labels) for r in rows.all()} == {("off-topic", "repetition")}  # one stored form: sorted


def test_multilabel_without_none_option_needs_a_label(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="strict")
    study = authoring.study_create(experiment=experiment, title="strict", design="likert", criteria=[
        {**PROBLEMS, "options": {**PROBLEMS["options"], "none_option": False}}])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    assignment = started(study)
    slot = assignment.assignment_items.order_by("position").first()
    _, errors = form(study, slot, **{f"r{key(slot, t)}-problems": "__none__" for t in slot.response_order})
    assert set(errors.values()) == {"tick at least one label"}
    with pytest.raises(ValidationError) as refused:
        answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                 answers={"problems": dict.fromkeys(slot.response_order, [])})
    assert set(refused.value.message_dict) == {f"problems.{t}" for t in slot.response_order}


def test_categorical_and_free_text_are_never_read_as_numbers(kinds_study):
    assignment = started(kinds_study)
    for slot in assignment.assignment_items.order_by("position"):
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=full_answers(slot))
    answering.assignment_submit(assignment=assignment)
    frame = report_selectors.ratings_frame(Study.objects.filter(pk=kinds_study.pk))
    assert set(frame["criterion"]) == {"readability"}
    shown = sum(len(s.response_order) for s in assignment.assignment_items.all())
    assert Rating.objects.filter(assignment=assignment, criterion__kind="categorical", value__isnull=True,
                                 label="safe").count() == shown


def test_free_text_and_reason_autosaved_at_full_length_and_labels_as_a_list(client, kinds_study):
    assignment = started(kinds_study)
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.order_by("position").first()
    a = slot.response_order[0]
    long_text = "A much longer note than twenty characters."
    draft = {f"r{key(slot, a)}-notes": long_text, f"r{key(slot, a)}-safety.rationale": long_text, f"r{key(slot, a)}-readability": "3" * 30,
             f"r{key(slot, a)}-problems": ["repetition", "off-topic"]}
    answering.assignment_item_draft_save(slot=slot, draft=draft)
    slot.refresh_from_db()
    assert slot.draft == {**draft, f"r{key(slot, a)}-readability": "3" * 20}
    page = client.get(f"/r/a/{assignment.token}/items/{slot.position}/").content.decode()
    assert long_text in page
    assert 'value="repetition" checked' in page and 'value="off-topic" checked' in page
    assert 'value="contradiction" checked' not in page
    with pytest.raises(ValidationError):
        answering.assignment_item_draft_save(slot=slot, draft={f"r{key(slot, a)}-problems": ["x"] * 21})


def test_categorical_refused_post_keeps_every_ticked_label_and_names_the_reason(client, kinds_study):
    assignment = started(kinds_study)
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.order_by("position").first()
    a, b = slot.response_order[:2]
    page = client.post(f"/r/a/{assignment.token}/items/{slot.position}/", {
        "form_token": form_tokens.form_token(assignment.token, "item"), f"r{key(slot, a)}-safety": "unsure",
        f"r{key(slot, a)}-problems": ["repetition", "ungrammatical"]})
    html = page.content.decode()
    assert page.status_code == 400
    assert 'value="unsure" checked' in html
    assert 'value="repetition" checked' in html and 'value="ungrammatical" checked' in html
    assert f'id="r{key(slot, b)}-safety.rationale-error">say why in a few words' in html
    assert not Rating.objects.filter(assignment=assignment).exists()


def check_study(user, corpus, rules):
    experiment = authoring.experiment_create(owner=user, title="Checks")
    study = authoring.study_create(experiment=experiment, title="checks", design="likert",
                                   criteria=[{"name": "readability"}, SAFETY, PROBLEMS, NOTES])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    checks.check_item_create(study=study, kind="gold", context="A: hi", responses=["Hello!", "Go away, idiot.", "Hi there."],
                             rules=rules)
    return study


@pytest.mark.parametrize(("rule", "field", "words"), [
    ({"criterion": "safety", "response": 2, "label": "toxic"}, "rules[0].label", "one of the labels of safety"),
    ({"criterion": "problems", "response": 2, "labels": ["rude"]}, "rules[0].labels", "list of labels"),
    ({"criterion": "readability", "response": 2, "label": "safe"}, "rules[0].criterion", "one label"),
    ({"criterion": "safety", "response": 2, "value": 2}, "rules[0].criterion", "scale"),
    ({"criterion": "notes", "response": 1, "label": "safe"}, "rules[0].criterion", "free text"),
    ({"response": 2, "label": "unsafe"}, "rules[0].criterion", "readability"),
], ids=["categorical-unknown", "multilabel-unknown", "categorical-on-scale", "categorical-value-rule",
        "free_text-no-rule", "categorical-without-criterion"])
def test_categorical_multilabel_check_rules_refused_naming_the_field(user, corpus, rule, field, words):
    with pytest.raises(ValidationError) as refused:
        check_study(user, corpus, [rule])
    assert words in " ".join(refused.value.message_dict[field]), refused.value.message_dict


def test_categorical_and_multilabel_gold_items_pass_and_fail(user, corpus):
    study = check_study(user, corpus, [{"criterion": "safety", "response": 2, "label": "unsafe"},
                                       {"criterion": "problems", "response": 2, "labels": ["off-topic"]},
                                       {"criterion": "problems", "response": 1, "labels": []}])
    checks.study_checks_configure(study=study, per_assignment=1)
    authoring.study_publish(study=study)

    def take(name, safety_of_2, problems_of_2):
        assignment = rater_entry.assignment_start(
            study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=name), seed=3)
        for slot in assignment.assignment_items.select_related("item").order_by("position"):
            answers = full_answers(slot, problems=["__none__"])
            if slot.item.check_kind:
                second = list(slot.item.item_responses.order_by("position").values_list("response_id", flat=True))[1]
                answers["safety"][second], answers["problems"][second] = safety_of_2, problems_of_2
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
        return answering.assignment_submit(assignment=assignment)

    assert take("right", "unsafe", ["off-topic"]).checks_passed == 1
    assert take("wrong-label", "safe", ["off-topic"]).checks_passed == 0
    assert take("wrong-set", "unsafe", ["off-topic", "repetition"]).checks_passed == 0


def test_free_text_kind_registry_lists_every_kind_with_a_template():
    assert {"scale", "categorical", "multilabel", "free_text", "spans"} <= set(KINDS)  # others may join
    assert all(kind.template.startswith("raters/kinds/") for key, kind in KINDS.items() if key != "scale")
    assert [k for k, kind in KINDS.items() if kind.numeric] == ["scale"]
    assert Criterion._meta.get_field("kind").default == "scale"


def rated_by_three(study):
    """Three raters answer every item: labels differ by rater and system, so there is something to count."""
    authoring.study_publish(study=study)
    picks = {0: "safe", 1: "unsafe", 2: "unsure"}
    for r in range(3):
        assignment = rater_entry.assignment_start(
            study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=f"rater{r}"), seed=r)
        for slot in assignment.assignment_items.order_by("position"):
            answers = full_answers(slot, notes=f"Note {r} on item {slot.item_id}.")
            answers["safety"] = {t: picks[(t + r * (t % 2)) % 3] for t in slot.response_order}
            answers["problems"] = {t: ["repetition"] if (t + r) % 2 else ["__none__"] for t in slot.response_order}
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
        answering.assignment_submit(assignment=assignment)


def test_categorical_multilabel_free_text_report_section_counts_agreement_and_examples(client, user, kinds_study):
    import pandas as pd

    from studies.analysis.agreement import krippendorff_alpha
    from studies.reports import label_selectors

    rated_by_three(kinds_study)
    entries = {e["criterion"]: e for e in label_selectors.label_report(Study.objects.filter(pk=kinds_study.pk))}
    assert set(entries) == {"safety", "problems", "notes"}
    ratings = pd.DataFrame(list(Rating.objects.filter(criterion__name="safety", item__check_kind="").values(
        "response_id", "response__system__name", "assignment__rater_id", "label")))
    safety = entries["safety"]
    by_system = ratings.groupby("response__system__name")["label"].value_counts()
    for row in safety["shares"]:
        assert [e["count"] for e in row["labels"]] == [int(by_system[row["system"]].get(x, 0))
                                                        for x in ["safe", "unsafe", "unsure"]]
    codes = ratings["label"].map({"safe": 0, "unsafe": 1, "unsure": 2})
    assert safety["agreement"]["alpha"] == pytest.approx(
        krippendorff_alpha(ratings["response_id"], ratings["assignment__rater_id"], codes, level="nominal"), abs=1e-12)
    assert safety["association"]["df"] == (ratings["response__system__name"].nunique() - 1) * 2
    assert {r["label"] for r in entries["problems"]["per_label"]} == {"repetition", "contradiction", "off-topic",
                                                                     "ungrammatical"}
    repetition = next(r for r in entries["problems"]["per_label"] if r["label"] == "repetition")
    assert repetition["present"] == Rating.objects.filter(criterion__name="problems", labels=["repetition"]).count()
    assert all(text.startswith("Note ") for e in entries["notes"]["examples"] for text in e["texts"])
    assert entries["safety"]["reasons"][0]["texts"][0] == "no harm in it"
    client.force_login(user)
    page = client.get(f"/studies/{kinds_study.slug}/report/").content.decode()
    assert 'data-testid="label-report" data-kind="categorical"' in page and "Krippendorff's α (nominal)" in page
    assert "Note 0 on item" in page
    import io

    import openpyxl
    sheet = openpyxl.load_workbook(io.BytesIO(client.get(f"/studies/{kinds_study.slug}/report.xlsx").content))["Labels"]
    header = [c.value for c in sheet[1]]
    shares = [dict(zip(header, (c.value for c in row), strict=True)) for row in sheet.iter_rows(min_row=2)]
    assert {r["criterion"] for r in shares} == {"safety", "problems"}  # free text is never a number
    first = safety["shares"][0]
    assert next(r for r in shares if r["criterion"] == "safety" and r["system"] == first["system"]
                and r["label"] == "safe")["count"] == first["labels"][0]["count"]
    browse = client.get(f"/studies/{kinds_study.slug}/browse/").content.decode()
    assert "Note 1 on item" in browse and "safe (why: no harm in it)" in browse


def test_categorical_multilabel_free_text_written_in_the_study_form_and_shown_back(client, user):
    from studies.authoring.forms import criteria_parse, criteria_text

    client.force_login(user)
    authoring.experiment_create(owner=user, title="E", slug="e")
    text = ("safety | Is this response safe? | | categorical: safe, unsafe, unsure | why: required\n"
            "problems | Which problems does it have? | Tick all. | multilabel: repetition, off-topic | none: no\n"
            "notes | What would make it better? | | free_text: 10-500 | why: optional\n"
            "fluency | How fluent is it?")
    base = {"title": "Kinds", "design": "likert", "raters_per_item": 3, "items_per_assignment": 5,
            "likert_points": 5, "platform": "invite"}
    bad = client.post("/experiments/e/studies/new/", {**base, "criteria": text.replace("safe, unsafe, unsure", "safe")})
    assert bad.status_code == 200 and "safety: labels: give 2 to 12 labels, got 1" in bad.content.decode()
    assert not Study.objects.filter(title="Kinds").exists()
    response = client.post("/experiments/e/studies/new/", {**base, "criteria": text})
    assert response.status_code == 302
    study = Study.objects.get(title="Kinds")
    stored = {c.name: (c.kind, c.options, c.rationale, c.help_text) for c in study.criteria.all()}
    assert stored == {
        "safety": ("categorical", {"labels": ["safe", "unsafe", "unsure"]}, "required", ""),
        "problems": ("multilabel", {"labels": ["repetition", "off-topic"], "none_option": False}, "", "Tick all."),
        "notes": ("free_text", {"min_length": 10, "max_length": 500}, "optional", ""),
        "fluency": ("scale", {}, "", ""),
    }
    shown = criteria_text(study.criteria.all())
    assert shown == text
    assert criteria_parse(shown) == criteria_parse(text)
    page = client.get(f"/studies/{study.slug}/edit/").content.decode()  # shown back as builder rows, no syntax
    assert 'value="Is this response safe?"' in page and "safe\nunsafe\nunsure</textarea>" in page
    assert "categorical: safe" not in page


def test_categorical_criterion_through_the_api_and_a_bad_label_named(api, user):
    authoring.experiment_create(owner=user, title="E", slug="e")
    bad = api.post("/api/studies/create/", {"experiment": "e", "title": "x", "design": "likert",
                                             "criteria": [{**SAFETY, "options": {"labels": ["safe"]}}]}, format="json")
    assert bad.status_code == 400 and "criteria.0.options.labels" in problem_fields(bad)
    created = api.post("/api/studies/create/", {"experiment": "e", "title": "y", "design": "likert",
                                                 "criteria": [SAFETY, PROBLEMS]}, format="json")
    assert created.status_code == 201, created.json()
    criteria = created.json()["criteria"]
    assert [(c["name"], c["kind"], c["rationale"]) for c in criteria] == [("safety", "categorical", "required"),
                                                                         ("problems", "multilabel", "")]
    assert criteria[0]["options"] == {"labels": ["safe", "unsafe", "unsure"]}


def test_categorical_demo_loads_with_reasons_and_its_report_counts_labels(client):
    import io

    from django.core.management import call_command

    from studies.authoring.demo import demo_user
    from studies.authoring.kinds_demo import KINDS_EXPERIMENT
    from studies.reports import label_selectors

    out = io.StringIO()
    call_command("load_demo", stdout=out)
    assert "Loaded labels demo 'demo-safety-labels'" in out.getvalue()
    study = Study.objects.get(experiment__slug=KINDS_EXPERIMENT)
    safety = Rating.objects.filter(assignment__study=study, criterion__name="safety")
    assert safety.count() == 5 * 12 * 4 and not safety.filter(rationale="").exists()
    entries = {e["criterion"]: e for e in label_selectors.label_report(Study.objects.filter(pk=study.pk))}
    shares = {row["system"]: row["labels"][0]["share"] for row in entries["safety"]["shares"]}
    assert shares["human"] > shares["seq2seq"]  # the better system is read as safer
    assert entries["safety"]["association"]["p"] < 0.05
    client.force_login(demo_user())
    for url in (f"/studies/{study.slug}/report/", f"/studies/{study.slug}/browse/", f"/studies/{study.slug}/edit/",
                f"/studies/{study.slug}/preview/"):
        assert client.get(url).status_code == 200, url
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert "safety (categorical: safe, unsure, unsafe); reason required" in page
    call_command("load_demo", stdout=(again := io.StringIO()))
    assert "The labels demo is already loaded." in again.getvalue()


def test_free_text_and_reasons_exported_spreadsheet_safe_and_verbatim_in_jsonl(kinds_study):
    import csv
    import io
    import json

    import openpyxl

    from studies.reports import exporting

    assignment = started(kinds_study)
    for slot in assignment.assignment_items.order_by("position"):
        answers = full_answers(slot, notes="=HYPERLINK(\"http://x\")", problems=["__none__"])
        answers["safety.rationale"] = dict.fromkeys(slot.response_order, "+1 it is fine")
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    answering.assignment_submit(assignment=assignment)
    studies = Study.objects.filter(pk=kinds_study.pk)
    rows = list(csv.DictReader(io.StringIO("".join(exporting.export_lines(studies, "csv")))))
    notes = [r for r in rows if r["criterion"] == "notes"]
    assert notes and {r["answer"] for r in notes} == {"'=HYPERLINK(\"http://x\")"} and {r["value"] for r in notes} == {""}
    assert {r["rationale"] for r in rows if r["criterion"] == "safety"} == {"'+1 it is fine"}
    assert {r["answer"] for r in rows if r["criterion"] == "problems"} == {"None of these"}
    lines = [json.loads(line) for line in exporting.export_lines(studies, "jsonl")]
    assert {line["answer"] for line in lines if line["criterion"] == "notes"} == {"=HYPERLINK(\"http://x\")"}
    buffer = io.BytesIO()
    exporting.export_xlsx(studies, buffer)
    sheet = openpyxl.load_workbook(io.BytesIO(buffer.getvalue()))["ratings"]
    header = [c.value for c in sheet[1]]
    answers = {row[header.index("answer")].value for row in sheet.iter_rows(min_row=2)
               if row[header.index("criterion")].value == "notes"}
    assert answers == {"'=HYPERLINK(\"http://x\")"}


def test_categorical_and_multilabel_check_items_through_the_api_and_the_checks_page(api, client, user, kinds_study):
    base = f"/api/studies/{kinds_study.slug}/checks/"
    bad = api.post(base + "create/", {"kind": "gold", "context": "A: hi", "responses": ["Hello!", "Go away.", "Hi there."],
                                      "rules": [{"criterion": "safety", "response": 2, "label": "rude"}]}, format="json")
    assert bad.status_code == 400 and "rules.0.label" in problem_fields(bad)
    rules = [{"criterion": "safety", "response": 2, "label": "unsafe"},
             {"criterion": "problems", "response": 1, "labels": []}]
    made = api.post(base + "create/", {"kind": "gold", "context": "A: hi", "responses": ["Hello!", "Go away.", "Hi there."],
                                       "rules": rules}, format="json")
    assert made.status_code == 201 and made.json()["rules"] == rules
    assert api.get(base).json()["results"][0]["rules"] == rules
    client.force_login(user)
    page = client.get(f"/studies/{kinds_study.slug}/checks/").content.decode()
    # a hand-written check expects a label or a label set by controls (no JSON), and the rules read as words
    assert '<option value="label">gets the label</option>' in page and '<option value="labels">' in page
    assert 'name="rule-0-labels" value="repetition"' in page and "JSON" not in visible_text(page)
    assert "Response B: unsafe" in page and "Response A: none of these" in page


def test_categorical_criteria_keep_a_draft_from_switching_to_a_design_without_rating_rows(kinds_study):
    with pytest.raises(ValidationError) as refused:
        editing.study_update(study=kinds_study, values={"design": "pairwise"})
    assert "own scale" in refused.value.message_dict["design"][0]
    kinds_study.refresh_from_db()
    assert kinds_study.design == "likert"
    with pytest.raises(ValidationError) as refused:
        editing.study_update(study=kinds_study, values={"design": "pairwise", "criteria": [SAFETY]})
    assert "criteria[0].kind" in refused.value.message_dict


def test_free_text_reasons_beside_numbers_in_the_item_browser(client, user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Why")
    study = authoring.study_create(experiment=experiment, title="why", design="likert", raters_per_item=1,
                                   criteria=[{"name": "readability", "rationale": "optional"}])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    assignment = started(study)
    for slot in assignment.assignment_items.order_by("position"):
        first = slot.response_order[0]
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
            "readability": dict.fromkeys(slot.response_order, 4),
            "readability.rationale": {first: "Short and clear."}})
    answering.assignment_submit(assignment=assignment)
    assert Rating.objects.filter(rationale="Short and clear.").count() == assignment.assignment_items.count()
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/browse/").content.decode()
    assert "4 (why: Short and clear.)" in page and ">4<" in page and "4.0" not in page
