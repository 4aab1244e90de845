"""ACUTE-Eval's quality control (Li, Weston and Roller 2019): check pairs with a known answer, authored
through the check machinery (the checks page, the API, a CSV, the builder's expected answers), shown to
raters like any pair, scored at submit, a failing rater flagged with the evidence, and left out of every
result while the export marks them."""
import csv
import io

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from studies.authoring import builder, checks
from studies.authoring import services as authoring
from studies.designs.acute_report import acute_report
from studies.models import Comparison, Conversation, Study, StudyItem, StudyItemConversation
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.reports import exporting, rater_evidence
from tests.problems import problem_fields
from tests.studies.acute_helpers import acute_study, rate_all, system_of

pytestmark = pytest.mark.django_db

GOOD = "user: hi, what do you do for fun?\nbot: I climb on weekends. Do you like the outdoors?\nuser: yes, hiking\n" \
       "bot: Nice! Which trail did you walk last?"
DEGENERATE = "user: hi, what do you do for fun?\nbot: i dont know\nuser: any hobbies?\nbot: i dont know"


def check_pair(study, *, kind="gold"):
    """A known-answer pair: conversation 1's bot is engaging, conversation 2's repeats itself."""
    return checks.check_item_create(study=study, kind=kind, conversations=[GOOD, DEGENERATE],
                                    rules=[{"greater": 1, "than": 2}])


def test_check_pairs_authored_by_service_api_csv_and_builder_and_bad_input_names_the_field(user, other_user, api):
    study = acute_study(user, {"a": 2, "b": 2}, publish=False)
    item = check_pair(study)
    shown = list(StudyItemConversation.objects.filter(item=item).order_by("position"))
    assert [s.speaker for s in shown] == ["bot", "bot"]  # the system's speaker, as for the items
    assert item.check_rules == [{"greater": shown[0].conversation_id, "than": shown[1].conversation_id}]
    assert Conversation.objects.get(pk=shown[1].conversation_id).turns[1] == {"speaker": "bot", "text": "i dont know"}

    before = StudyItem.objects.count(), Conversation.objects.count()
    for conversations, rules, field in (([GOOD], [{"greater": 1, "than": 2}], "conversations"),
                                        ([{"turns": GOOD, "speaker": "nobody"}, DEGENERATE], [{"greater": 1, "than": 2}],
                                         "conversations[0].speaker"),
                                        ([GOOD, DEGENERATE], [{"greater": 3, "than": 1}], "rules[0].greater")):
        with pytest.raises(ValidationError) as refused:
            checks.check_item_create(study=study, kind="gold", conversations=conversations, rules=rules)
        assert field in refused.value.message_dict
    assert "conversation number from 1 to 2" in refused.value.message_dict[field][0]
    assert (StudyItem.objects.count(), Conversation.objects.count()) == before  # nothing written

    base = f"/api/studies/{study.slug}/checks/"
    made = api.post(base + "create/", {"kind": "instructed", "rules": [{"greater": 2, "than": 1}], "conversations": [
        {"turns": [{"speaker": "user", "text": "hi"}, {"speaker": "bot", "text": "choose the other speaker"}]},
        {"turns": "user: hi\nbot: hello there", "speaker": "bot"}]}, format="json")
    assert made.status_code == 201 and made.json()["rules"] == [{"greater": 2, "than": 1}]
    assert [c["speaker"] for c in made.json()["conversations"]] == ["bot", "bot"]
    bad = api.post(base + "create/", {"kind": "gold", "rules": [{"greater": 1, "than": 2}]}, format="json")
    assert bad.status_code == 400 and "conversations" in problem_fields(bad)

    upload = io.BytesIO(("kind,conversation_1,conversation_2,speaker_1,speaker_2,rules\n"
                         f'gold,"{DEGENERATE}","{GOOD}",bot,bot,"[{{""greater"": 2, ""than"": 1}}]"\n').encode())
    assert checks.check_items_import(study=study, stream=upload) == 1

    regular = study.items.filter(check_kind="").order_by("position").first()
    order = list(StudyItemConversation.objects.filter(item=regular).order_by("position")
                 .values_list("conversation_id", flat=True))
    post = {f"choice-{c}": "right" for c in study.criteria.values_list("name", flat=True)}
    post.update({f"reason-{c}": "more engaging" for c in study.criteria.values_list("name", flat=True)})
    post["expected_test"] = [f"{c}|" for c in study.criteria.values_list("name", flat=True)]
    gold, new = builder.expected_answer_save(study=study, item=regular, post=post, use="gold")
    again, repeated = builder.expected_answer_save(study=study, item=regular, post=post, use="gold")
    assert new and not repeated and again.pk == gold.pk
    copied = [c["turns"] for c in checks.study_check_items(study) if c["id"] == gold.pk][0]
    assert copied == Conversation.objects.get(pk=order[0]).turns  # the pair as the preview shows it
    assert gold.check_rules[0]["greater"] != gold.check_rules[0]["than"]
    assert study.items.filter(check_kind__gt="").count() == 4

    client = Client()
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/checks/").content.decode()
    assert page.count('data-testid="check-conversation"') == 8 and 'name="conversation_2"' in page
    assert api.post(base + "create/", {}, format="json").status_code == 400
    client.force_login(other_user)
    assert client.get(f"/studies/{study.slug}/checks/").status_code == 404  # another researcher's study


