"""What raters see: the start page describes the study as configured; magnitude estimates take
decimals with one message per kind of mistake (all of them at once); BME anchors leave room for
"half as good"; link messages keep names as spelled."""
import math

import pytest
from django.core.exceptions import ValidationError

from studies.analysis.normalise import magnitude_log_ratio
from studies.authoring import services
from studies.designs import design_for
from studies.designs.magnitude import bme_reference_value
from studies.designs.ratings import field_name
from studies.models import AssignmentItem, Rating
from studies.rating.pages import sentence
from studies.reports import export_selectors
from tests.studies.test_rater_views import enter, post_item
from tests.visible import visible_text

pytestmark = pytest.mark.django_db


def start_page(client, study, query):
    response = client.get(f"/r/{study.slug}/?{query}")
    return client.get(response["Location"]).content.decode()


def test_start_page_describes_a_five_point_likert_study(client, make_study):
    study = make_study("likert", platform="prolific", points=5)
    page = start_page(client, study, "PROLIFIC_PID=a99e27f8d40e114ff48dc9c4&SESSION_ID=6b86b273ff34fce19d6b804e")
    assert "For each response you pick one point on a 5-point scale, from 1 (lowest) to 5 (highest)." in page
    assert "P-point" not in page and "default 6" not in page


def test_start_page_describes_an_rme_study_with_its_own_reference_and_range(client, make_study):
    study = make_study("rme", platform="prolific", reference_value=50, min=0, max=500)
    page = start_page(client, study, "PROLIFIC_PID=53b23bd1d9b2f0fdae6580fc&SESSION_ID=6b86b273ff34fce19d6b804e")
    assert ("Each conversation comes with a reference response worth 50. Give every response a number from 0 to "
            "500 that says how good it is compared with the reference; decimals such as 12.5 are fine. A response "
            "twice as good as the reference gets 100; one half as good gets 25.") in page
    shown = visible_text(page)  # not the whole page: its random form token can hold "999"
    assert "999" not in shown and "value 100" not in shown


def test_start_page_rme_range_check_holds_when_the_form_token_holds_999(client, make_study, monkeypatch):
    """The start page's form token is a random hex digest: one that holds "999" is not the range."""
    from studies.rating import form_tokens

    monkeypatch.setattr(form_tokens, "form_token", lambda token, purpose: "0999" * 16)
    study = make_study("rme", platform="prolific", reference_value=50, min=0, max=500)
    page = start_page(client, study, "PROLIFIC_PID=53b23bd1d9b2f0fdae6580fc&SESSION_ID=6b86b273ff34fce19d6b804e")
    assert 'value="0999' in page  # the token is on the page, in an attribute
    assert "999" not in visible_text(page) and "from 0 to 500" in visible_text(page)


def test_start_page_of_a_bme_study_names_the_anchors_its_items_show(client, make_study):
    study = make_study("bme", platform="prolific")  # the fixture sets anchors 50 + pk % 7
    shown = sorted(study.items.values_list("reference_value", flat=True))
    page = start_page(client, study, "PROLIFIC_PID=3e23e8160039594a33894f65&SESSION_ID=6b86b273ff34fce19d6b804e")
    assert f"with its own value (from {shown[0]:g} to {shown[-1]:g}; it changes from one conversation" in page


@pytest.mark.parametrize(("design", "config", "expected"), [
    ("likert", {"points": 3, "labels": ["bad", "so-so", "good"]}, "a 3-point scale, from 1 (bad) to 3 (good)."),
    ("bws", {"tuple_size": 3}, "you put its 3 responses in order from best to worst, without ties."),
    ("bme", {"anchor_min": 80, "anchor_max": 80}, "reference response worth 80."),
    ("rme", {"reference_value": 7.5, "min": 0, "max": 100}, "twice as good as the reference gets 15; one half as good gets 3.75."),
])
def test_descriptions_follow_the_configuration(design, config, expected):
    assert expected in design_for(design).describe({**design_for(design).defaults, **config})


