"""The server's own messages on rater pages follow the study's language: the entry page's platform
identity problems (Prolific, MTurk, invite links), the span annotation's refusals (page and rater API),
and the practice's rules and notes (what a practice item says, the expected answer in the feedback, the
fail message of the rater API). Each is rendered for an Arabic study (right to left) and a Spanish one."""
import json
import re

import pytest
from django.test import Client
from django.utils import translation

from studies.designs.kinds.spans import spans_problem
from studies.models import Study
from studies.rating import answers as answering
from studies.rating import form_tokens
from studies.rating.check_rules import rules_text
from tests.factories import prolific_id
from tests.studies.test_onboarding_views import MTURK, consented, post_item, practice_study
from tests.studies.test_span_kind import span_study, start

pytestmark = pytest.mark.django_db


def html_lang_dir(page) -> tuple[str, str]:
    match = re.search(r'<html lang="([^"]+)" dir="([^"]+)">', page.content.decode())
    return match.group(1), match.group(2)


def expected_cells(html: str) -> list[str]:
    return re.findall(r'data-testid="practice-expected">([^<]*)<', html)


def in_language(study: Study, language: str) -> Study:
    Study.objects.filter(pk=study.pk).update(language=language)
    study.refresh_from_db()
    return study


@pytest.mark.parametrize(("platform", "query", "arabic", "english"), [
    ("prolific", "PROLIFIC_PID=xyz&SESSION_ID=" + "a" * 24,
     "معامل الرابط PROLIFIC_PID يجب أن يتكون من 24 رقمًا ست عشريًا", "24 hexadecimal digits"),
    ("prolific", "PROLIFIC_PID=%20%20&SESSION_ID=" + "a" * 24, "معامل الرابط PROLIFIC_PID فارغ", "is blank"),
    ("prolific", "", "هذا الرابط لا يحدّد هويتك", "does not say who you are"),
    ("mturk", "workerId=A1&assignmentId=A%001&hitId=H1&turkSubmitTo=https://www.mturk.com",
     "معامل الرابط assignmentId يحتوي على أحرف تحكم", "control characters"),
    ("mturk", "workerId=A1&assignmentId=A1&hitId=H1", "ينقص الرابطَ المعاملُ turkSubmitTo", "lacks"),
    ("mturk", "PROLIFIC_PID=" + "a" * 24, "تجري هذه الدراسة عبر Mechanical Turk", "takes part through"),
    ("invite", "invite=%00", "معامل الرابط invite يحتوي على أحرف تحكم", "control characters"),
])
def test_identity_problem_on_the_entry_page_is_in_the_study_language(make_study, platform, query, arabic, english):
    study = in_language(make_study("likert", platform=platform), "ar")
    page = Client().get(f"/r/{study.slug}/?{query}")
    text = page.content.decode()
    assert page.status_code == 400 and html_lang_dir(page) == ("ar", "rtl")
    assert arabic in text and english not in text


def test_identity_problem_in_spanish_and_english_for_an_english_study(make_study):
    study = in_language(make_study("likert", platform="prolific"), "es")
    page = Client().get(f"/r/{study.slug}/?PROLIFIC_PID=%20&SESSION_ID={prolific_id('s')}")
    assert "El parámetro PROLIFIC_PID del enlace está vacío." in page.content.decode()
    english = make_study("likert", platform="prolific")
    page = Client().get(f"/r/{english.slug}/?PROLIFIC_PID=%20&SESSION_ID={prolific_id('s')}")
    assert "The link parameter PROLIFIC_PID is blank." in page.content.decode()


def test_identity_problem_in_the_rater_api_is_in_the_study_language(make_study):
    from tests.problems import problem_fields

    study = in_language(make_study("likert", platform="prolific"), "ar")
    answer = Client().post(f"/api/rate/studies/{study.rater_key}/sessions/", json.dumps(
        {"link": {"PROLIFIC_PID": "xyz", "SESSION_ID": prolific_id("s")}, "consent": True}),
        content_type="application/json")
    assert answer.status_code == 400
    assert "24 رقمًا ست عشريًا" in problem_fields(answer)["link.PROLIFIC_PID"][0]


def test_span_problems_are_worded_in_the_active_language():
    labels = ["rude", "wrong"]
    with translation.override("ar"):
        nothing = spans_problem(None, {None: "Hello there"}, labels, overlap=False, turns=False)[1]
        assert nothing and "mark the spans" not in nothing  # the script's own words, translated already
        out_of_range = spans_problem([{"start": 0, "end": 40, "label": "rude"}], {None: "Hello there"}, labels,
                                     overlap=False, turns=False)[1]
        assert out_of_range.startswith("المقطع 1: [0, 40) خارج النص (في النص 11 حرفًا")
        label = spans_problem([{"start": 0, "end": 5, "label": "nice"}], {None: "Hello there"}, labels,
                              overlap=False, turns=False)[1]
        assert label == "المقطع 1: التسمية «nice» ليست من التسميات (rude, wrong)"
    with translation.override("es"):
        twice = spans_problem([{"start": 0, "end": 5, "label": "rude"}] * 2, {None: "Hello there"}, labels,
                              overlap=True, turns=False)[1]
        assert twice == "el fragmento [0, 5) «rude» aparece dos veces"
    assert spans_problem([], {None: "x"}, labels, overlap=False, turns=False) == ([], None)
    assert "is out of range" in spans_problem([{"start": 0, "end": 40, "label": "rude"}], {None: "Hello"}, labels,
                                              overlap=False, turns=False)[1]


