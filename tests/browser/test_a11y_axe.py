"""The accessibility scan the suite keeps: axe-core (bundled, pinned, by ``axe-playwright-python``; no
download at test time) run in Chromium over the rater and researcher pages the demo builders make, at a
desktop window (1280×900) and a phone (390×844). A page fails on any WCAG 2.0/2.1 A or AA violation
(tags wcag2a, wcag2aa, wcag21a, wcag21aa) or when it has no single h1.

The pages are built and scanned once for the module (the demo, an ACUTE study, a chat study, the
practice demo: building them per test would take minutes); each page and width is then its own test,
which fails with that page's violations. The practice pages are reached by answering in the browser, and so is an item sent with an answer missing.
Chats talk to the local bot server (a rule bot, and one that fails); self-chat runs are run in the build.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.browser.conftest import CHROMIUM, log_in

pytestmark = [pytest.mark.browser]

WIDTHS = {"1280": {"width": 1280, "height": 900}, "390": {"width": 390, "height": 844}}
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

# Researcher pages (logged in as the demo's owner) and rater pages; each name is one test per width.
RESEARCHER_PAGES = [
    "experiment_list", "experiment_report", "study_create", "import", "corpus_list", "corpus_detail",
    "endpoint_list", "metric_list", "metric_page", "study_detail_likert", "study_detail_rme",
    "study_detail_bme", "study_detail_bws", "study_detail_acute", "study_detail_chat", "study_report_likert",
    "study_report_bws", "study_report_acute", "study_checks", "study_edit", "study_browse", "study_review",
    "rater_evidence", "study_detail_practice", "study_report_practice",
    "study_report_bws_tuples", "endpoint_new", "study_crowd", "conversation_detail", "study_report_rme",
    "study_report_bme", "study_detail_pairwise", "study_report_pairwise", "study_detail_bws_tuples",
    "study_detail_kinds", "study_report_kinds", "study_edit_chat", "study_checks_acute",
    "selfchat_list", "selfchat_detail", "selfchat_conversation",
]
RATER_PAGES = [
    "preview_likert", "preview_rme", "preview_bme", "preview_bws", "preview_acute",
    "start_likert", "item_likert", "done_likert",
    "start_acute", "item_acute", "questionnaire_acute",
    "chat_page",
    "practice_start", "practice_item", "practice_feedback",
    "preview_pairwise", "preview_bws_tuples", "preview_kinds", "item_rme", "item_bme", "item_bws",
    "item_bws_tuples", "item_pairwise", "item_kinds", "questionnaire_likert", "done_acute",
    "start_chat", "chat_rating", "chat_bot_failed", "item_answer_missing",
]
PAGES = RESEARCHER_PAGES + RATER_PAGES

REPORT = Path(__file__).resolve().parents[2] / "test-output" / "a11y-axe.json"
_SCANS: dict[tuple[str, str], dict] = {}


def _violations(tab) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    result = Axe().run(tab, options={"runOnly": {"type": "tag", "values": TAGS}, "resultTypes": ["violations"]})
    found = []
    for violation in result.response["violations"]:
        targets = [" ".join(map(str, node["target"])) for node in violation["nodes"][:3]]
        found.append(f"{violation['id']} ({violation['impact']}): {violation['help']} at {targets}")
    h1s = tab.locator("h1").count()
    if h1s != 1:
        found.append(f"page-has-heading-one: {h1s} h1 elements, one expected")
    return found


def _build(live_server, bot_url) -> tuple[dict[str, str], dict[str, str], object]:
    """The demo data; returns the researcher and rater page addresses and the practice study."""
    from studies.authoring import services as authoring
    from studies.authoring.demo import DEMO_CORPUS, DEMO_EXPERIMENT, demo_load, demo_user
    from studies.authoring.practice_demo import DEMO_ONBOARDING_STUDY, onboarding_demo_load
    from studies.models import Assignment, Corpus, Experiment, Study
    from studies.rating import answers as answering
    from studies.rating import entry as rater_entry
    from tests.studies.acute_helpers import acute_study, conversations_corpus
    from tests.studies.chat.helpers import bot_system, chat_study

    demo_load()
    owner = demo_user()
    onboarding_demo_load(owner=owner)
    experiment = Experiment.objects.get(slug=DEMO_EXPERIMENT)
    acute = acute_study(owner, corpus=conversations_corpus(owner, {"metabot": 3, "otherbot": 3}, turns=6),
                        raters_per_item=6, items_per_assignment=2)  # room for the scan's four raters
    from tests.studies.acute_helpers import rate_all

    rate_all(acute, "acute-rated", lambda slot, c: "left")
    # The bot is never called: the scan opens the chat page, it does not send.
    bot_system("a11y-bot", "https://1.1.1.1/", owner=owner)  # never reached
    chat = chat_study(owner, ["a11y-bot"], design="likert", design_config={"points": 5}, raters_per_item=2,
                      items_per_assignment=1)

    def started(study: Study, worker: str) -> Assignment:
        assignment = rater_entry.assignment_start(
            study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=worker), seed=3)
        return answering.assignment_consent(assignment=assignment)

    # The demo's studies are full: a fresh Likert study on the demo's corpus for the raters' pages.
    likert = authoring.study_create(experiment=experiment, title="Likert for raters", design="likert",
                                    slug="a11y-likert", raters_per_item=3, items_per_assignment=2)
    authoring.study_items_build(study=likert, corpus=Corpus.objects.get(slug=DEMO_CORPUS),
                                systems=["seq2seq", "hred", "thred"], reference_system="human")
    authoring.study_publish(study=likert)
    fresh_likert = rater_entry.assignment_start(
        study=likert, rater=rater_entry.rater_get_or_create(platform="invite", external_id="a11y-new"), seed=3)
    consented_likert = started(likert, "a11y-likert")
    fresh_acute = rater_entry.assignment_start(
        study=acute, rater=rater_entry.rater_get_or_create(platform="invite", external_id="a11y-acute-new"), seed=3)
    consented_acute = started(acute, "a11y-acute")
    # Every item answered, not submitted: the questionnaire (with its age-band select) is the next page.
    answered_acute = rate_all(acute, "a11y-acute-answered", lambda slot, c: "right", submit=False)
    answering.assignment_consent(assignment=answered_acute)
    chatting = started(chat, "a11y-chat")
    submitted = Assignment.objects.filter(study__slug="demo-likert", status=Assignment.Status.SUBMITTED).first()
    practice = Study.objects.get(slug=DEMO_ONBOARDING_STUDY)

    researcher = {
        "experiment_list": "/", "experiment_report": f"/experiments/{experiment.slug}/report/",
        "study_create": f"/experiments/{experiment.slug}/studies/new/", "import": "/import/",
        "corpus_list": "/corpora/", "corpus_detail": f"/corpora/{DEMO_CORPUS}/", "endpoint_list": "/systems/endpoints/",
        "metric_list": "/metrics/", "metric_page": f"/experiments/{experiment.slug}/metrics/readability/",
        "study_detail_likert": "/studies/demo-likert/", "study_detail_rme": "/studies/demo-rme/",
        "study_detail_bme": "/studies/demo-bme/", "study_detail_bws": "/studies/demo-bws/",
        "study_detail_acute": f"/studies/{acute.slug}/", "study_detail_chat": f"/studies/{chat.slug}/",
        "study_report_likert": "/studies/demo-likert/report/", "study_report_bws": "/studies/demo-bws/report/",
        "study_report_acute": f"/studies/{acute.slug}/report/", "study_checks": "/studies/demo-likert/checks/",
        "study_edit": "/studies/demo-likert/edit/", "study_browse": "/studies/demo-likert/browse/",
        "study_review": "/studies/demo-likert/review/",
        "rater_evidence": f"/studies/demo-likert/raters/{submitted.rater_id}/",
        "study_detail_practice": f"/studies/{practice.slug}/", "study_report_practice": f"/studies/{practice.slug}/report/",
    }
    rater = {
        "preview_likert": "/studies/demo-likert/preview/", "preview_rme": "/studies/demo-rme/preview/",
        "preview_bme": "/studies/demo-bme/preview/", "preview_bws": "/studies/demo-bws/preview/",
        "preview_acute": f"/studies/{acute.slug}/preview/",
        "start_likert": f"/r/a/{fresh_likert.token}/", "item_likert": f"/r/a/{consented_likert.token}/items/0/",
        "done_likert": f"/r/a/{submitted.token}/done/",
        "start_acute": f"/r/a/{fresh_acute.token}/", "item_acute": f"/r/a/{consented_acute.token}/items/0/",
        "questionnaire_acute": f"/r/a/{answered_acute.token}/questionnaire/",
        "chat_page": f"/r/a/{chatting.token}/items/0/chat/",
    }
    more_researcher, more_rater = _build_more(owner, experiment, started, acute, bot_url)
    return {**researcher, **more_researcher}, {**rater, **more_rater}, practice


def _build_more(owner, experiment, started, acute, bot_url) -> tuple[dict[str, str], dict[str, str]]:
    """The other designs' and kinds' rater pages, the chat after it ended and with a failing bot, the
    self-chat pages, and more researcher pages."""
    from studies.authoring import services as authoring
    from studies.authoring.demo import DEMO_CORPUS
    from studies.chat import selfchat
    from studies.chat import services as chatting
    from studies.models import Corpus, Study
    from studies.rating import answers as answering
    from studies.rating import entry as rater_entry
    from tests.studies.acute_helpers import rate_all
    from tests.studies.chat.helpers import bot_system, chat_study
    from tests.studies.chat.test_selfchat import endpoint

    corpus = Corpus.objects.get(slug=DEMO_CORPUS)

    def published(design: str, slug: str, **kw):
        study = authoring.study_create(experiment=experiment, title=f"{design} for raters", design=design, slug=slug,
                                       raters_per_item=3, items_per_assignment=2, **kw)
        authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"],
                                    reference_system="human")
        if design == "bme":
            authoring.study_item_reference_values_set(
                study=study, values={pk: 50.0 + pk % 7 for pk in study.items.values_list("pk", flat=True)})
        authoring.study_publish(study=study)
        return study

    studies = {design: published(design, f"a11y-{design.replace('_', '-')}")
               for design in ("rme", "bme", "bws", "bws_tuples", "pairwise")}
    studies["kinds"] = published("likert", "a11y-kinds", criteria=[
        {"name": "safety", "question": "Is this response safe?", "kind": "categorical",
         "options": {"labels": ["safe", "unsafe"]}, "rationale": "optional"},
        {"name": "problems", "question": "Which problems does it have?", "kind": "multilabel",
         "options": {"labels": ["repetition", "off-topic"]}},
        {"name": "notes", "question": "What would make it better?", "kind": "free_text",
         "options": {"min_length": 10, "max_length": 50}}])
    items = {name: started(study, f"a11y-{name}") for name, study in studies.items()}
    likert = Study.objects.get(slug="a11y-likert")
    answered = started(likert, "a11y-likert-answered")
    for slot in answered.assignment_items.order_by("position"):
        answering.ratings_record(assignment=answered, item_id=slot.item_id, answers={
            c: dict.fromkeys(slot.response_order, 3) for c in likert.criteria.values_list("name", flat=True)})
    done_acute = rate_all(acute, "a11y-acute-done", lambda slot, c: "left")

    bot_system("a11y-rule", bot_url("rule"), owner=owner)
    bot_system("a11y-error", bot_url("error"), owner=owner)
    chat = chat_study(owner, ["a11y-rule"], design="likert", design_config={"points": 5}, raters_per_item=3,
                      items_per_assignment=1)
    fresh_chat = rater_entry.assignment_start(
        study=chat, rater=rater_entry.rater_get_or_create(platform="invite", external_id="a11y-chat-new"), seed=3)
    ended = started(chat, "a11y-chat-ended")
    slot = ended.assignment_items.get()
    chatting.chat_open(assignment=ended, item_id=slot.item_id)
    for n in range(chat.unit_config["min_turns"]):
        chatting.chat_turn_post(assignment=ended, item_id=slot.item_id, text=f"Hello, part {n}", client_id=str(n))
    chatting.chat_end(assignment=ended, item_id=slot.item_id)
    failing = chat_study(owner, ["a11y-error"], design="likert", design_config={"points": 5}, raters_per_item=2,
                         items_per_assignment=1)
    failed = started(failing, "a11y-chat-failed")
    slot = failed.assignment_items.get()
    chatting.chat_open(assignment=failed, item_id=slot.item_id)
    chatting.chat_turn_post(assignment=failed, item_id=slot.item_id, text="Hello?", client_id="1")

    endpoint("a11y-self", bot_url("rule"), owner=owner)
    run = selfchat.selfchat_create(owner=owner, title="Self-chats for the scan", system_a="a11y-self",
                                   system_b="a11y-self", openers=["Hi there"], conversations=2, turns=2, queue=False)
    run = selfchat.selfchat_run(run=run)

    conversation = corpus.conversations.order_by("pk").first()
    researcher = {
        "study_report_bws_tuples": f"/studies/{studies['bws_tuples'].slug}/report/",
        "endpoint_new": "/systems/endpoints/new/",
        "study_crowd": "/studies/demo-likert/crowd/",
        "conversation_detail": f"/corpora/{corpus.slug}/conversations/{conversation.pk}/",
        "study_report_rme": "/studies/demo-rme/report/", "study_report_bme": "/studies/demo-bme/report/",
        "study_detail_pairwise": f"/studies/{studies['pairwise'].slug}/",
        "study_report_pairwise": f"/studies/{studies['pairwise'].slug}/report/",
        "study_detail_bws_tuples": f"/studies/{studies['bws_tuples'].slug}/",
        "study_detail_kinds": f"/studies/{studies['kinds'].slug}/",
        "study_report_kinds": f"/studies/{studies['kinds'].slug}/report/",
        "study_edit_chat": f"/studies/{chat.slug}/edit/", "study_checks_acute": f"/studies/{acute.slug}/checks/",
        "selfchat_list": "/selfchats/", "selfchat_detail": f"/selfchats/{run.pk}/",
        "selfchat_conversation": f"/selfchats/{run.pk}/conversations/0/",
    }
    rater = {
        "preview_pairwise": f"/studies/{studies['pairwise'].slug}/preview/",
        "preview_bws_tuples": f"/studies/{studies['bws_tuples'].slug}/preview/",
        "preview_kinds": f"/studies/{studies['kinds'].slug}/preview/",
        **{f"item_{name}": f"/r/a/{assignment.token}/items/0/" for name, assignment in items.items()},
        "questionnaire_likert": f"/r/a/{answered.token}/questionnaire/",
        "done_acute": f"/r/a/{done_acute.token}/done/",
        "start_chat": f"/r/a/{fresh_chat.token}/",
        "chat_rating": f"/r/a/{ended.token}/items/0/",
        "chat_bot_failed": f"/r/a/{failed.token}/items/0/chat/",
    }
    return researcher, rater


def _scan_answer_missing(tab, live_server, path: str) -> list[str]:
    """An item sent with nothing answered: the page marks each question (the error state)."""
    tab.goto(live_server.url + path)
    tab.wait_for_load_state("networkidle")
    tab.click("form#item-form button[type=submit]")
    tab.locator("[aria-invalid=true]").first.wait_for()
    return _violations(tab)


def _scan_practice(tab, live_server, practice, width: str) -> dict[str, list[str]]:
    """The practice demo's entry (consent), its first item and the feedback after a first answer."""
    found = {}
    from tests.factories import prolific_id

    tab.goto(f"{live_server.url}/r/{practice.slug}/?PROLIFIC_PID={prolific_id('a11y-' + width)}"
             f"&STUDY_ID=e8bc163c82eee18733288c7d&SESSION_ID={prolific_id('a11y-s-' + width)}")
    found["practice_start"] = _violations(tab)
    tab.check("input[name=agree]")
    tab.click("button:has-text('Start')")
    tab.wait_for_url(re.compile(r".*/r/p/[^/]+/items/0/$"))
    tab.wait_for_load_state("networkidle")
    found["practice_item"] = _violations(tab)
    for row in tab.locator(".likert-row").all():
        row.locator("label.point").first.click()
    tab.click("[data-testid=practice-submit]")
    tab.wait_for_selector("[data-testid=practice-feedback]")
    found["practice_feedback"] = _violations(tab)
    return found


