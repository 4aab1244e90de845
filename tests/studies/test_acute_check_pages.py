"""The ACUTE-Eval check pages agree with each other: the builder's preview offers a pair's expected answer
as a gold check pair (as the checks page takes it) and says why practice is not offered; the rule rows name
the two conversations A and B (never "Response A … J"); the counts say what a rater is actually shown."""
import pytest
from django.test import Client

from studies.authoring import builder, checks
from studies.authoring import services as authoring
from studies.rating.check_rules import rules_text
from tests.studies.acute_helpers import acute_study
from tests.studies.test_acute_checks import DEGENERATE, GOOD

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(user):
    client = Client()
    client.force_login(user)
    return client


def builder_rows(study):
    """The study's own questions as the builder posts them."""
    data = {}
    for n, c in enumerate(study.criteria.order_by("position")):
        data.update({f"c-{n}-name": c.name, f"c-{n}-question": c.question, f"c-{n}-kind": "scale"})
    return data


def test_acute_builder_preview_offers_a_gold_check_pair_not_a_refusal(researcher, user):
    study = acute_study(user, {"a": 2, "b": 2}, publish=False)
    html = researcher.post(f"/studies/{study.slug}/builder/preview/", builder_rows(study)).content.decode()
    assert "not available for dialogue-unit studies" not in html
    assert 'data-testid="expected-refusal"' not in html
    assert '<option value="gold">gold check item</option>' in html
    assert '<option value="practice">' not in html
    assert "Practice items are not available for comparisons of whole conversations yet; check pairs are" in html


def test_acute_expected_offer_matches_the_checks_service(user):
    study = acute_study(user, {"a": 2, "b": 2}, publish=False)
    offer = builder.expected_offer(study)
    assert list(offer["expected_uses"]) == ["gold"] and offer["expected_refusal"] == ""
    checks.check_item_create(study=study, kind="gold", conversations=[GOOD, DEGENERATE],
                             rules=[{"greater": 1, "than": 2}])  # the checks service takes it too
    assert study.items.filter(check_kind="gold").count() == 1


def test_acute_expected_practice_is_refused_naming_what_is_offered(user):
    study = acute_study(user, {"a": 2, "b": 2}, publish=False)
    item = study.items.filter(check_kind="").order_by("position").first()
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as refused:
        builder.expected_answer_save(study=study, item=item, post={}, use="practice")
    assert refused.value.message_dict == {"use": ["choose one of: gold check item"]}
    assert not study.practice_items.exists()


def test_acute_dialogue_likert_preview_offers_a_whole_dialogue_check(researcher, user, corpus):
    """A Likert study of whole dialogues takes a known bad dialogue as a check, and practice dialogues."""
    experiment = authoring.experiment_create(owner=user, title="Dialogues")
    study = authoring.study_create(experiment=experiment, title="Whole", design="likert", unit="dialogue")
    authoring.study_items_build(study=study, corpus=corpus)
    offer = builder.expected_offer(study)
    assert set(offer["expected_uses"]) == {"gold", "practice"} and offer["expected_refusal"] == ""


def test_acute_rule_rows_name_conversation_a_and_b_only(researcher, user):
    study = acute_study(user, {"a": 2, "b": 2}, publish=False)
    html = researcher.get(f"/studies/{study.slug}/checks/").content.decode()
    row = html[html.index('data-testid="rule-row"'):]
    row = row[:row.index("</div>")]
    assert "<label>Conversation <select" in row and "than conversation <select" in row
    assert ">A</option>" in row and ">B</option>" in row and ">C</option>" not in row and ">J</option>" not in row
    assert "Response" not in row
    assert "Conversation A, one turn per line" in html and "Conversation B, one turn per line" in html


def test_acute_check_pair_expected_answer_names_conversations(researcher, user):
    study = acute_study(user, {"a": 2, "b": 2}, publish=False)
    checks.check_item_create(study=study, kind="gold", conversations=[GOOD, DEGENERATE],
                             rules=[{"greater": 1, "than": 2}])
    html = researcher.get(f"/studies/{study.slug}/checks/").content.decode()
    assert "<li>Conversation A above Conversation B</li>" in html
    assert rules_text([{"greater": 2, "than": 1}]) == ["Response B above Response A"]  # responses unchanged


