"""Self-chats to ACUTE-Eval in a real browser, as a new user goes: the self-chat page from the
navigation, a form with a field per setting, two runs of two local bots (studies.chat.local_bot) into one
corpus, their conversations opened from the run page; the study builder switching to the dialogue unit
and the paper's four questions when ACUTE-Eval is chosen, short names following their questions; then
items built on the self-chat corpus, a check pair authored on the checks page (a good conversation
against one where the bot repeats itself), four raters (one careless: one side throughout, caught by the
check pair and flagged in the review), and the report's win rates and significance marks, which leave the
check pair out, checked against SciPy's exact binomial test on the stored judgments."""
import re

import pytest

from studies import tasks
from studies.authoring import services as authoring
from studies.chat.local_bot import LocalBot
from studies.designs.acute import ACUTE_CRITERIA
from studies.models import Assignment, Comparison, Conversation, SelfChatRun, Study
from tests.browser.conftest import log_in
from tests.factories import UserFactory, prolific_id
from tests.studies.chat.test_selfchat import endpoint

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
DESKTOP = {"width": 1280, "height": 900}
OPENERS = "Hi, my name is Ada.\nI like hiking in the hills.\nI feel tired today."
GOOD = "user: hi, what do you do for fun?\nbot: I climb on weekends. Do you like the outdoors?\nuser: yes, hiking\n" \
       "bot: Nice! Which trail did you walk last?"
REPEATING = "user: hi, what do you do for fun?\nbot: i dont know\nuser: any hobbies?\nbot: i dont know"


@pytest.fixture
def bots(live_server, loopback_allowed, monkeypatch):
    """Ada, her two bots' endpoints, and the self-chat job run as a worker would, once the request commits."""
    monkeypatch.setattr(tasks.selfchat_run, "delay", lambda run_id: tasks.selfchat_run(run_id))
    ada = UserFactory(username="ada")
    with LocalBot() as server:
        endpoint("rulebot", server.url("rule"), owner=ada)
        endpoint("parrotbot", server.url("parrot"), owner=ada)
        yield ada


@pytest.fixture
def tab(browser, live_server, bots):
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    log_in(page, live_server, "ada", "pw-concord")
    yield page
    context.close()


def selfchat(tab, *, title, bot, conversations, corpus=None, personas=""):
    """One run from the form: ``bot`` with itself; into ``corpus`` (its slug) or a new corpus."""
    tab.fill("#id_title", title)
    if corpus:
        tab.select_option("#id_corpus", corpus)
    tab.select_option("#id_system_a", bot)
    tab.select_option("#id_system_b", bot)
    tab.fill("#id_openers", OPENERS)
    tab.fill("#id_conversations", str(conversations))
    tab.fill("#id_turns", "4")
    tab.fill("#id_a_personas", personas)
    tab.click("button:has-text('Start the self-chat')")
    tab.wait_for_url(re.compile(r".*/selfchats/\d+/$"))
    return SelfChatRun.objects.get(title=title)


def test_selfchat_browser_form_runs_two_bots_into_one_corpus_and_shows_their_conversations(
        tab, live_server, bots, screenshot):
    tab.goto(f"{live_server.url}/")
    tab.click("nav >> text=Self-chats")
    assert tab.locator("h1").inner_text() == "Self-chats"
    assert tab.get_by_label("Bot A: temperature").count() == 1  # a labelled field, no JSON box
    tab.fill("#id_title", "Bad")
    tab.fill("#id_a_temperature", "5")
    tab.click("button:has-text('Start the self-chat')")
    errors = tab.get_by_test_id("selfchat-errors").inner_text()
    assert "Bot A: temperature" in errors and "Opening contexts" in errors and not SelfChatRun.objects.exists()
    screenshot(tab, "selfchat-form-errors-1280")
    tab.fill("#id_a_temperature", "")
    first = selfchat(tab, title="Rule bot", bot="rulebot", conversations=3, personas="I am a chef.\nI love the sea.")
    assert "Done: 3 of 3 conversations done" in tab.get_by_test_id("selfchat-progress").inner_text()
    tab.click("[data-testid=selfchat-add-to-corpus]")
    assert tab.locator("#id_corpus").input_value() == first.corpus.slug
    second = selfchat(tab, title="Parrot bot", bot="parrotbot", conversations=3)
    assert second.corpus_id == first.corpus_id
    screenshot(tab, "selfchat-run-1280")
    tab.get_by_test_id("selfchat-conversations").locator("a").first.click()
    transcript = tab.get_by_test_id("selfchat-transcript").inner_text()
    stored = Conversation.objects.get(external_id=f"selfchat-{second.pk}-0")
    assert all(turn["text"] in transcript for turn in stored.turns) and "(opening context)" in transcript
    tab.goto(f"{live_server.url}/selfchats/{first.pk}/conversations/1/")
    drawn = first.dialogues.get(index=1).personas["a"]
    assert drawn in ("I am a chef.", "I love the sea.") and drawn in tab.locator("main").inner_text()