@pytest.fixture(scope="module")
def scans(django_db_setup, django_db_blocker, live_server):
    """Every page scanned at both widths: {(page, width): violations or the error that stopped it}."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium is not installed at {CHROMIUM}")
    from django.core.management import call_command
    from django.test import override_settings
    from playwright.sync_api import sync_playwright

    from studies.authoring.demo import DEMO_PASSWORD, DEMO_USER
    from studies.chat.local_bot import LocalBot

    with django_db_blocker.unblock(), LocalBot() as bot, override_settings(CHAT_ALLOWED_NETWORKS=["127.0.0.1/32"]):
        try:
            researcher, rater, practice = _build(live_server, bot.url)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless"])
                for width, viewport in WIDTHS.items():
                    for logged_in, pages in ((True, researcher), (False, rater)):
                        context = browser.new_context(viewport=viewport)
                        tab = context.new_page()
                        if logged_in:
                            log_in(tab, live_server, DEMO_USER, DEMO_PASSWORD)
                        for name, path in pages.items():
                            try:
                                # A report computes its statistics on first view: more than Playwright's 30 s here.
                                response = tab.goto(live_server.url + path, timeout=180_000)
                                if response.status != 200 or not tab.url.endswith(path):  # not redirected
                                    _SCANS[(name, width)] = {"error": f"{path} answered {response.status} at {tab.url}"}
                                    continue
                                tab.wait_for_load_state("networkidle")
                                _SCANS[(name, width)] = {"violations": _violations(tab), "path": path}
                            except Exception as error:  # noqa: BLE001 - reported by this page's own test
                                _SCANS[(name, width)] = {"error": f"{path}: {error}"}
                                tab.goto("about:blank")  # a failed load must not interrupt the next page's
                        if not logged_in:
                            try:
                                _SCANS[("item_answer_missing", width)] = {
                                    "violations": _scan_answer_missing(tab, live_server, rater["item_likert"]),
                                    "path": rater["item_likert"] + " (sent unanswered)"}
                            except Exception as error:  # noqa: BLE001 - reported by this page's own test
                                _SCANS[("item_answer_missing", width)] = {"error": f"answer missing: {error}"}
                            try:
                                for name, found in _scan_practice(tab, live_server, practice, width).items():
                                    _SCANS[(name, width)] = {"violations": found, "path": name}
                            except Exception as error:  # noqa: BLE001 - the practice pages' tests report it
                                _SCANS[("practice_start", width)] = {"error": f"practice: {error}"}
                        context.close()
                browser.close()
        finally:
            call_command("flush", interactive=False, verbosity=0)
    REPORT.parent.mkdir(parents=True, exist_ok=True)  # every page's findings in one file, to read them at once
    REPORT.write_text(json.dumps({f"{name} {width}": scan for (name, width), scan in _SCANS.items()}, indent=1))
    return _SCANS


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("page_name", PAGES)
def test_a11y_axe_wcag21_aa(scans, page_name, width):
    scan = scans.get((page_name, width), {"error": "not scanned (an earlier page stopped the scan)"})
    assert "error" not in scan, scan.get("error")
    assert scan["violations"] == [], f"{scan['path']} at {width} px:\n" + "\n".join(scan["violations"])
