"""Rater pages in the study's language (studies.rating.language): the study's language on its pages and
its rater API's errors, the rater's browser language where the study allows it, only for that request
(researcher pages and the next request stay English), numbers written for the language; the language
setting belongs to the study's owner (builder form and API)."""
import json
import re
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import translation
from rest_framework.test import APIClient

from studies.models import Study
from studies.rating import form_tokens
from studies.rating.language import browser_language, study_rater_language
from tests.api.rater_helpers import base, enter, rater_client
from tests.factories import prolific_id

pytestmark = pytest.mark.django_db


def open_start(client, study, worker="w1", **headers):
    response = client.get(f"/r/{study.slug}/?PROLIFIC_PID={prolific_id(worker)}&SESSION_ID={prolific_id(worker + 's')}",
                          **headers)
    assert response.status_code == 302, response.content.decode()[:300]
    return response["Location"], client.get(response["Location"], **headers)


def begin(client, study, worker="w1", **headers):
    start, page = open_start(client, study, worker, **headers)
    token = start.strip("/").split("/")[-1]
    form_token = re.search(r'name="form_token" value="([0-9a-f]+)"', page.content.decode()).group(1)
    client.post(start, {"agree": "yes", "form_token": form_token}, **headers)
    return token


def html_lang_dir(page) -> tuple[str, str]:
    match = re.search(r'<html lang="([^"]+)" dir="([^"]+)">', page.content.decode())
    return match.group(1), match.group(2)


@pytest.fixture
def arabic_study(make_study):
    study = make_study("likert", platform="prolific")
    Study.objects.filter(pk=study.pk).update(language="ar")
    study.refresh_from_db()
    return study


def test_rtl_arabic_study_start_page_is_arabic_right_to_left(arabic_study):
    _start, page = open_start(Client(), arabic_study)
    text = page.content.decode()
    assert html_lang_dir(page) == ("ar", "rtl")
    assert page["Content-Language"] == "ar"
    assert "قبل أن تبدأ" in text and "Before you start" not in text
    assert "قرأت التعليمات وأوافق على المشاركة." in text


def test_language_english_study_stays_english_left_to_right(make_study):
    _start, page = open_start(Client(), make_study("likert", platform="prolific"))
    assert html_lang_dir(page) == ("en", "ltr")
    assert "Before you start" in page.content.decode()


def test_translation_spanish_item_page_chrome(make_study):
    study = make_study("likert", platform="prolific")
    Study.objects.filter(pk=study.pk).update(language="es")
    client = Client()
    token = begin(client, study)
    page = client.get(f"/r/a/{token}/items/0/")
    text = page.content.decode()
    assert html_lang_dir(page) == ("es", "ltr")
    assert ">Siguiente</button>" in text
    assert "Teclado: haga clic o vaya con Tab a una fila" in text
    assert "Next</button>" not in text


def test_translation_server_side_answer_errors_in_the_study_language(make_study):
    study = make_study("likert", platform="prolific")
    Study.objects.filter(pk=study.pk).update(language="es")
    client = Client()
    token = begin(client, study)
    response = client.post(f"/r/a/{token}/items/0/", {"form_token": form_tokens.form_token(token, "item")})
    text = response.content.decode()
    assert "elija un punto para esta respuesta" in text
    assert "Algunas respuestas necesitan revisión" in text


def test_translation_script_texts_rendered_into_the_page_in_its_language(arabic_study):
    client = Client()
    token = begin(client, arabic_study)
    text = client.get(f"/r/a/{token}/items/0/").content.decode()
    strings = re.search(r'<script id="rater-strings" type="application/json">(.*?)</script>', text).group(1)
    served = json.loads(strings)
    assert served["Saved"] == "تم الحفظ"
    assert served["Saving…"] == "جارٍ الحفظ…"


def test_language_is_active_for_the_rater_request_only(arabic_study, user):
    client = Client()
    open_start(client, arabic_study)
    assert translation.get_language() in ("en-us", "en")
    client.force_login(user)
    researcher = client.get(f"/studies/{arabic_study.slug}/")
    assert researcher.status_code == 200
    assert '<html lang="ar"' not in researcher.content.decode()
    assert "Content-Language" not in researcher or researcher["Content-Language"] != "ar"