def test_a_design_without_a_rater_description_falls_back_to_its_explanation(monkeypatch):
    monkeypatch.setattr(design_for("pairwise"), "explanation", "Pick the better of two.")
    assert design_for("pairwise").describe({}) == "Pick the better of two."


# --- typed values -----------------------------------------------------------------------------------

ME = {"reference_value": 100, "min": 0, "max": 999}


@pytest.mark.parametrize(("typed", "value", "problem"), [
    ("12.5", 12.5, None),
    (" 80 ", 80.0, None),
    (".5", 0.5, None),
    ("999", 999.0, None),
    ("0", 0.0, None),
    ("", None, "give a value for this response"),
    ("-40", None, "must not be negative: use a number from 0 to 999"),
    ("1500", None, "use a number from 0 to 999"),
    ("999.01", None, "use a number from 0 to 999"),
    ("12,5", None, "write 12.5 with a point, not a comma"),
    ("ten", None, "“ten” is not a number: type digits, e.g. 40 or 12.5"),
    ("1e3", None, "“1e3” is not a number: type digits, e.g. 40 or 12.5"),
    ("NaN", None, "“NaN” is not a number: type digits, e.g. 40 or 12.5"),
    ("1,000", None, "“1,000” is ambiguous: write 1000 for a whole number, or use a point for decimals"),
    ("12.5.1", None, "“12.5.1” is not a number: type digits, e.g. 40 or 12.5"),
])
def test_magnitude_values_are_decimals_with_a_message_per_problem(typed, value, problem):
    assert design_for("rme").typed_value_parse(ME, typed) == (value, problem)


@pytest.mark.parametrize(("typed", "value", "problem"), [
    ("3", 3, None),
    ("", None, "pick a point for this response"),
    ("2.5", None, "pick one of the points 1 to 5"),
    ("9", None, "pick one of the points 1 to 5"),
    ("x", None, "“x” is not one of the points 1 to 5"),
])
def test_likert_values_stay_whole_points(typed, value, problem):
    assert design_for("likert").typed_value_parse({"points": 5, "labels": []}, typed) == (value, problem)


def test_a_criterions_own_scale_bounds_the_value():
    assert design_for("rme").typed_value_parse(ME, "-2.5", scale_min=-3, scale_max=3) == (-2.5, None)
    assert design_for("rme").typed_value_parse(ME, "4", scale_min=-3, scale_max=3) == (None, "use a number from -3 to 3")


def test_the_service_accepts_decimal_magnitudes_and_keeps_likert_whole(make_study):
    assert design_for("rme").value_problem(ME, 12.5) is None
    assert design_for("bme").value_problem({"min": 0, "max": 999}, 0.25) is None
    assert design_for("likert").value_problem({"points": 5}, 2.5) == "must be a whole number from 1 to 5, got 2.5"


def test_decimals_are_stored_shown_again_and_normalised_by_the_value_shown(client, make_study):
    study = make_study("bme", platform="prolific")
    assignment = enter(client, study, "PROLIFIC_PID=e7502c799b8f76fbed077ff2&SESSION_ID=6b86b273ff34fce19d6b804e")
    slot = assignment.assignment_items.get(position=0)
    data = {field_name(r, c, slot.response_order): "12.5" for r in slot.response_order for c in ("readability", "coherence")}
    assert post_item(client, assignment, 0, data).status_code == 200
    assert set(Rating.objects.filter(assignment=assignment).values_list("value", flat=True)) == {12.5}
    again = client.get(f"/r/a/{assignment.token}/items/0/").content.decode()
    assert again.count('value="12.5"') == len(data)
    shown = slot.item.reference_value
    assert f'data-testid="reference-value">{shown:g}<' in again
    rows = [r for r in export_selectors.ratings_export_rows(study.experiment.studies.all()) if r["value"] == 12.5]
    assert rows and all(math.isclose(r["normalised_value"], magnitude_log_ratio([12.5], [shown])[0], abs_tol=1e-12)
                        for r in rows if r["reference_value"] == shown)


