"""Walkthrough, Polish, on a phone (touch, 360 px): pairwise buttons keep their order A, tie, B in
one row; keyboard hints are not shown (there is no keyboard), the scale's explanation is; and the
autosave notice never says a bare "Saved" beside answers the page marks as wrong."""
import re

import pytest

from tests.factories import prolific_id

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def begin(tab, live_server, study, worker):
    tab.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(worker)}"
             f"&SESSION_ID={prolific_id(worker + '-s')}")
    tab.check("input[name=agree]")
    tab.click("button:has-text('Start')")
    tab.wait_for_url(re.compile(r".*/items/0/$"))


@pytest.fixture
def phone(browser):
    context = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True,
                                  device_scale_factor=2)
    yield context.new_page()
    context.close()


@pytest.fixture
def desktop(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    yield context.new_page()
    context.close()


def test_pairwise_buttons_with_ties_keep_their_order_on_a_phone(live_server, phone, make_study, screenshot):
    study = make_study("pairwise", platform="prolific", allow_tie=True)
    begin(phone, live_server, study, "phone-pair")
    boxes = [phone.locator(".pairwise-criterion").first.locator(".pair-choice").nth(i).bounding_box()
             for i in range(3)]
    assert [round(b["y"]) for b in boxes] == [round(boxes[0]["y"])] * 3  # one row
    assert boxes[0]["x"] < boxes[1]["x"] < boxes[2]["x"]  # A, about the same, B
    assert boxes[2]["x"] + boxes[2]["width"] <= 360
    assert not phone.locator(".key-hint").first.is_visible()
    screenshot(phone, "phone-pairwise-ties")


def test_keyboard_hints_show_on_a_desktop_and_not_on_a_phone(live_server, phone, desktop, make_study):
    study = make_study("likert", platform="prolific")
    begin(phone, live_server, study, "phone-likert")
    assert not phone.locator(".keys .key-hint").first.is_visible()
    assert "1 = lowest" in phone.locator(".keys").first.inner_text()  # the scale stays explained
    begin(desktop, live_server, study, "desk-likert")
    assert desktop.locator(".keys .key-hint").first.is_visible()


def test_autosave_does_not_say_saved_beside_refused_answers(live_server, desktop, make_study):
    study = make_study("rme", platform="prolific")
    begin(desktop, live_server, study, "w-saved")
    desktop.click("form#item-form button[type=submit]")  # nothing answered: the page marks every field
    desktop.wait_for_load_state("networkidle")
    assert desktop.locator(".error").count() > 0
    desktop.locator("form#item-form input[type=text], form#item-form input[type=number]").first.fill("12")
    desktop.locator(".autosave", has_text=re.compile("saved", re.I)).wait_for()  # past "Saving…"
    notice = desktop.locator(".autosave").inner_text()
    assert notice != "Saved" and "not submitted" in notice