def test_acute_builder_browser_choosing_acute_brings_the_dialogue_unit_and_the_four_questions(
        tab, live_server, bots, screenshot):
    authoring.experiment_create(owner=bots, title="Bots", slug="bots")
    tab.goto(f"{live_server.url}/experiments/bots/studies/new/")
    rows = tab.locator("[data-testid=builder] [data-builder-rows] [data-row]")
    assert [rows.nth(i).locator("[data-row-field=question]").input_value() for i in range(rows.count())] == [
        "How readable is this response?", "How coherent is this response with the conversation so far?"]
    tab.check("input[name=design][value=acute]")
    assert tab.locator("input[name=unit][value=dialogue]").is_checked()
    assert [(rows.nth(i).locator("[data-row-field=name]").input_value(),
             rows.nth(i).locator("[data-row-field=question]").input_value()) for i in range(rows.count())] == \
        [(c["name"], c["question"]) for c in ACUTE_CRITERIA]
    assert tab.locator("[data-design-explained=acute]").is_visible()
    tab.fill("[name=c-3-question]", "Which speaker knows more about the world?")
    assert tab.locator("[name=c-3-name]").input_value() == "which-speaker-knows-more-about-the-world"
    tab.fill("[name=c-2-name]", "human")
    tab.fill("[name=c-2-question]", "Which speaker sounds like a person?")
    assert tab.locator("[name=c-2-name]").input_value() == "human"  # edited: no longer follows
    tab.check("input[name=design][value=likert]")  # the rows are the researcher's now: kept
    assert tab.locator("[name=c-2-question]").input_value() == "Which speaker sounds like a person?"
    tab.check("input[name=design][value=acute]")
    tab.fill("#id_title", "Bots compared")
    screenshot(tab, "acute-builder-1280")
    tab.click("button:has-text('Create draft study')")
    tab.wait_for_url(f"{live_server.url}/studies/**")
    study = Study.objects.get(title="Bots compared")
    assert study.unit == "dialogue" and list(study.criteria.order_by("position").values_list("name", "question")) == [
        ("engagingness", ACUTE_CRITERIA[0]["question"]), ("interestingness", ACUTE_CRITERIA[1]["question"]),
        ("human", "Which speaker sounds like a person?"),
        ("which-speaker-knows-more-about-the-world", "Which speaker knows more about the world?")]


def good_side(slot):
    """The side ("a" left, "b" right) of the check pair's good conversation (written first, ``check-<n>-1``)."""
    first = Conversation.objects.get(pk=slot.response_order[0])
    return "a" if first.external_id.endswith("-1") else "b"


