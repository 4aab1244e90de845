"""On a phone the responses sit next to their questions. At 390 px every question's
first control is within a short distance below the text of the response it asks about (before: the
responses' cards stood above all the questions, a screen or more from the later ones); the page still
fits the screen's width; a screenshot goes to test-output/browser/."""
import re

import pytest

from tests.factories import prolific_id

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH, HEIGHT = 390, 844
# Per criterion: how far (px) the first answer control sits below the nearest visible copy of the text
# it judges (Response A's), and how far below the previous one it starts.
DISTANCES = """() => {
  const text = document.querySelector('.response p').textContent.trim();
  const copies = Array.from(document.querySelectorAll('.response p, .row-text'))
    .filter(el => el.textContent.trim() === text && el.getClientRects().length > 0)
    .map(el => el.getBoundingClientRect());
  return Array.from(document.querySelectorAll('fieldset.criterion')).map(fieldset => {
    const control = fieldset.querySelector('input[type=radio], input[type=text], textarea')
      .getBoundingClientRect();
    const above = copies.filter(r => r.bottom <= control.top + 1).map(r => control.top - r.bottom);
    return above.length ? Math.min(...above) : null;
  });
}"""


@pytest.fixture
def phone(browser):
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}, is_mobile=True, has_touch=True,
                                  device_scale_factor=2)
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("design", ["likert", "rme"])
def test_each_question_sits_next_to_the_response_it_asks_about_on_a_phone(live_server, phone, make_study,
                                                                          screenshot, design):
    study = make_study(design, platform="prolific")
    phone.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id('phone-' + design)}"
               f"&SESSION_ID={prolific_id('phone-s-' + design)}")
    phone.check("input[name=agree]")
    phone.click("button:has-text('Start')")
    phone.wait_for_url(re.compile(r".*/items/0/$"))
    distances = phone.evaluate(DISTANCES)
    assert len(distances) >= 2 and None not in distances
    assert max(distances) < HEIGHT / 4, f"px from Response A's text to each question's first control: {distances}"
    assert phone.evaluate("document.documentElement.scrollWidth") <= WIDTH
    screenshot(phone, f"phone-390-questions-beside-responses-{design}")
    # every response's text is still on the page once per question, in the raters' order
    shown = phone.locator("fieldset.criterion").first.locator(".row-text").all_inner_texts()
    assert shown == [t.strip() for t in phone.locator(".response p").all_text_contents()]
    phone.wait_for_load_state("networkidle")