def test_acute_check_counts_are_what_a_rater_is_shown(researcher, user):
    study = acute_study(user, {"a": 2, "b": 2}, publish=False, items_per_assignment=20)
    regular = study.items.filter(check_kind="").count()
    assert regular == 2 and study.items_per_assignment == 20
    checks.check_item_create(study=study, kind="gold", conversations=[GOOD, DEGENERATE],
                             rules=[{"greater": 1, "than": 2}])
    html = researcher.get(f"/studies/{study.slug}/checks/").content.decode()
    line = html[html.index('data-testid="checks-per-rater"'):]
    line = " ".join(line[:line.index("</li>")].split())
    assert "1 check per rater at random positions (set to 2; there is only 1)" in line
    assert "on top of the 2 items (pairs of conversations) each rater judges (the study has 2)" in line
    assert "20 items" not in line and "2 check(s)" not in line


def test_acute_check_counts_without_check_items_say_none_is_shown(researcher, user):
    study = acute_study(user, {"a": 2, "b": 2}, publish=False)
    html = researcher.get(f"/studies/{study.slug}/checks/").content.decode()
    line = html[html.index('data-testid="checks-per-rater"'):]
    assert "no check item yet, so no checks shown" in " ".join(line[:line.index("</li>")].split())


def _rated_with_one_careless_rater(user):
    """Two raters: the careful one picks the good side of the check pair, the careless one the degenerate
    side (flagged); on the real pairs the careful one always picks system a, the careless one system b."""
    from studies.models import Study
    from tests.studies.acute_helpers import rate_all, system_of

    study = acute_study(user, {"a": 3, "b": 3}, publish=False, raters_per_item=2)
    item = checks.check_item_create(study=study, kind="gold", conversations=[GOOD, DEGENERATE],
                                    rules=[{"greater": 1, "than": 2}])
    good = item.check_rules[0]["greater"]
    checks.study_checks_configure(study=study, per_assignment=1, min_pass_rate=1)
    authoring.study_publish(study=study)

    def picks(careful: bool):
        def choose(slot, criterion):
            left, right = slot.response_order
            if slot.item_id == item.pk:
                return "left" if (left == good) == careful else "right"
            return "left" if (system_of([left])[left] == "a") == careful else "right"
        return choose

    rate_all(study, "careful", picks(True), seed=1)
    rate_all(study, "careless", picks(False), seed=2)
    return Study.objects.get(pk=study.pk)


def test_acute_report_says_win_rates_include_raters_who_failed_the_check_pairs(researcher, user):
    from studies.designs.acute_report import acute_report
    from studies.models import Study

    study = _rated_with_one_careless_rater(user)
    [kept] = acute_report(Study.objects.filter(pk=study.pk), resamples=20)
    [left_out] = acute_report(Study.objects.filter(pk=study.pk), exclude_flagged=True, resamples=20)
    assert (kept["failed_included"], kept["excluded_raters"]) == (1, 0)
    assert (left_out["failed_included"], left_out["excluded_raters"]) == (0, 1)
    # the careless rater reverses every real pair: kept, a wins half; left out (as ParlAI does), a wins all
    assert kept["criteria"][0]["win_rates"][0]["win_rate_a"] == 0.5
    assert left_out["criteria"][0]["win_rates"][0]["win_rate_a"] == 1.0
    html = researcher.get(f"/studies/{study.slug}/report/").content.decode()
    note = html[html.index('data-testid="acute-flagged-note"'):]
    note = " ".join(note[:note.index("</p>")].split())
    assert "These win rates include 1 rater who failed the check pairs" in note
    assert "ParlAI's ACUTE-Eval analysis leaves out workers who failed onboarding by default" in note
    assert 'href="?exclude_flagged=1"' in note
    html = researcher.get(f"/studies/{study.slug}/report/?exclude_flagged=1").content.decode()
    note = html[html.index('data-testid="acute-flagged-note"'):]
    assert "Without the 1 rater who failed the check pairs, as ParlAI" in " ".join(note[:note.index("</p>")].split())


def test_acute_report_api_counts_the_failed_raters_in_the_win_rates(api, user):
    study = _rated_with_one_careless_rater(user)
    [kept] = api.get(f"/api/studies/{study.slug}/report/").json()["acute"]
    [left_out] = api.get(f"/api/studies/{study.slug}/report/?exclude_flagged=1").json()["acute"]
    assert (kept["failed_included"], kept["excluded_raters"]) == (1, 0)
    assert (left_out["failed_included"], left_out["excluded_raters"]) == (0, 1)
