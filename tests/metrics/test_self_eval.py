"""SelF-Eval from Django: a dialogue-level scoring run stores one score per conversation (the model's
own score of the dialogue), a rerun adds none, a crashed run resumes without duplicates, ``force``
rescores; at turn level it scores responses as context + response; ``train_metric self_eval`` runs the
coarse then the fine stage and registers both models; the API queues a coarse run; ``benchmark_metric``
reads FED dialogue level, DSTC9, FED turn level and DailyDialog++ (Rep-0/1/2) files and puts the
published numbers beside its own; the consecutive-turn baselines equal their formula."""
import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from metrics.benchmarking.dialogue import replacement_accuracy
from metrics.implementations.coherence import Coherence, penalty
from metrics.implementations.self_eval import SelfEval
from metrics.models import MetricModel, MetricScore, RunStatus, TrainingRun
from metrics.registry import implementation
from metrics.scoring import dialogue as dialogue_scoring
from metrics.scoring import services
from metrics.training import services as training
from ml.dialogue_scoring import score_dialogues
from ml.models import SelfEvalModel, load_tokenizer
from studies.models import Conversation, Response
from tests.factories import UserFactory
from tests.ml.toy import tiny_encoder_dir, toy_dialogues
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("se-django")
    encoder = tiny_encoder_dir(folder / "encoder")
    model_dir = SelfEvalModel.from_encoder(str(encoder)).save(folder / "model", tokenizer=load_tokenizer(str(encoder)))
    return {"encoder": encoder, "model": model_dir, "train": toy_dialogues(folder / "train.json", 16, seed=1),
            "validation": toy_dialogues(folder / "dev.json", 6, seed=2)}


@pytest.fixture(autouse=True)
def artifacts(settings, tmp_path):
    settings.ARTIFACTS_DIR = tmp_path / "artifacts"


@pytest.fixture
def self_eval(saved):
    metric = services.metric_register(key="self_eval")
    return MetricModel.objects.create(metric=metric, name="se-toy", config={"path": str(saved["model"]), "max_length": 64})


def expected(saved, conversations):
    model, tokenizer = SelfEvalModel.load(saved["model"]), load_tokenizer(str(saved["model"] / "encoder"))
    turns = [[t["text"] for t in c.turns] for c in conversations]
    speakers = [[t["speaker"] for t in c.turns] for c in conversations]
    return score_dialogues(model, tokenizer, turns, speakers=speakers, max_length=64)[0]


def test_a_dialogue_run_scores_each_conversation_once(corpus, self_eval, saved):
    run = services.scoring_run_execute(run=services.scoring_run_create(metric_model=self_eval, corpus=corpus,
                                                                       enqueue=False))
    conversations = list(Conversation.objects.filter(corpus=corpus).order_by("pk"))
    assert (run.status, run.done, run.total) == ("done", 6, 6) and "scored 6 of 6 conversations" in run.log
    stored = dict(MetricScore.objects.filter(metric_model=self_eval).values_list("conversation_id", "value"))
    assert not MetricScore.objects.filter(metric_model=self_eval, conversation=None).exists()
    assert [stored[c.pk] for c in conversations] == pytest.approx(expected(saved, conversations), abs=1e-5)
    again = services.scoring_run_execute(run=services.scoring_run_create(metric_model=self_eval, corpus=corpus,
                                                                         enqueue=False))
    assert "scored 0 of 6" in again.log and MetricScore.objects.filter(metric_model=self_eval).count() == 6
    MetricScore.objects.update(value=-1)
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=self_eval, corpus=corpus, force=True,
                                                                 enqueue=False))
    assert not MetricScore.objects.filter(value=-1).exists() and MetricScore.objects.count() == 6


def test_a_crashed_dialogue_run_resumes_without_duplicates(corpus, self_eval, monkeypatch):
    monkeypatch.setattr(dialogue_scoring, "BATCH", 2)
    calls, real = {"n": 0}, SelfEval.score_dialogues

    def crash_on_the_third_batch(self, dialogues, speakers=None):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("worker died")
        return real(self, dialogues, speakers)

    monkeypatch.setattr(SelfEval, "score_dialogues", crash_on_the_third_batch)
    run = services.scoring_run_create(metric_model=self_eval, corpus=corpus, enqueue=False)
    with pytest.raises(RuntimeError):
        services.scoring_run_execute(run=run)
    run.refresh_from_db()
    assert (run.status, MetricScore.objects.count()) == (RunStatus.RUNNING, 4)
    resumed = services.scoring_run_execute(run=run)
    assert (resumed.status, resumed.attempts, resumed.done) == ("done", 2, 6)
    assert MetricScore.objects.count() == 6 and "attempt 2: scored 2 of 6 conversations" in resumed.log