def test_every_bad_field_is_reported_at_once_with_its_own_message(client, make_study):
    study = make_study("rme", platform="prolific")
    assignment = enter(client, study, "PROLIFIC_PID=5ef5ef0364b6939c4ca61f34&SESSION_ID=6b86b273ff34fce19d6b804e")
    slot = assignment.assignment_items.get(position=0)
    first, second, third = slot.response_order[:3]
    data = {field_name(r, c, slot.response_order): "50" for r in slot.response_order for c in ("readability", "coherence")}
    data |= {field_name(first, "readability", slot.response_order): "-40", field_name(second, "readability", slot.response_order): "12,5",
             field_name(third, "coherence", slot.response_order): ""}
    response = post_item(client, assignment, 0, data)
    page = response.content.decode()
    assert response.status_code == 400
    for message in ("must not be negative: use a number from 0 to 999", "write 12.5 with a point, not a comma",
                    "give a value for this response"):
        assert message in page
    assert "not a whole number" not in page and page.count('aria-invalid="true"') == 3
    assert Rating.objects.count() == 0 and AssignmentItem.objects.get(pk=slot.pk).answered_at is None


# --- configuration and BME anchors ------------------------------------------------------------------

@pytest.mark.parametrize(("design", "config", "field"), [
    ("rme", {"reference_value": 50, "max": 40}, "design_config.reference_value"),
    ("rme", {"reference_value": 0}, "design_config.reference_value"),
    ("bme", {"anchor_min": 150, "anchor_max": 50}, "design_config.anchor_max"),
    ("bme", {"anchor_min": 50, "anchor_max": 150, "max": 120}, "design_config.anchor_min"),
    ("bme", {"anchor_min": 0}, "design_config.anchor_min"),
])
def test_anchors_outside_the_rating_range_are_refused_naming_the_field(design, config, field):
    with pytest.raises(ValidationError) as caught:
        design_for(design).config_clean(config)
    assert field in caught.value.message_dict


def test_bme_defaults_and_the_documented_anchor_rule():
    assert design_for("bme").config_clean(None) == {"min": 0, "max": 999, "anchor_min": 50, "anchor_max": 150}
    config = {"min": 0, "max": 999, "anchor_min": 20, "anchor_max": 80}
    rule = bme_reference_value
    assert [rule(s, lo=0.0, hi=1.0, config=config) for s in (0.0, 0.25, 0.5, 1.0, 2.0, -1.0)] == [20, 35, 50, 80, 80, 20]
    assert rule(0.3, lo=0.3, hi=0.3, config={}) == 100  # every reference scored the same: the midpoint
    assert rule(1.0, lo=0.0, hi=1.0, config={}) == 150  # config without anchors (older studies): defaults
    # the old map onto 1..199 showed 1 for the lowest-scored reference; its half was 0
    assert rule(0.0, lo=0.0, hi=1.0, config={}) / 2 >= 25


@pytest.mark.parametrize(("text", "expected"), [
    ("the link lacks hitId", "The link lacks hitId."),
    ("this study takes part through Mechanical Turk", "This study takes part through Mechanical Turk."),
    ("already a sentence.", "Already a sentence."),
])
def test_sentences_only_touch_the_first_letter(text, expected):
    assert sentence(text) == expected


def test_a_bad_mturk_link_names_the_parameter_as_spelled(client, make_study):
    study = make_study("likert", platform="mturk")
    response = client.get(f"/r/{study.slug}/?workerId=A1&assignmentId=A1&turkSubmitTo=https://www.mturk.com")
    page = response.content.decode()
    assert response.status_code == 400 and "The link lacks hitId." in page and "hitid" not in visible_text(page)


def test_a_bad_invitation_keeps_its_capitals(client, make_study):
    study = make_study("likert", platform="invite")
    response = client.get(f"/r/{study.slug}/?invite=NotAToken")
    page = response.content.decode()
    assert response.status_code == 400
    assert "This invitation link is not valid (it may have been cut or changed)." in page


def test_services_refuse_a_bad_reference_range_for_a_new_study(user):
    experiment = services.experiment_create(owner=user, title="E")
    with pytest.raises(ValidationError, match="reference_value"):
        services.study_create(experiment=experiment, title="R", design="rme",
                              design_config={"reference_value": 600, "min": 0, "max": 500})
