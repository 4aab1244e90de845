"""The rater's practice pages (studies.onboarding.views) through the real entry links: the study
link and the experiment link send a new worker to the practice, an item page shows the design's
form, a wrong form is answered field by field, each answer gets its feedback (and a reload shows
the feedback, not a second try), a fail ends politely with the platform's screened-out answer and
no slot, a pass goes on to the study."""
import re

import pytest
from django.test import Client
from django.urls import reverse

from studies.authoring import services as authoring
from studies.designs.ratings import field_name
from studies.models import Assignment, PracticeAnswer, PracticeAttempt, Rater
from studies.onboarding import selectors as onboarding_selectors
from studies.onboarding import services as onboarding
from tests.factories import consented_attempt, prolific_id

pytestmark = pytest.mark.django_db

def consented(client, page):
    """Consent comes first: on the start page before the practice, tick the box and go on."""
    html = page.content.decode()
    if 'name="agree"' not in html:
        return page
    token = re.search(r'name="form_token" value="([0-9a-f]+)"', html).group(1)
    attempt = PracticeAttempt.objects.order_by("-pk").first()
    return client.post(reverse("raters:practice", args=[attempt.token]), {"form_token": token, "agree": "yes"},
                       follow=True)


MTURK = "workerId={w}&assignmentId={a}&hitId=H1&turkSubmitTo=https://www.mturk.com"


def practice_study(make_study, platform="mturk", **extra):
    study = make_study("likert", publish=False, platform=platform, raters_per_item=2, items_per_assignment=3, **extra)
    onboarding.practice_item_create(study=study, context="A: Hi!\nB: Hello, how can I help?",
                                    responses=["I need a table for two tonight.", "Banana seventeen."],
                                    rules=[{"response": 2, "max": 2}],
                                    explanation="Response B does not answer: it should be **1 or 2**.")
    onboarding.practice_item_create(study=study, context="A: Where is the station?",
                                    responses=["Second street on the left.", "I like trains."],
                                    rules=[{"greater": 1, "than": 2}],
                                    explanation="Response A gives the way; B does not.")
    onboarding.onboarding_configure(study=study, pass_mark=2)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def post_item(client, response, study, values):
    """Fill the practice item page's form (its own form token and fields) and post it."""
    html = response.content.decode()
    token = re.search(r'name="form_token" value="([0-9a-f]+)"', html).group(1)
    action = re.search(r'<form method="post" id="item-form"[^>]* action="([^"]+)"', html).group(1)
    attempt = PracticeAttempt.objects.get()
    items = onboarding_selectors.practice_items(study)
    position = int(action.rstrip("/").rsplit("/", 1)[1])
    item = items[position]
    data = {"form_token": token, "active_ms": "900"}
    data.update({field_name(rid, c.name, item.response_ids): str(v) for c in study.criteria.all()
                 for rid, v in zip(item.response_ids, values, strict=True)})
    assert attempt.status == PracticeAttempt.Status.STARTED
    return client.post(action, data), action, data


def test_practice_pages_fail_politely_without_a_slot(make_study):
    study = practice_study(make_study)
    client = Client()
    entry = consented(client, client.get(f"/r/{study.slug}/?" + MTURK.format(w="w1", a="A1"), follow=True))
    assert entry.status_code == 200 and b"Practice 1 of 2" in entry.content
    assert b"Check my answer" in entry.content and not Assignment.objects.exists() and not Rater.objects.exists()
    assert PracticeAttempt.objects.get().external_id == "W1"  # normalised as the entry normalises it
    # an incomplete form: 400, the field named, nothing stored
    html = entry.content.decode()
    token = re.search(r'name="form_token" value="([0-9a-f]+)"', html).group(1)
    action = re.search(r'action="(/r/p/[^"]+)"', html).group(1)
    incomplete = client.post(action, {"form_token": token})
    assert incomplete.status_code == 400 and b"Some answers need attention" in incomplete.content
    assert not PracticeAnswer.objects.exists()
    feedback, action, data = post_item(client, entry, study, (3, 5))  # B is 5: disagrees
    assert feedback.status_code == 200 and b"Your answer differs from ours" in feedback.content
    assert b"<strong>1 or 2</strong>" in feedback.content  # the explanation, Markdown rendered
    # our answer beside the rater's, in the rater's letters
    assert re.search(rb'<th scope="row">Response B</th><td data-testid="practice-given">5</td>'
                     rb'<td data-testid="practice-expected">at most 2</td>', feedback.content)
    assert client.post(action, data).content == feedback.content  # a double submit: the same feedback
    assert client.get(action).content == feedback.content  # a reload: the feedback, no second try
    second = client.get(reverse("raters:practice_item", args=[PracticeAttempt.objects.get().token, 1]))
    feedback, _, _ = post_item(client, second, study, (1, 5))
    assert b"See your result" in feedback.content
    result = client.get(reverse("raters:practice", args=[PracticeAttempt.objects.get().token]))
    assert b"Thank you for your time" in result.content and b"return this HIT" in result.content
    assert PracticeAttempt.objects.get().status == PracticeAttempt.Status.FAILED
    assert PracticeAnswer.objects.count() == 2
    # coming back by the link, or with a made-up worker id on the same acceptance: the same result
    for worker in ("W1", "MADEUP1"):
        again = client.get(f"/r/{study.slug}/?" + MTURK.format(w=worker, a="A1"), follow=True)
        assert b"Thank you for your time" in again.content
    assert not Assignment.objects.exists() and not Rater.objects.exists() and PracticeAttempt.objects.count() == 1