def rate(browser, live_server, study, worker, *, careless):
    """One rater's whole assignment by keyboard: the rulebot's side on every question and the good
    conversation of the check pair, or (careless) one side throughout without reading: the side the
    check pair's repeating bot happens to be shown on, so that the known answer catches them."""
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(worker)}"
                  f"&STUDY_ID=e8bc163c82eee18733288c7d&SESSION_ID={prolific_id('x-' + worker)}")
        page.check("input[name=agree]")
        page.click("button:has-text('Start')")
        page.wait_for_url(re.compile(r".*/items/0/$"))
        assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
        slots = list(assignment.assignment_items.select_related("item").order_by("position"))
        [check] = [slot for slot in slots if slot.item.check_kind]
        always = {"a": "b", "b": "a"}[good_side(check)]
        for number, slot in enumerate(slots):
            systems = [Conversation.objects.get(pk=pk).metadata["system"] for pk in slot.response_order]
            if careless:
                key = always
            elif slot.item.check_kind:
                key = good_side(slot)
            else:
                key = "a" if systems[0] == "rulebot" else "b"
            for _ in ACUTE_CRITERIA:
                page.keyboard.press(key)
            page.click("form#item-form button[type=submit]")
            page.wait_for_url(re.compile(rf".*/items/{number + 1}/$" if number + 1 < len(slots) else r".*/questionnaire/$"))
        names = page.eval_on_selector_all("input[type=radio]", "inputs => [...new Set(inputs.map(i => i.name))]")
        for name in names:  # the closing questionnaire: the first answer of each question
            page.locator(f"input[type=radio][name='{name}']").first.check()
        page.click("button:has-text('Submit')")
        page.wait_for_url(lambda url: "/questionnaire/" not in url)
        assignment.refresh_from_db()
        assert assignment.status == "submitted"
        return assignment
    finally:
        context.close()


def expected_rows(study):
    """Per criterion: (rulebot wins, parrotbot wins, p, mark) from the stored judgments of the study's
    pairs (the check pair's left out), by SciPy."""
    from scipy.stats import binomtest

    rows = {}
    for criterion in study.criteria.all():
        wins = {"rulebot": 0, "parrotbot": 0}
        for left, right, choice in Comparison.objects.filter(criterion=criterion, item__check_kind="").values_list(
                "left_conversation__metadata__system", "right_conversation__metadata__system", "choice"):
            wins[left if choice == "left" else right] += 1
        p = binomtest(wins["parrotbot"], wins["rulebot"] + wins["parrotbot"], 0.5).pvalue
        mark = "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""
        rows[criterion.name] = (wins["rulebot"], wins["parrotbot"], p, mark)
    return rows