def test_a_study_run_covers_its_items_conversations_and_turn_level_scores_responses(make_study, self_eval, saved):
    study = make_study("likert")
    run = services.scoring_run_execute(run=services.scoring_run_create(metric_model=self_eval, study=study,
                                                                       enqueue=False))
    assert run.total == study.items.values("conversation").distinct().count()
    turn = MetricModel.objects.create(metric=self_eval.metric, name="se-turn",
                                      config={**self_eval.config, "level": "turn"})
    run = services.scoring_run_execute(run=services.scoring_run_create(metric_model=turn, study=study, enqueue=False))
    assert run.status == "done" and MetricScore.objects.filter(metric_model=turn, conversation=None).count() == run.total
    response = Response.objects.get(pk=MetricScore.objects.filter(metric_model=turn).first().response_id)
    model, tokenizer = SelfEvalModel.load(saved["model"]), load_tokenizer(str(saved["model"] / "encoder"))
    as_dialogue = [*[t["text"] for t in response.conversation.turns], response.text]
    assert MetricScore.objects.get(metric_model=turn, response=response).value == pytest.approx(
        score_dialogues(model, tokenizer, [as_dialogue], max_length=64)[0][0], abs=1e-5)


def test_consecutive_turn_baselines_follow_their_formula():
    dialogue = ["do you like music ?", "i don't know", "i love jazz music"]
    cosine, coherence = implementation("cosine_turns"), implementation("coherence_turns")
    e = Coherence().encode(dialogue)
    cos = [float(e[0] @ e[1]), float(e[1] @ e[2])]
    assert cosine.score_dialogues([dialogue])[0] == pytest.approx(np.mean(cos), abs=1e-6)
    assert coherence.score_dialogues([dialogue])[0] == pytest.approx(
        np.mean([1 - penalty(dialogue[k + 1]) * (1 - cos[k]) for k in range(2)]), abs=1e-6)
    assert penalty("i don't know") > 1  # the dull reply is penalised
    assert cosine.score_dialogues([["alone"]]) == [0.0] and cosine.warnings == 1


def test_train_coarse_then_fine_registers_both(saved):
    common = ["--encoder", str(saved["encoder"]), "--train", str(saved["train"]), "--validation",
              str(saved["validation"]), "--epochs", "1", "--lr", "1e-3", "--max-length", "48", "--per-level", "2"]
    call_command("train_metric", "self_eval", "--stage", "coarse", "--name", "se-coarse", *common, verbosity=0)
    coarse = MetricModel.objects.get(name="se-coarse")
    run = TrainingRun.objects.get(result=coarse)
    assert (coarse.metric.key, coarse.metric.level, run.stage, run.status) == ("self_eval", "dialogue", "coarse", "done")
    saved_meta = json.loads((Path(coarse.artifact_path) / "metric.json").read_text())
    assert (saved_meta["metric"], saved_meta["stage"], saved_meta["max_length"]) == ("self_eval", "coarse", 48)
    call_command("train_metric", "self_eval", "--stage", "fine", "--init-from", "se-coarse", "--name", "se-fine",
                 *common[2:], verbosity=0)
    fine = MetricModel.objects.get(name="se-fine")
    assert TrainingRun.objects.get(result=fine).config["init_from"] == coarse.artifact_path
    assert any("rdrop" in h for h in TrainingRun.objects.get(result=fine).losses)
    with pytest.raises(CommandError, match="stage: self_eval trains in stages coarse, fine, not 'mlr'"):
        call_command("train_metric", "self_eval", "--stage", "mlr", *common, verbosity=0)
    with pytest.raises(CommandError, match="init_from: the fine stage starts from a coarse-stage"):
        call_command("train_metric", "self_eval", "--stage", "fine", *common, verbosity=0)
    assert TrainingRun.objects.count() == 2