def test_practice_pages_pass_then_the_study_starts(make_study):
    study = practice_study(make_study)
    client = Client()
    page = consented(client, client.get(f"/r/{study.slug}/?" + MTURK.format(w="W2", a="A2"), follow=True))
    feedback, _, _ = post_item(client, page, study, (4, 2))
    assert b"Your answer matches ours" in feedback.content
    nxt = re.search(r'href="([^"]+)" data-testid="practice-next"', feedback.content.decode()).group(1)
    feedback, _, _ = post_item(client, client.get(nxt), study, (5, 1))
    result = client.get(re.search(r'href="([^"]+)" data-testid="practice-next"', feedback.content.decode()).group(1))
    assert b"you passed the practice" in result.content
    token = re.search(r'name="form_token" value="([0-9a-f]+)"', result.content.decode()).group(1)
    attempt = PracticeAttempt.objects.get()
    forged = client.post(reverse("raters:practice_continue", args=[attempt.token]), {"form_token": "x"})
    assert forged.status_code == 403 and not Assignment.objects.exists()
    started = client.post(reverse("raters:practice_continue", args=[attempt.token]), {"form_token": token})
    assignment = Assignment.objects.get()
    assert started.url == reverse("raters:start", args=[assignment.token])
    assert assignment.rater.external_id == "W2" and assignment.acceptance_id == "A2"
    # the returning worker resumes without practice
    back = client.get(f"/r/{study.slug}/?" + MTURK.format(w="W2", a="A2"))
    assert back.url == reverse("raters:start", args=[assignment.token])


def test_practice_from_the_experiment_link_places_after_passing(make_study):
    study = practice_study(make_study)
    client = Client()
    page = consented(client, client.get(f"/r/x/{study.experiment.slug}/?" + MTURK.format(w="W3", a="A3"), follow=True))
    assert b"Practice 1 of 2" in page.content and PracticeAttempt.objects.get().via_experiment
    post_item(client, page, study, (1, 1))
    attempt = PracticeAttempt.objects.get()
    post_item(client, client.get(reverse("raters:practice_item", args=[attempt.token, 1])), study, (5, 1))
    attempt.refresh_from_db()
    assert attempt.status == PracticeAttempt.Status.PASSED
    assignment = onboarding.practice_continue(attempt=attempt)
    assert assignment.study_id == study.pk and assignment.rater.external_id == "W3"


def test_practice_failed_on_prolific_gets_the_screened_out_code(make_study):
    study = make_study("likert", publish=False, platform="prolific")
    study.platform_config = {**(study.platform_config or {}), "screened_out_code": "C9SCREEN"}
    study.save(update_fields=["platform_config"])
    onboarding.practice_item_create(study=study, context="A: Hi", responses=["Hello!", "Zzz"],
                                    rules=[{"response": 1, "min": 4}], explanation="A greets back.")
    authoring.study_publish(study=study)
    client = Client()
    page = consented(client, client.get(f"/r/{study.slug}/?PROLIFIC_PID={prolific_id('P1')}&STUDY_ID={prolific_id('S')}&SESSION_ID={prolific_id('SE1')}", follow=True))
    post_item(client, page, study, (1, 1))
    result = client.get(reverse("raters:practice", args=[PracticeAttempt.objects.get().token]))
    assert b"C9SCREEN" in result.content and b"cc=C9SCREEN" in result.content
    assert not Assignment.objects.exists()


