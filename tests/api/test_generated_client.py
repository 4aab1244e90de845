"""A generated client that works: the schema validates with ``openapi-spec-validator``;
``openapi-python-client`` generates a client whose modules all import; and that client drives a study
end to end against a live server (create with nested criteria, import a file, build, publish, invite,
rate through the rater API as a bot with no researcher token, report, export). The tools are pinned in
requirements.txt (they change no other pin); the client runs in the generator's Python (httpx, attrs).
Without them the test is skipped, saying so."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from studies.models import Assignment, Rating, Study
from tests.conftest import small_corpus_lines
from tests.factories import token_for

HERE = Path(__file__).resolve().parent


def tool(name: str) -> str | None:
    """The tool beside this Python (requirements.txt), else in CONCORD_OPENAPI_BIN, else on PATH."""
    for folder in (str(Path(sys.executable).parent), os.environ.get("CONCORD_OPENAPI_BIN")):
        if folder and (found := shutil.which(name, path=folder)):
            return found
    return shutil.which(name)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    generator, validator = tool("openapi-python-client"), tool("openapi-spec-validator")
    if not generator or not validator:
        pytest.skip("openapi-python-client and openapi-spec-validator are not installed: pip install -r "
                    "requirements.txt (or set CONCORD_OPENAPI_BIN to a folder that has them)")
    folder = tmp_path_factory.mktemp("client")
    schema = folder / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(schema))
    checked = subprocess.run([validator, str(schema)], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    made = subprocess.run([generator, "generate", "--path", str(schema), "--meta", "none", "--output-path",
                           str(folder / "concord_client")], capture_output=True, text=True, timeout=300, cwd=folder)
    assert (folder / "concord_client" / "client.py").exists(), made.stdout[-3000:] + made.stderr[-3000:]
    return folder, str(Path(generator).parent / "python")


def run(python: str, folder: Path, *args: str, script: str = "drive.py") -> dict:
    done = subprocess.run([python, str(HERE / "client" / script), *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(folder)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_generated_module_imports(generated):
    folder, python = generated
    script = ("import importlib, pkgutil, concord_client\n"
              "names = [m.name for m in pkgutil.walk_packages(concord_client.__path__, 'concord_client.')]\n"
              "bad = []\n"
              "for name in names:\n"
              "    try: importlib.import_module(name)\n"
              "    except Exception as error: bad.append((name, repr(error)))\n"
              "print(len(names), bad)\n"
              "raise SystemExit(1 if bad else 0)\n")
    done = subprocess.run([python, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(folder)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert int(done.stdout.split()[0]) > 100  # every operation and model, not an empty package


@pytest.mark.django_db(transaction=True)
def test_the_generated_client_drives_a_study_end_to_end(generated, live_server, user, tmp_path):
    folder, python = generated
    token = token_for(user)
    corpus = tmp_path / "small.jsonl"
    corpus.write_bytes(small_corpus_lines())
    made = run(python, folder, "setup", live_server.url, token, str(corpus))
    study = Study.objects.get(slug=made["study"])
    assert made["criteria"] == ["fluency", "coherence"] and made["status"] == "published"
    assert made["items"] == study.items.count() > 0 and study.experiment.owner == user
    invite = study.invites.get(label="rater one")
    assert invite.token in made["invite_url"]
    rated = run(python, folder, "rate", live_server.url, "-", made["invite_url"])
    assignment = Assignment.objects.get(token=rated["token"])
    assert (rated["status"], assignment.status, assignment.study_id) == ("submitted", "submitted", study.pk)
    assert rated["completion_code"] == assignment.completion_code
    ratings = Rating.objects.filter(assignment=assignment)
    assert rated["fields"] == ratings.count() > 0  # one field per response and criterion, each stored
    assert rated["items"] == assignment.assignment_items.filter(answered_at__isnull=False).count()
    read = run(python, folder, "results", live_server.url, token, study.slug)
    assert "alpha" in read["report_keys"] and read["export_rows"] == ratings.count()  # a row per rating
    assert read["report_ratings"] == ratings.count()


@pytest.fixture
def eager_tasks():
    from config.celery import app as celery_app

    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = False


@pytest.mark.django_db(transaction=True)
def test_the_generated_client_runs_the_notebook_programme(generated, live_server, user, tmp_path, local_bot,
                                                          loopback_allowed, eager_tasks):
    """Endpoints, a chat-then-rate study chatted and rated by a bot through the rater API, the rater review
    (exclude, then revert), scoring a study with two metrics and a whole corpus with one, and the best-judge
    ranking: every call through the generated client, none by hand."""
    from django.contrib.auth.models import Permission

    from metrics.models import MetricScore
    from metrics.scoring import selectors, services
    from studies.models import Chat, ChatTurn, Response, SystemEndpoint

    folder, python = generated
    user.user_permissions.add(Permission.objects.get(codename="change_systemendpoint"))
    models = [services.metric_model_default(key=key) for key in ("readability", "cosine_last")]
    token = token_for(user)
    corpus = tmp_path / "small.jsonl"
    corpus.write_bytes(small_corpus_lines())
    likert = run(python, folder, "setup", live_server.url, token, str(corpus))
    run(python, folder, "rate", live_server.url, "-", likert["invite_url"])
    made = run(python, folder, "researcher", live_server.url, token, local_bot.url("rule"), script="programme.py")
    endpoint = SystemEndpoint.objects.get(pk=made["endpoint"])
    assert (made["system"], made["has_key"], made["tried"], endpoint.owner) == ("gen-bot", True, True, user)
    assert made["reply"] and made["listed"] == 1
    chatted = run(python, folder, "chat", live_server.url, "-", made["invite_url"], script="programme.py")
    assignment = Assignment.objects.get(token=chatted["token"])
    assert (chatted["status"], assignment.status, assignment.study.slug) == ("submitted", "submitted", made["study"])
    assert chatted["turns"] == ChatTurn.objects.filter(chat__assignment=assignment).count() == 4
    assert set(Chat.objects.filter(assignment=assignment).values_list("status", flat=True)) == {"ended"}
    assert Rating.objects.filter(assignment=assignment).count() > 0
    reviewed = run(python, folder, "review", live_server.url, token, likert["study"], likert["corpus"],
                   script="programme.py")
    rated = Assignment.objects.get(study__slug=likert["study"])
    assert reviewed["rater"] == rated.rater_id and reviewed["evidence_assignment"] == rated.pk
    assert (reviewed["excluded"], reviewed["reverted"]) == ("exclude", True) and not rated.excluded
    assert reviewed["runs"] == ["done", "done"]
    responses = Response.objects.filter(conversation__corpus__slug=likert["corpus"]).count()
    assert reviewed["corpus_run"] == ["done", responses, responses] and reviewed["corpus_runs_listed"] == 1
    assert MetricScore.objects.filter(metric_model=models[0], response__conversation__corpus__slug=likert["corpus"]
                                      ).count() == responses
    ranked = run(python, folder, "ranking", live_server.url, token, likert["experiment"], likert["study"],
                 script="programme.py")
    expected = selectors.judges_ranking(Study.objects.filter(slug=likert["study"]), models)
    assert ranked["models"] == ["cosine_last", "readability"]
    assert ranked["rankings"] == [[row["condition"], row["criterion"], row["best"], [r["metric"] for r in row["rows"]]]
                                  for row in expected] and expected
    # the prediction-powered estimates on the whole-corpus scores (and their CSV), and human vs metric as CSV
    from metrics.ppi import estimates as ppi

    found = run(python, folder, "ppi", live_server.url, token, likert["experiment"], likert["study"], script="bots.py")
    report = ppi.ppi_report(Study.objects.filter(slug=likert["study"]), models[0])
    want = [[c["criterion"], s["system"], s["estimate"]] for entry in report["studies"] for c in entry["criteria"]
            for s in c["systems"]]
    assert found["problems"] == [None] and want and len(found["estimates"]) == len(want)
    for got, expected in zip(found["estimates"], want, strict=True):
        assert got[:2] == expected[:2] and got[2] == pytest.approx(expected[2], abs=1e-9)
    in_csv = {(criterion, system): value for criterion, system, value in found["csv_estimates"]}  # and pooled rows
    assert [in_csv[criterion, system] for criterion, system, _ in want] == pytest.approx([row[2] for row in want],
                                                                                       abs=1e-9)
    assert found["correlation_rows"] > 0


@pytest.mark.django_db(transaction=True)
def test_the_generated_client_runs_selfchats_into_an_acute_study_and_aggregates_labels(
        generated, live_server, user, tmp_path, local_bot, loopback_allowed, eager_tasks):
    """Two bots' self-chats into one corpus, an ACUTE-Eval study built from that corpus and rated by a bot
    (the pairwise answer by the targets' keys), its report and CSV; a label study rated by two bots and its
    aggregated labels read page by page: every call through the generated client, none by hand."""
    from django.contrib.auth.models import Permission

    from studies.models import Comparison, Conversation, Corpus, SelfChatRun

    folder, python = generated
    user.user_permissions.add(Permission.objects.get(codename="change_systemendpoint"))
    token = token_for(user)
    made = run(python, folder, "selfchats", live_server.url, token, local_bot.url("rule"), local_bot.url("parrot"),
               script="bots.py")
    corpus = Corpus.objects.get(slug=made["corpus"])
    assert made["runs"] == [["done", 3, corpus.slug], ["done", 3, corpus.slug]] and made["listed"] == 2
    assert SelfChatRun.objects.filter(corpus=corpus, owner=user).count() == 2
    systems = Conversation.objects.filter(corpus=corpus).values_list("metadata__system", flat=True)
    assert sorted(set(systems)) == ["parrotbot", "rulebot"] and len(systems) == 6
    acute = Study.objects.get(slug=made["study"])
    assert (acute.design, made["items"]) == ("acute", acute.items.count()) and made["items"] > 0
    rated = run(python, folder, "rate", live_server.url, "-", made["invite_url"])
    assignment = Assignment.objects.get(token=rated["token"])
    assert rated["status"] == assignment.status == "submitted"
    comparisons = Comparison.objects.filter(assignment=assignment)
    assert comparisons.count() == acute.items.count() * acute.criteria.count()
    assert set(comparisons.values_list("choice", flat=True)) == {"left"}  # the bot's "A", the form's left
    read = run(python, folder, "acute_report", live_server.url, token, acute.slug, script="bots.py")
    assert sorted(set(read["criteria"])) == sorted(acute.criteria.values_list("name", flat=True))
    assert sum(row[3] + row[4] for row in read["win_rates"]) == comparisons.count() and read["score_rows"] > 0

    corpus_file = tmp_path / "small.jsonl"
    corpus_file.write_bytes(small_corpus_lines())
    likert = run(python, folder, "setup", live_server.url, token, str(corpus_file))
    labels = run(python, folder, "labels", live_server.url, token, likert["experiment"], likert["corpus"],
                 script="bots.py")
    for url in labels["invite_urls"]:
        assert run(python, folder, "rate", live_server.url, "-", url)["status"] == "submitted"
    aggregated = run(python, folder, "aggregated", live_server.url, token, labels["study"], script="bots.py")
    safety = Rating.objects.filter(assignment__study__slug=labels["study"], criterion__name="safety")
    targets = set(safety.values_list("response_id", flat=True))
    assert aggregated["count"] == len(aggregated["rows"]) == len(targets) > 4  # more than one page of 4
    assert {row[0] for row in aggregated["rows"]} == targets
    assert {(row[1], row[3]) for row in aggregated["rows"]} == {("safe", 2)}  # both bots said safe


def _none_for_nan(value):
    return None if isinstance(value, float) and value != value else value


@pytest.mark.django_db(transaction=True)
def test_the_generated_client_runs_a_per_turn_study_with_a_check(generated, live_server, user, tmp_path):
    """ABC-Eval's behaviours asked of every bot turn of imported dialogues, a per-turn check dialogue authored
    through the API, two bots rating through the rater API (one passes the check, one fails it), and the
    checks list, the report's per-turn section, the ratings export and the report workbook read back: every call
    through the generated client, none by hand; what they read equals what the pages' selectors compute."""
    from studies.designs.kinds.abc_eval import abc_eval_criterion
    from studies.models import Conversation, StudyItem
    from studies.reports import per_turn_selectors
    from studies.reports.check_selectors import checks_flagged
    from tests.studies.test_design_contract import dialogue_corpus_bytes

    folder, python = generated
    token = token_for(user)
    dialogues = tmp_path / "fed.json"
    dialogues.write_bytes(dialogue_corpus_bytes(6))
    criterion = abc_eval_criterion()
    made = run(python, folder, "per_turn", live_server.url, token, str(dialogues), json.dumps(criterion),
               script="annotations.py")
    study = Study.objects.get(slug=made["study"])
    assert (made["format"], made["conversations"], study.unit) == ("fed", 6, "dialogue")
    assert Conversation.objects.filter(corpus__slug=made["corpus"]).count() == 6 == made["items"]
    stored = study.criteria.get()
    assert (stored.kind, stored.options["labels"]) == ("per_turn", criterion["options"]["labels"])
    check = StudyItem.objects.get(study=study, check_kind="gold")
    assert made["check"] == check.pk and made["check_kind"] == "gold" and made["per_assignment"] == 1
    assert [t["text"] for t in check.conversation.turns][1] == "I love hiking."
    (rule,) = check.check_rules
    assert (rule["turns"], rule["response"], rule["criterion"]) == (
        {"1": ["redundant"], "3": ["follow-up"]}, check.conversation_id, "abc-eval")
    # Read back through the typed rule model, the dialogue judged whole numbered 1 as the researcher wrote it
    assert made["check_rules"] == [{**rule, "response": 1}]
    assert made["check_turns"] == [[t["speaker"], t["text"]] for t in check.conversation.turns]

    rated = {how: run(python, folder, "rate_turns", live_server.url, "-", url, how, script="annotations.py")
             for how, url in zip(("careful", "careless"), made["invite_urls"], strict=True)}
    assignments = {how: Assignment.objects.get(token=r["token"]) for how, r in rated.items()}
    for how, assignment in assignments.items():
        assert rated[how]["status"] == assignment.status == "submitted"
        turns = [r.turns for r in Rating.objects.filter(assignment=assignment)]
        assert sorted(map(json.dumps, turns)) == sorted(json.dumps(a) for a in rated[how]["answers"])
        assert len(turns) == study.items.count()  # every dialogue and the check
    careful, careless = assignments["careful"], assignments["careless"]
    assert (careful.checks_shown, careful.checks_passed, careful.checks_failed) == (1, 1, False)
    assert (careless.checks_shown, careless.checks_passed, careless.checks_failed) == (1, 0, True)
    assert Rating.objects.get(assignment=careful, item=check).turns == {"1": ["redundant"], "3": ["follow-up"]}
    # careful ticks "follow-up" on each model turn (each asks a question), careless nothing
    assert all(set(turns) == {"1", "3"} and all(v == ["follow-up"] for v in turns.values())
               for turns in Rating.objects.filter(assignment=careful, item__check_kind="").values_list("turns",
                                                                                                       flat=True))

    read = run(python, folder, "turns_report", live_server.url, token, study.slug, script="annotations.py")
    assert read["checks_count"] == 1 and read["checks"] == [[check.pk, "gold", [{**rule, "response": 1}]]]
    assert read["flagged"] == [a.pk for a in checks_flagged(study)] == [careless.pk]
    expected = per_turn_selectors.per_turn_report(Study.objects.filter(pk=study.pk))
    want = [{"criterion": e["criterion"], "mode": e["mode"], "turns": e["turns"], "dialogues": e["dialogues"],
             "raters": e["raters"],
             "rates": [[b["label"], [[s["system"], s["count"], s["n"], _none_for_nan(s["rate"])] for s in b["systems"]],
                        _none_for_nan(b["test"]["p"]), b["test"]["df"]] for b in e["rates"]],
             "agreement": [[a["label"], _none_for_nan(a["alpha"]), a["raw_agreement"], a["pairs"]]
                           for a in e["agreement"]["per_label"]],
             "units": e["agreement"]["units"]} for e in expected]
    assert read["per_turn"] == want and expected
    (section,) = read["per_turn"]
    follow = next(b for b in section["rates"] if b[0] == "follow-up")
    assert sum(s[1] for s in follow[1]) == 6 * 2 and section["raters"] == 2 and section["dialogues"] == 6
    # the ratings export: a row per rating (the check item's left out, as in every analysis), the check columns
    assert read["export_rows"] == Rating.objects.filter(assignment__study=study, item__check_kind="").count() == 12
    assert {"failed_checks", "checks_passed"} <= set(read["export_columns"])
    sheet = per_turn_selectors.per_turn_sheet_rows(expected)
    assert read["sheet"] == [[r["criterion"], r["behaviour"], r["system"], r["count"], r["turns"]] for r in sheet]


@pytest.mark.django_db(transaction=True)
def test_the_generated_client_runs_a_span_study_and_label_studio_and_potato_files(generated, live_server, user,
                                                                                  tmp_path):
    """A span study rated by two bots through the rater API (character offsets, labels), every span and the
    agreement read back page by page; a Label Studio task export imported (its annotations a closed study) and
    that study's Label Studio export downloaded; a Potato data file imported: every call through the generated
    client, none by hand."""
    from studies.models import Conversation, Response
    from studies.reports import span_selectors
    from studies.reports.label_studio_export import label_studio_tasks
    from tests.studies import dataio_files

    folder, python = generated
    token = token_for(user)
    corpus = tmp_path / "small.jsonl"
    corpus.write_bytes(small_corpus_lines())
    likert = run(python, folder, "setup", live_server.url, token, str(corpus))
    made = run(python, folder, "spans", live_server.url, token, likert["experiment"], likert["corpus"],
               script="annotations.py")
    study = Study.objects.get(slug=made["study"])
    assert study.criteria.get().kind == "spans" and made["items"] == study.items.count() > 0
    rated = [run(python, folder, "rate_spans", live_server.url, "-", url, str(n), script="annotations.py")
             for n, url in zip((1, 2), made["invite_urls"], strict=True)]
    for bot in rated:
        assignment = Assignment.objects.get(token=bot["token"])
        assert bot["status"] == assignment.status == "submitted"
        stored = [[text, s["start"], s["end"], s["label"]] for text, spans in Rating.objects.filter(
            assignment=assignment).values_list("response__text", "spans") for s in spans]
        assert sorted(stored) == sorted(bot["marked"]) and stored
        assert all(text[start:end].isalnum() for text, start, end, _ in stored)
    read = run(python, folder, "spans_report", live_server.url, token, study.slug, script="annotations.py")
    rows = list(span_selectors.span_rows(Study.objects.filter(pk=study.pk)))
    assert read["count"] == len(read["rows"]) == len(rows) > 7  # more than one page
    assert read["rows"] == [[r["source"], r["rater"], r["target"], r["turn"], r["start"], r["end"], r["label"],
                             r["text"]] for r in rows]
    raters = [r for r in read["rows"] if r[0] == "rater"]
    assert len(raters) == sum(len(bot["marked"]) for bot in rated)
    (agreement,) = span_selectors.span_report(Study.objects.filter(pk=study.pk))
    token_figures = agreement["token"]
    assert read["agreement"] == [{
        "criterion": "errors", "labels": agreement["labels"], "ratings": agreement["ratings"],
        "raters": agreement["raters"],
        "token": [_none_for_nan(token_figures[k]) for k in ("alpha", "fleiss_kappa", "cohen_kappa", "raw_agreement",
                                                            "tokens", "method")],
        "exact": [agreement["exact"][k] for k in ("f1", "pairs", "spans")],
        "overlap": [agreement["overlap"][k] for k in ("f1", "pairs", "spans")]}]
    assert read["agreement"][0]["raters"] == 2 and read["agreement"][0]["exact"][1] > 0

    label_studio = tmp_path / "label_studio_export.json"
    label_studio.write_bytes(dataio_files.fixture_bytes("label_studio_export.json"))
    potato = tmp_path / "dialogues.json"
    potato.write_bytes(dataio_files.fixture_bytes("dialogues.json"))
    found = run(python, folder, "dataio", live_server.url, token, str(label_studio), str(potato),
                script="annotations.py")
    imported = found["label_studio"]
    closed = Study.objects.get(slug=imported["study"])
    assert (imported["format"], imported["conversations"], imported["responses"]) == ("label-studio", 1, 2)
    assert closed.status == Study.Status.CLOSED and closed.experiment.owner == user
    assert imported["ratings"] == Rating.objects.filter(assignment__study=closed).count() > 0
    assert dict(Response.objects.filter(conversation__corpus__slug=imported["corpus"]).values_list(
        "system__name", "text")) == {"bot-a": "Hiking, if it stays dry.", "bot-b": "I am a language model."}
    want = [[t["data"].get("system"), t["data"].get("response"), a["completed_by"], r["from_name"], r["type"],
             next(iter(r["value"].values()))] for t in label_studio_tasks(closed) for a in t["annotations"]
            for r in a["result"]]
    assert found["results"] == want and found["tasks"] == 2
    # the file's answers come back (the raters renumbered): bot-a got 4 and 5 stars, bot-b "unsafe" from rater 7
    answers = [r[:2] + r[3:] for r in found["results"]]
    assert ["bot-a", "Hiking, if it stays dry.", "coherence", "rating", 4] in answers
    assert ["bot-a", "Hiking, if it stays dry.", "coherence", "rating", 5] in answers
    assert ["bot-b", "I am a language model.", "safety", "choices", ["unsafe"]] in answers
    assert ["bot-a", "Hiking, if it stays dry.", "coherence", "rating", 1] not in answers  # a cancelled annotation
    assert "<Rating" in found["label_config"] and "coherence" in found["label_config"]
    assert found["potato"] == {"corpus": found["potato"]["corpus"], "format": "potato", "conversations": 3,
                               "unit": "dialogue"}
    d1 = Conversation.objects.get(corpus__slug=found["potato"]["corpus"], external_id="d1")
    assert [t["speaker"] for t in d1.turns] == ["Tom", "Bot", "Tom", "Bot"] and d1.turns[3]["text"] == "I like pizza."