def test_the_api_queues_a_coarse_run(client, saved, settings):
    settings.SHARED_DATA_DIR = saved["train"].parent
    (saved["train"].parent / "dailydialog_pp").mkdir(exist_ok=True)
    for name, source in (("positives.json", saved["train"]), ("dev.json", saved["validation"])):
        (saved["train"].parent / "dailydialog_pp" / name).write_text(source.read_text())
    client.force_login(UserFactory(username="admin", is_staff=True))
    response = client.post("/api/metrics/training/", {"metric": "self_eval", "stage": "coarse", "model_name": "api-se"},
                           content_type="application/json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["metric"], body["stage"], body["status"]) == ("self_eval", "coarse", "queued")
    assert body["config"]["train_data"].endswith("dailydialog_pp/positives.json") and body["config"]["max_length"] == 512
    bad = client.post("/api/metrics/training/", {"metric": "self_eval", "stage": "kd"}, content_type="application/json")
    assert bad.status_code == 400 and "stage" in problem_fields(bad)


def bench(*args):
    out = io.StringIO()
    call_command("benchmark_metric", *args, stdout=out, verbosity=0)
    return json.loads(out.getvalue())


def test_benchmarks_on_hand_made_files(self_eval, tmp_path):
    fed = tmp_path / "fed_dialogue.json"
    fed.write_text(json.dumps([{"dialog": [{"speaker": "User", "text": f"hi {i}"}, {"speaker": "Bot", "text": "yo " * i}],
                                "annotations": {"Coherent": [i % 3, 2], "Overall": [i]}, "dialogue_id": str(i)}
                               for i in range(6)]))
    result = bench("self_eval", "--model", "se-toy", "--dataset", str(fed), "--format", "fed")["files"][0]
    assert (result["format"], result["level"], result["records"]) == ("fed-dialogue", "dialogue", 6)
    assert result["qualities"]["human:coherent"]["published"] == {"spearman": 0.436}
    assert set(result["qualities"]["human:overall"]) >= {"n", "pearson", "spearman", "kendall"}
    dstc9 = tmp_path / "dstc9.json"
    dstc9.write_text(json.dumps([{"context": f"User: hello {i}\nSystem: hi {i}", "overall": i % 4,
                                  "coherent": "N/A" if i % 3 == 0 else 1 + i % 2} for i in range(8)]))
    result = bench("self_eval", "--model", "se-toy", "--dataset", str(dstc9))["files"][0]  # the format read off the file
    assert result["format"] == "dstc9" and result["qualities"]["human:overall"]["n"] == 8
    assert result["qualities"]["human:overall"]["published"] == {"pearson": 0.163, "spearman": 0.173}
    assert result["qualities"]["human:coherent"]["n"] == 5 and result["missing_values"] == {"coherent": 3}
    assert result["qualities"]["human:coherent"]["published"] is None  # the paper gives DSTC9's overall only
    turn = tmp_path / "fed_turn.json"
    turn.write_text(json.dumps([{"context": "User: hi\nSystem: hello", "response": f"System: ok {i}", "model": "m",
                                 "annotations": {"Relevant": [i, 2, 3]}} for i in range(5)]))
    result = bench("self_eval", "--model", "se-toy", "--dataset", str(turn), "--format", "fed")["files"][0]
    assert (result["level"], result["qualities"]["human:relevant"]["published"]) == ("turn", {"spearman": 0.282})
    ddpp = tmp_path / "ddpp.json"
    ddpp.write_text("".join(json.dumps({"id": i, "context": [f"a{i}", f"b{i}"], "positive_responses": [f"c{i}"]}) + "\n"
                            for i in range(5)))
    result = bench("self_eval", "--model", "se-toy", "--dataset", str(ddpp), "--format", "ddpp", "--limit", "4")["files"][0]
    assert result["replacement"]["dialogues"] == 4 and set(result["replacement"]["accuracy"]) == {
        "Rep-0", "Rep-1", "Rep-2", "overall"}
    assert result["replacement"]["published"]["overall"] == 0.928
    with pytest.raises(CommandError, match="dstc9: dialogue-level judgments, and readability scores responses only"):
        bench("readability", "--dataset", str(dstc9), "--format", "dstc9")
    fed.write_text(json.dumps([{"dialog": "not a list"}]))
    with pytest.raises(CommandError, match="fed_dialogue.json: line 1, dialog"):
        bench("self_eval", "--model", "se-toy", "--dataset", str(fed), "--format", "fed")


def test_replacement_accuracy_by_hand():
    result = replacement_accuracy([[0.9, 0.5, 0.1], [0.9, 0.1, 0.5], [0.2, 0.5, 0.4], [0.5, 0.5, 0.1]])
    # Rep-0 right in rows 1, 2 (row 4 ties); Rep-1 right in row 1 only; Rep-2 right in rows 1, 4
    assert result["accuracy"] == pytest.approx({"Rep-0": 0.5, "Rep-1": 0.25, "Rep-2": 0.5, "overall": 1.25 / 3})


def test_an_imported_corpus_is_a_dialogue_source(corpus, saved):
    config = training.training_config(metric="self_eval", stage="coarse", train_data=f"corpus:{corpus.slug}",
                                      validation_data=str(saved["validation"]), encoder=str(saved["encoder"]))
    lines = [json.loads(line) for line in Path(config.train_data).read_text().splitlines()]
    first = Conversation.objects.filter(corpus=corpus).order_by("pk").first()
    reference = Response.objects.get(conversation=first, is_reference=True).text
    assert len(lines) == 6 and lines[0]["turns"] == [*first.turns, {"speaker": "reference", "text": reference}]
    from ml.data.replacement import read_dialogues

    assert read_dialogues(config.train_data)[0].turns == [t["text"] for t in first.turns] + [reference]
    with pytest.raises(ValueError, match="train_data: no corpus 'nope'"):
        training.training_config(metric="self_eval", stage="coarse", train_data="corpus:nope")