def test_failing_rater_is_flagged_with_evidence_and_check_pairs_stay_out_of_results_but_marked_in_exports(user):
    study = acute_study(user, {"a": 3, "b": 3}, publish=False, raters_per_item=2)
    item = check_pair(study)
    good, bad = item.check_rules[0]["greater"], item.check_rules[0]["than"]
    checks.study_checks_configure(study=study, per_assignment=1, min_pass_rate=1)
    authoring.study_publish(study=study)

    def picks(good_side_wins: bool):
        def choose(slot, criterion):
            left, right = slot.response_order
            if slot.item_id == item.pk:  # the check pair: the good conversation or the degenerate one
                return "left" if (left == good) == good_side_wins else "right"
            return "left" if system_of([left])[left] == "a" else "right"
        return choose

    passer = rate_all(study, "careful", picks(True), seed=1)
    failer = rate_all(study, "careless", picks(False), seed=2)
    passer.refresh_from_db()
    failer.refresh_from_db()
    assert (passer.checks_shown, passer.checks_passed, passer.checks_failed) == (1, 1, False)
    assert (failer.checks_shown, failer.checks_passed, failer.checks_failed) == (1, 0, True)

    evidence = rater_evidence.rater_evidence(study, failer.rater_id)
    assert [(c["item"], c["passed"]) for c in evidence["checks"]] == [(item.pk, False)]
    assert next(f for f in evidence["flags"] if f.key == "checks").raised
    client = Client()
    client.force_login(user)
    review = client.get(f"/studies/{study.slug}/review/").content.decode()
    assert evidence["name"] in review

    [entry] = acute_report(Study.objects.filter(pk=study.pk), resamples=20)
    regular = Comparison.objects.filter(item__study=study, item__check_kind="").count()
    assert entry["n"] == regular and Comparison.objects.filter(item=item).count() == 2 * 4
    assert entry["checks"] == {"pairs": 1, "judgments": 8, "scored_raters": 2, "failed_raters": 1}
    for criterion in entry["criteria"]:  # the check pair's "attention-check" system is no system here
        assert {r["system_a"] for r in criterion["win_rates"]} | {r["system_b"] for r in criterion["win_rates"]} \
            == {"a", "b"}
        assert criterion["win_rates"][0]["win_rate_a"] == 1.0  # both raters chose a on every real pair
    [flagged] = acute_report(Study.objects.filter(pk=study.pk), exclude_flagged=True, resamples=20)
    assert flagged["excluded_raters"] == 1 and flagged["n"] == regular // 2

    html = client.get(f"/studies/{study.slug}/report/").content.decode()
    assert 'data-testid="acute-check-pairs"' in html and "1 check pair" in html

    rows = list(csv.DictReader(io.StringIO("".join(exporting.export_lines(study.experiment.studies.all(), "csv")))))
    marked = [r for r in rows if r["check"]]
    assert len(rows) == regular + 8 and len(marked) == 8 and {r["check"] for r in marked} == {"gold"}
    names = dict(Conversation.objects.filter(pk__in=[good, bad]).values_list("external_id", "pk"))
    for row in marked:
        mine = row["rater"] == evidence["name"]
        chose_good = names.get(row["winner_conversation"]) == good
        assert row["check_passed"] == str(chose_good) and chose_good != mine
        assert row["failed_checks"] == str(mine)
    assert all(r["check_passed"] == "" for r in rows if not r["check"])


def test_a_check_pair_on_the_raters_page_looks_like_any_pair(user):
    study = acute_study(user, {"a": 2, "b": 2}, publish=False, raters_per_item=1)
    item = check_pair(study)
    checks.study_checks_configure(study=study, positions="1")
    authoring.study_publish(study=study)
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
        platform="invite", external_id="looker"))
    answering.assignment_consent(assignment=assignment)
    first = assignment.assignment_items.order_by("position").first()
    assert first.item_id == item.pk
    html = Client().get(f"/r/a/{assignment.token}/items/0/").content.decode()
    regular = Client().get(f"/r/a/{assignment.token}/items/1/").content.decode()
    assert html.count('data-testid="acute-left"') == regular.count('data-testid="acute-left"') == 1
    assert html.count('data-judged="1"') == 4  # the bot's two turns in each conversation, marked as usual
    assert "I climb on weekends" in html and "i dont know" in html and "Speaker 1" in html and "Speaker 2" in html
    for text in ("check", "gold", "attention", "known answer"):
        assert html.lower().count(text) == regular.lower().count(text)  # nothing tells it apart