@pytest.mark.parametrize(("design", "texts", "rules", "extra"), [
    ("pairwise", ["Left reply here.", "Right reply here."], [{"greater": 1, "than": 2}], {}),
    ("bws", ["First reply.", "Second reply.", "Third reply.", "Fourth reply."], [{"best": 1}], {}),
    ("rme", ["Reply to scale.", "Another reply."], [{"greater": 1, "than": 2}], {"reference": "The anchor reply."}),
])
def test_practice_item_page_shows_each_designs_own_form(make_study, design, texts, rules, extra):
    study = make_study(design, publish=False, platform="prolific")
    onboarding.practice_item_create(study=study, context="A: Hello there", responses=texts, rules=rules,
                                    explanation="Because.", **extra)
    authoring.study_publish(study=study)
    client = Client()
    page = consented(client, client.get(f"/r/{study.slug}/?PROLIFIC_PID={prolific_id('P1')}&STUDY_ID={prolific_id('S')}&SESSION_ID={prolific_id('SE1')}", follow=True))
    html = page.content.decode()
    assert page.status_code == 200 and "Practice 1 of 1" in html and f'data-design="{design}"' in html
    assert all(text in html for text in texts)
    if extra:
        assert extra["reference"] in html  # the anchor, as the design's page shows it
    assert not Assignment.objects.exists()


def test_practice_magnitude_answers_scored_by_the_rules(make_study):
    study = make_study("rme", publish=False, platform="prolific")
    item = onboarding.practice_item_create(study=study, context="A: Hi", responses=["Good reply.", "Bad reply."],
                                           rules=[{"response": 1, "min": 100}], explanation="A beats the anchor.",
                                           reference="The anchor reply.")
    authoring.study_publish(study=study)
    attempt = consented_attempt(study=study, platform="prolific", external_id="P1", acceptance_id="S1")
    post = {field_name(rid, c.name, item.response_ids): v for c in study.criteria.all()
            for rid, v in zip(item.response_ids, ("150", "40"), strict=True)}
    answer, errors = onboarding.practice_answer(attempt=attempt, item=item, post=post)
    assert errors == {} and answer.agreed
    attempt.refresh_from_db()
    assert attempt.status == PracticeAttempt.Status.PASSED


def test_practice_pages_refuse_a_foreign_form_token_and_an_unknown_address(make_study):
    study = practice_study(make_study)
    client = Client()
    page = consented(client, client.get(f"/r/{study.slug}/?" + MTURK.format(w="W5", a="A5"), follow=True))
    action = re.search(r'action="(/r/p/[^"]+)"', page.content.decode()).group(1)
    other = onboarding.practice_attempt_begin(study=study, platform="mturk", external_id="W6", acceptance_id="A6")
    from studies.rating import form_tokens

    foreign = form_tokens.form_token(other.token, "practice")  # another attempt's token
    item = onboarding_selectors.practice_items(study)[0]
    data = {"form_token": foreign, **{field_name(rid, c.name, item.response_ids): "3" for c in study.criteria.all() for rid in item.response_ids}}
    refused = client.post(action, data)
    assert refused.status_code == 403 and not PracticeAnswer.objects.exists()
    assert client.get("/r/p/not-a-token/").status_code == 404
    assert client.get(reverse("raters:practice_item", args=[other.token, 7])).status_code == 404


def test_practice_answers_wait_for_consent_in_the_service_and_the_pages(make_study):
    """Consent first, always: an answer posted before "I agree" (a crafted POST with the
    practice's own form token) is refused by the service, nothing is stored, and the page sends the rater
    to the consent page, which says why; after agreeing the same answer is taken."""
    from studies.errors import ConsentRequired
    from studies.rating import form_tokens

    study = practice_study(make_study)
    attempt = onboarding.practice_attempt_begin(study=study, platform="mturk", external_id="W9", acceptance_id="A9")
    item = onboarding_selectors.practice_items(study)[0]
    answers = {field_name(rid, c.name, item.response_ids): v for c in study.criteria.all()
               for rid, v in zip(item.response_ids, ("4", "2"), strict=True)}
    with pytest.raises(ConsentRequired):
        onboarding.practice_answer(attempt=attempt, item=item, post=answers)
    assert not PracticeAnswer.objects.exists()
    client = Client()
    url = reverse("raters:practice_item", args=[attempt.token, 0])
    crafted = client.post(url, {"form_token": form_tokens.form_token(attempt.token, "practice"), **answers})
    assert crafted.status_code == 302 and crafted.url.startswith(reverse("raters:practice", args=[attempt.token]))
    consent = client.get(crafted.url)
    html = consent.content.decode()
    assert consent.status_code == 200 and 'name="agree"' in html
    assert "practice answers are taken only after you agree (nothing was saved)" in html
    attempt.refresh_from_db()
    assert attempt.consented_at is None and not PracticeAnswer.objects.exists()
    token = re.search(r'name="form_token" value="([0-9a-f]+)"', html).group(1)
    agreed = client.post(crafted.url, {"form_token": token, "agree": "yes"})
    assert agreed.status_code == 302
    taken = client.post(url, {"form_token": form_tokens.form_token(attempt.token, "practice"), **answers})
    assert taken.status_code == 200 and PracticeAnswer.objects.get().agreed