def test_selfchat_to_acute_end_to_end_two_bots_four_raters_one_careless_the_report(
        tab, browser, live_server, bots, screenshot):
    tab.goto(f"{live_server.url}/selfchats/")
    corpus = selfchat(tab, title="Rule bot", bot="rulebot", conversations=6).corpus
    tab.goto(f"{live_server.url}/selfchats/?corpus={corpus.slug}")
    selfchat(tab, title="Parrot bot", bot="parrotbot", conversations=6, corpus=corpus.slug)
    authoring.experiment_create(owner=bots, title="Bots", slug="bots")
    tab.goto(f"{live_server.url}/experiments/bots/studies/new/")
    tab.fill("#id_title", "Rule against parrot")
    tab.check("input[name=design][value=acute]")
    tab.select_option("#id_acute_reason", "off")
    tab.fill("#id_raters_per_item", "4")
    tab.fill("#id_items_per_assignment", "6")
    tab.select_option("#id_platform", "prolific")
    tab.click("button:has-text('Create draft study')")
    tab.wait_for_url(f"{live_server.url}/studies/**")
    study = Study.objects.get(title="Rule against parrot")
    assert [c.name for c in study.criteria.order_by("position")] == [c["name"] for c in ACUTE_CRITERIA]
    tab.select_option("#id_corpus", corpus.slug)
    tab.click("button:has-text('Build items')")
    tab.wait_for_load_state()
    assert study.items.count() == 6
    tab.click("text=Check items and settings")  # the check pair, written as a researcher would
    assert tab.locator("h1").inner_text().startswith("Attention checks")
    add = tab.locator("#check-add")
    add.locator("select[name=kind]").select_option("gold")
    add.get_by_label("Conversation A, one turn per line").fill(GOOD)
    add.get_by_label("Conversation B, one turn per line").fill(REPEATING)
    add.locator("select[name=rule-0-response]").select_option("1")
    add.locator("select[name=rule-0-expects]").select_option("greater")
    add.locator("select[name=rule-0-than]").select_option("2")
    screenshot(tab, "selfchat-acute-check-pair-1280")
    add.locator("button:has-text('Add check item')").click()
    tab.wait_for_load_state()
    assert tab.get_by_test_id("check-item").count() == 1
    tab.get_by_test_id("check-item").locator("summary").first.click()  # opened, as the researcher reads it
    assert tab.get_by_test_id("check-expected").inner_text().strip() == "Conversation A above Conversation B"
    [pair] = study.items.filter(check_kind="gold")
    good, bad = pair.check_rules[0]["greater"], pair.check_rules[0]["than"]
    assert Conversation.objects.get(pk=bad).turns[1] == {"speaker": "bot", "text": "i dont know"}
    assert "Which trail did you walk last?" in Conversation.objects.get(pk=good).turns[-1]["text"]
    assert "1 check per rater" in tab.get_by_test_id("checks-per-rater").inner_text()
    tab.goto(f"{live_server.url}/studies/{study.slug}/")
    tab.click("button:has-text('Publish')")
    tab.wait_for_load_state()
    study.refresh_from_db()
    assert study.status == "published"
    done = [rate(browser, live_server, study, f"w-selfchat-{n}", careless=n == 3) for n in range(4)]
    assert [(a.checks_shown, a.checks_passed, a.checks_failed) for a in done] == [(1, 1, False)] * 3 + [(1, 0, True)]
    assert Comparison.objects.filter(assignment__study=study).count() == 4 * 7 * 4  # six pairs and the check
    assert Comparison.objects.filter(item=pair).count() == 4 * 4
    regular = Comparison.objects.filter(assignment__study=study, item__check_kind="").count()
    assert regular == 4 * 6 * 4
    tab.goto(f"{live_server.url}/studies/{study.slug}/review/")
    queue = tab.get_by_test_id("queue-rater")
    careless = queue.filter(has=tab.get_by_test_id("flag-checks"))
    assert careless.count() == 1 and tab.get_by_test_id("flag-checks").count() == 1  # the careful ones passed
    assert "0 of 1" in careless.get_by_test_id("flag-checks").inner_text()
    careless.locator("h3 a").click()
    tab.wait_for_url(re.compile(rf".*/raters/{done[3].rater_id}/.*"))
    expected = expected_rows(study)
    assert sum(rule + parrot for rule, parrot, _, _ in expected.values()) == regular
    assert all(rule >= 18 for rule, _, _, _ in expected.values())  # three careful raters x six items
    tab.goto(f"{live_server.url}/studies/{study.slug}/report/")
    report = tab.get_by_test_id("acute-report")
    screenshot(tab, "selfchat-acute-report-1280")
    pairs = report.get_by_test_id("acute-check-pairs").inner_text()
    assert "1 check pair with a known answer (16 judgments) are left out" in pairs
    assert "1 of 4 raters shown them failed" in pairs
    tables = report.get_by_test_id("win-rates")
    assert tables.count() == 4
    for index, criterion in enumerate(c["name"] for c in ACUTE_CRITERIA):
        cells = tables.nth(index).locator("tbody tr").first.locator("td").all_inner_texts()
        rule, parrot, p, mark = expected[criterion]
        assert cells[:2] == ["parrotbot", "rulebot"]  # systems in name order: A is parrotbot
        assert (int(cells[2]), int(cells[3]), int(cells[4])) == (rule + parrot, parrot, rule)
        assert float(cells[6]) == pytest.approx(parrot / (rule + parrot), abs=0.01)  # shown to 2 places
        assert cells[8] == ("p < .001" if p < 0.001 else f"p = {p:.3f}".replace("0.", ".", 1))  # SciPy's exact p
        assert cells[10] == mark and mark != ""  # significant, as the paper marks it