def test_span_refusal_on_the_rater_page_is_in_arabic_right_to_left(client, user):
    study = in_language(span_study(user), "ar")
    assignment = start(study, "arabic")
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.order_by("position").first()
    url = f"/r/a/{assignment.token}/items/{slot.position}/"
    letters = "ABCDEFGH"[:len(slot.response_order)]
    post = {"form_token": form_tokens.form_token(assignment.token, "item"),
            **{f"r{x}-readability": "4" for x in letters},
            **{f"r{x}-errors": json.dumps([{"start": 0, "end": 4, "label": "rude"}]) for x in letters}}
    refused = client.post(url, post)
    text = refused.content.decode()
    assert refused.status_code == 400 and html_lang_dir(refused) == ("ar", "rtl")
    assert "التسمية «rude» ليست من التسميات" in text and "is not one of the labels" not in text


def test_span_refusal_in_the_rater_api_is_in_spanish(user):
    from tests.api.rater_helpers import base, enter, rater_client
    from tests.problems import problem_fields

    study = in_language(span_study(user), "es")
    study.criteria.filter(name="readability").delete()
    session = enter(study).json()
    client = rater_client(session)
    item = client.get(base(session) + "items/0/").json()
    names = [f["name"] for f in item["fields"] if f["criterion"] == "errors"]
    refused = client.put(base(session) + "items/0/answer/",
                         {"answers": {n: [{"start": 0, "end": 3, "label": "rude"}] for n in names}}, format="json")
    assert refused.status_code == 400
    assert all("la etiqueta «rude» no es una de las etiquetas" in " ".join(problem_fields(refused)[f"answers.{n}"])
               for n in names)


def test_rules_text_in_arabic_and_english():
    rules = [{"response": 2, "max": 2}, {"greater": 1, "than": 2}, {"best": 1}, {"response": 1, "min": 1, "max": 3}]
    assert rules_text(rules) == ["Response B: at most 2", "Response A above Response B", "Response A ranked best",
                                 "Response A: from 1 to 3"]
    with translation.override("ar"):
        assert rules_text(rules, noun="الإجابة") == [
            "الإجابة B: 2 على الأكثر", "الإجابة A أعلى من الإجابة B", "الإجابة A في مرتبة الأفضل", "الإجابة A: من 1 إلى 3"]


def test_practice_note_rules_and_feedback_in_arabic(make_study):
    """The practice item's note, the expected answer in the feedback (at most, above), in Arabic, right to left."""
    study = in_language(practice_study(make_study), "ar")
    client = Client()
    entry = consented(client, client.get(f"/r/{study.slug}/?" + MTURK.format(w="w1", a="A1"), follow=True))
    text = entry.content.decode()
    assert html_lang_dir(entry) == ("ar", "rtl")
    assert "التدريب 1 من 2: بعد أن تجيب" in text and "after you answer" not in text
    feedback, _action, _data = post_item(client, entry, study, [5, 5])
    text = feedback.content.decode()
    assert feedback.status_code == 200 and html_lang_dir(feedback) == ("ar", "rtl")
    assert expected_cells(text) == ["أي إجابة", "2 على الأكثر"] * 2  # "any answer" for A, per question
    item2 = client.get(re.search(r'href="([^"]+)"[^>]*data-testid="practice-next"', text).group(1))
    feedback2, _action, _data = post_item(client, item2, study, [1, 5])
    text = feedback2.content.decode()
    assert "الإجابة A أعلى من الإجابة B" in expected_cells(text)


def test_practice_consent_reminder_in_spanish(make_study):
    study = in_language(practice_study(make_study), "es")
    client = Client()
    client.get(f"/r/{study.slug}/?" + MTURK.format(w="w2", a="A2"))
    from studies.models import PracticeAttempt
    attempt = PracticeAttempt.objects.get()
    page = client.get(f"/r/p/{attempt.token}/items/0/", follow=True)
    assert "Lea primero las instrucciones y marque la casilla" in page.content.decode()


def test_practice_fail_message_of_the_rater_api_in_arabic(make_study):
    from studies.api.rater_practice import outcome
    from studies.models import PracticeAttempt

    study = practice_study(make_study)
    attempt = PracticeAttempt(study=study, platform="mturk", status=PracticeAttempt.Status.FAILED, agreed=0, shown=2,
                              pass_mark=2)
    with translation.override("ar"):
        message = outcome(attempt)["message"]
    assert message.startswith("اتفقت إجاباتك مع 0 من 2 من عناصر التدريب") and "Mechanical Turk" in message
    assert outcome(attempt)["message"].startswith("You agreed with 0 of 2 practice items")