def test_language_missing_task_page_uses_english_without_a_study():
    page = Client().get("/r/a/" + "0" * 32 + "/")
    assert page.status_code == 404
    assert html_lang_dir(page)[0] == "en"


def test_language_refusal_page_in_the_study_language(make_study):
    study = make_study("likert", platform="prolific")
    Study.objects.filter(pk=study.pk).update(language="es", status=Study.Status.CLOSED)
    page = Client().get(f"/r/{study.slug}/?PROLIFIC_PID={prolific_id('w')}&SESSION_ID={prolific_id('s')}")
    assert html_lang_dir(page)[0] == "es"
    assert page["Content-Language"] == "es"
    text = page.content.decode()
    assert "Gracias por su interés" in text and "este estudio está cerrado" in text
    assert "Thank you" not in text and "this study" not in text


def test_language_unknown_study_page_stays_english():
    page = Client().get(f"/r/no-such-study/?PROLIFIC_PID={prolific_id('w')}&SESSION_ID={prolific_id('s')}")
    assert page.status_code == 404
    assert html_lang_dir(page) == ("en", "ltr")
    assert "Task not found" in page.content.decode()


def test_language_numbers_formatted_for_the_language_on_the_pay_line(make_study):
    study = make_study("likert", platform="prolific")
    Study.objects.filter(pk=study.pk).update(language="es", reward=Decimal("1.50"), estimated_minutes=10)
    _start, page = open_start(Client(), study)
    pay = re.search(r'data-testid="rater-pay">(.*?)</p>', page.content.decode()).group(1)
    assert "1,50" in pay and "1.50" not in pay
    assert "Recibirá" in pay and "10 minutos" in pay


# --- the browser's language, where the study allows it -------------------------------------------------

def test_language_accept_language_fallback_chooses_a_shipped_language(arabic_study):
    Study.objects.filter(pk=arabic_study.pk).update(language_from_browser=True)
    _start, page = open_start(Client(), arabic_study, HTTP_ACCEPT_LANGUAGE="es-MX,es;q=0.9,en;q=0.5")
    assert html_lang_dir(page) == ("es", "ltr")
    assert "Accept-Language" in page["Vary"]


def test_language_accept_language_without_a_shipped_language_keeps_the_study_language(arabic_study):
    Study.objects.filter(pk=arabic_study.pk).update(language_from_browser=True)
    _start, page = open_start(Client(), arabic_study, HTTP_ACCEPT_LANGUAGE="fr-FR,fr;q=0.9")
    assert html_lang_dir(page) == ("ar", "rtl")


def test_language_accept_language_ignored_unless_the_study_allows_it(arabic_study):
    _start, page = open_start(Client(), arabic_study, HTTP_ACCEPT_LANGUAGE="es")
    assert html_lang_dir(page) == ("ar", "rtl")


def test_language_browser_language_weights_and_study_choice():
    assert browser_language("fr;q=0.9, ar;q=0.8, es;q=0.85") == "es"
    assert browser_language("de-DE, *;q=0.1") is None
    assert browser_language("") is None
    study = Study(language="es", language_from_browser=False)
    assert study_rater_language(study, "ar") == "es"
    study.language_from_browser = True
    assert study_rater_language(study, "ar-EG") == "ar"
    assert study_rater_language(Study(language="xx"), "") == "en"  # a language no longer shipped
    assert study_rater_language(None, "ar") == "en"


# --- the rater API ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("language", "title", "detail"), [
    ("ar", "غير موجود", "لا تحتوي هذه المهمة على عنصر في الموضع 99"),
    ("es", "No encontrado", "esta tarea no tiene ningún elemento en la posición 99"),
    ("en", "Not found", "this assignment has no item at position 99"),
])
def test_language_rater_api_error_in_the_study_language(make_study, language, title, detail):
    study = make_study("likert", platform="invite")
    Study.objects.filter(pk=study.pk).update(language=language)
    session = enter(study).json()
    response = rater_client(session).get(base(session) + "items/99/")
    assert response.status_code == 404
    body = response.json()
    assert (body["title"], body["detail"]) == (title, detail)
    assert response["Content-Language"] == language


