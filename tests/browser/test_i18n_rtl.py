"""Rater pages in the study's language, in a real browser on a phone (390 x 844): an Arabic study is laid
out right to left (the page says dir=rtl and the boxes are mirrored: headings and buttons start at the right,
Next sits left of Back, a scale runs from the right), its scripts speak Arabic (autosave, checks); a Spanish
study's chrome and checks are Spanish; a browser asking for Spanish gets Spanish where the study allows it."""
import re

import pytest
from playwright.sync_api import expect

from studies.models import Study
from tests.factories import prolific_id

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 2}


@pytest.fixture
def phone(browser):
    context = browser.new_context(**PHONE)
    yield context.new_page()
    context.close()


@pytest.fixture
def spanish_phone(browser):
    context = browser.new_context(**PHONE, locale="es-ES")
    yield context.new_page()
    context.close()


def study_in(make_study, language, design="likert", config=None, **changes):
    study = make_study(design, platform="prolific", **(config or {}))
    Study.objects.filter(pk=study.pk).update(language=language, **changes)
    study.refresh_from_db()
    return study


def begin(tab, live_server, study, worker):
    tab.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(worker)}"
             f"&SESSION_ID={prolific_id(worker + '-s')}")
    tab.check("input[name=agree]")
    tab.click("form button[type=submit]")
    tab.wait_for_url(re.compile(r".*/items/0/$"))


def answer_likert(tab):
    for row in tab.locator(".likert-row").all():
        row.locator("label.point:has(input[value='3'])").click()


def test_rtl_arabic_start_page_is_right_to_left_on_a_phone(live_server, phone, make_study, screenshot):
    study = study_in(make_study, "ar")
    phone.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id('rtl-start')}"
               f"&SESSION_ID={prolific_id('rtl-start-s')}")
    assert phone.evaluate("[document.documentElement.lang, document.documentElement.dir]") == ["ar", "rtl"]
    assert phone.locator("h1").inner_text() == "قبل أن تبدأ"
    main = phone.locator("section.card").bounding_box()
    heading = phone.locator("h1").bounding_box()
    button = phone.locator("form button[type=submit]").bounding_box()
    # right to left: the heading and the Start button hug the right edge of their card, not the left
    assert main["x"] + main["width"] - (heading["x"] + heading["width"]) < 40
    assert button["x"] > main["x"] + main["width"] / 2
    assert phone.evaluate("getComputedStyle(document.querySelector('h1')).direction") == "rtl"
    screenshot(phone, "rtl-arabic-start")


def test_rtl_arabic_item_page_next_left_of_back_and_scale_mirrored(live_server, phone, make_study, screenshot):
    study = study_in(make_study, "ar")
    begin(phone, live_server, study, "rtl-item")
    answer_likert(phone)
    phone.click("form#item-form button[type=submit]")
    phone.wait_for_url(re.compile(r".*/items/1/$"))
    assert phone.evaluate("document.documentElement.dir") == "rtl"
    next_button = phone.locator("form#item-form button[type=submit]")
    back = phone.locator("form#item-form a.button.secondary")
    assert next_button.inner_text() == "التالي" and back.inner_text() == "السابق"
    next_box, back_box = next_button.bounding_box(), back.bounding_box()
    assert next_box["x"] + next_box["width"] <= back_box["x"]  # Next on the left of Back
    assert back_box["x"] + back_box["width"] > 390 / 2  # Back starts the row, at the right
    points = phone.locator(".likert-row").first.locator("label.point")
    first, last = points.first.bounding_box(), points.last.bounding_box()
    assert first["x"] > last["x"]  # 1 on the right, 6 on the left
    assert phone.locator("h1.task-heading").inner_text().startswith("محادثة") or \
        "من" in phone.locator("h1.task-heading").inner_text()
    screenshot(phone, "rtl-arabic-item")


def test_rtl_arabic_autosave_and_checks_in_arabic(live_server, phone, make_study):
    study = study_in(make_study, "ar")
    begin(phone, live_server, study, "rtl-save")
    phone.click("form#item-form button[type=submit]")  # nothing answered: the page's own checks speak
    problems = phone.locator("[data-testid=form-problems]")
    problems.wait_for(state="visible")
    assert "تحتاج إلى مراجعة" in problems.inner_text()
    assert "اختر نقطة لهذه الإجابة" in phone.locator(".field-error:not([hidden])").first.inner_text()
    phone.locator(".likert-row").first.locator("label.point:has(input[value='2'])").click()
    # a draft beside answers still marked wrong: "Draft saved (not submitted)…", in Arabic
    expect(phone.locator("[data-testid=autosave]")).to_have_text(re.compile("حُفظت المسودة|تم الحفظ"), timeout=30000)


def test_translation_spanish_study_chrome_and_checks(live_server, phone, make_study, screenshot):
    study = study_in(make_study, "es")
    phone.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id('es-1')}"
               f"&SESSION_ID={prolific_id('es-1-s')}")
    assert phone.evaluate("[document.documentElement.lang, document.documentElement.dir]") == ["es", "ltr"]
    assert phone.locator("h1").inner_text() == "Antes de empezar"
    assert phone.locator("form button[type=submit]").inner_text() == "Empezar"
    phone.check("input[name=agree]")
    phone.click("form button[type=submit]")
    phone.wait_for_url(re.compile(r".*/items/0/$"))
    assert phone.locator("form#item-form button[type=submit]").inner_text() == "Siguiente"
    phone.click("form#item-form button[type=submit]")
    phone.locator("[data-testid=form-problems]").wait_for(state="visible")
    assert "necesita" in phone.locator("[data-testid=form-problems]").inner_text()
    assert phone.locator(".field-error:not([hidden])").first.inner_text() == "elija un punto para esta respuesta"
    box = phone.locator("form#item-form button[type=submit]").bounding_box()
    assert box["x"] < 390 / 2  # left to right: Next starts the row on the left
    screenshot(phone, "es-item-checks")


def test_language_browser_asks_spanish_and_the_arabic_study_allows_it(live_server, spanish_phone, make_study):
    study = study_in(make_study, "ar", language_from_browser=True)
    begin(spanish_phone, live_server, study, "es-browser")
    assert spanish_phone.evaluate("[document.documentElement.lang, document.documentElement.dir]") == ["es", "ltr"]
    assert spanish_phone.locator("form#item-form button[type=submit]").inner_text() == "Siguiente"


def test_language_browser_language_ignored_when_the_study_does_not_allow_it(live_server, spanish_phone, make_study):
    study = study_in(make_study, "ar")
    begin(spanish_phone, live_server, study, "ar-browser-es")
    assert spanish_phone.evaluate("document.documentElement.dir") == "rtl"
    assert spanish_phone.locator("form#item-form button[type=submit]").inner_text() == "التالي"


def test_rtl_arabic_pairwise_choices_run_right_to_left(live_server, phone, make_study):
    study = study_in(make_study, "ar", design="pairwise", config={"allow_tie": True})
    begin(phone, live_server, study, "rtl-pair")
    choices = phone.locator(".pairwise-criterion").first.locator(".pair-choice")
    boxes = [choices.nth(i).bounding_box() for i in range(3)]
    assert boxes[0]["x"] > boxes[1]["x"] > boxes[2]["x"]  # A at the right, then about the same, then B
    assert choices.nth(1).inner_text().strip() == "متقاربان"
    assert "أفضل" in choices.nth(0).inner_text()
    assert all(b["x"] >= 0 and b["x"] + b["width"] <= 390 for b in boxes)