def test_language_rater_api_validation_error_in_the_study_language(make_study):
    study = make_study("likert", platform="invite")
    Study.objects.filter(pk=study.pk).update(language="es")
    session = enter(study).json()
    response = rater_client(session).put(base(session) + "items/0/answer/", {"answers": {}}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["title"] == "Datos no válidos"
    assert "elija un punto para esta respuesta" in body["detail"]


def test_language_researcher_api_errors_stay_english(api, make_study):
    study = make_study("likert")
    Study.objects.filter(pk=study.pk).update(language="ar")
    response = api.get("/api/studies/no-such-study/", HTTP_ACCEPT_LANGUAGE="ar")
    assert response.status_code == 404
    assert response.json()["title"] == "Not found"


# --- the setting: the owner's ------------------------------------------------------------------------------

def test_language_set_through_the_api_settings_by_its_owner(api, make_study):
    study = make_study("likert", publish=False)
    response = api.patch(f"/api/studies/{study.slug}/settings/", {"language": "ar", "language_from_browser": True},
                         format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["study"]["language"], response.json()["study"]["language_from_browser"]) == ("ar", True)
    study.refresh_from_db()
    assert (study.language, study.language_from_browser) == ("ar", True)


def test_language_unknown_code_is_refused_naming_the_field(api, make_study):
    study = make_study("likert", publish=False)
    response = api.patch(f"/api/studies/{study.slug}/settings/", {"language": "xx"}, format="json")
    assert response.status_code == 400
    assert any(e["field"] == "language" for e in response.json()["errors"])
    study.refresh_from_db()
    assert study.language == "en"


def test_language_cross_researcher_cannot_change_or_see_it(make_study, other_user):
    from tests.factories import token_for

    study = make_study("likert", publish=False)
    intruder = APIClient()
    intruder.credentials(HTTP_AUTHORIZATION=f"Token {token_for(other_user)}")
    response = intruder.patch(f"/api/studies/{study.slug}/settings/", {"language": "ar"}, format="json")
    assert response.status_code == 404
    assert intruder.get(f"/api/studies/{study.slug}/").status_code == 404
    web = Client()
    web.force_login(other_user)
    assert web.post(f"/studies/{study.slug}/edit/", builder_post(study, language="ar")).status_code == 404
    study.refresh_from_db()
    assert study.language == "en"


def builder_post(study, **changes):
    """The edit form as the builder posts it (tests/studies/test_builder.py's study_post and rows)."""
    return {"title": study.title, "design": "likert", "raters_per_item": 3, "items_per_assignment": 6,
            "platform": "invite", "instructions": "", "consent_text": "", "questionnaire": "", "likert_points": 6,
            "c-0-name": "readability", "c-0-question": "Readable?", **changes}


def test_language_chosen_in_the_builder_form_by_its_owner(make_study, user):
    study = make_study("likert", publish=False)
    client = Client()
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/edit/").content.decode()
    assert 'name="language"' in page and 'name="language_from_browser"' in page
    assert 'value="ar"' in page and 'value="es"' in page
    response = client.post(f"/studies/{study.slug}/edit/",
                           builder_post(study, language="es", language_from_browser="on"))
    assert response.status_code == 302, response.content.decode()[:2000]
    study.refresh_from_db()
    assert (study.language, study.language_from_browser) == ("es", True)


def test_language_travels_with_a_duplicated_study(api, make_study):
    study = make_study("likert", publish=False)
    Study.objects.filter(pk=study.pk).update(language="ar", language_from_browser=True)
    response = api.post(f"/api/studies/{study.slug}/duplicate/", {}, format="json")
    assert response.status_code == 201, response.content
    copy = Study.objects.get(slug=response.json()["slug"])
    assert (copy.language, copy.language_from_browser) == ("ar", True)
