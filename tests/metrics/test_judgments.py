"""Human-judgment files for benchmarks are read by the import parsers (one reader for import and benchmark):
FED dialogue level, DSTC9 with its "N/A" scores, several files (or a folder) in one ``benchmark_metric``
call with per-file and pooled figures, formats read off the files, human qualities that cannot be taken for
a metric's name, and the paper's figure only where it gives one."""
import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from scipy import stats

from metrics.benchmarking.judgments import read_set
from studies.corpora import services
from tests.conftest import shared_file

pytestmark = pytest.mark.django_db


def dstc9(number: int, annotator: int, **changes) -> dict:
    record = {"context": f"User: hello {number}\nSystem: hi {number}, how are you?\nUser: fine {'x ' * number}",
              "coherent": (number + annotator) % 3 + 1, "error recovery": 1 + annotator % 2,
              "human (overall)": 1 + (number * 3 + annotator) % 5}
    record.update(changes)
    return record


def bench(*args) -> dict:
    out = io.StringIO()
    call_command("benchmark_metric", *args, stdout=out, verbosity=0)
    return json.loads(out.getvalue())


def test_fed_dialogue_file_reads_as_the_importer_reads_it(tmp_path):
    path = tmp_path / "fed.json"
    path.write_text(json.dumps([
        {"dialog": [{"speaker": "User", "text": "hi"}, {"speaker": "System", "text": "hello"}],
         "annotations": {"Coherent": [2, 3, None], "Overall": []}, "model": "m", "dialogue_id": "x1"},
        {"dialog": [{"speaker": "User", "text": "yo"}], "annotations": {"Coherent": [1]}, "dialogue_id": "x2"}]))
    first, second = read_set(path).items
    assert read_set(path).kind == "fed-dialogue" and read_set(path).missing == {"overall": 1}
    assert (first.turns, first.speakers) == (["hi", "hello"], ["User", "System"])
    assert first.human == {"human:coherent": 2.5} and second.human == {"human:coherent": 1.0}
    path.write_text(json.dumps([{"dialog": [{"speaker": "User", "text": "hi"}], "annotations": {"Coherent": ["x"]}}]))
    with pytest.raises(ValueError, match=r"line 1, annotations.Coherent\[0\]: must be a number"):
        read_set(path)


def test_dstc9_ratings_of_one_dialogue_are_one_item_and_na_is_a_counted_missing_value(tmp_path):
    records = [dstc9(1, 0), dstc9(1, 1, **{"error recovery": "N/A"}), dstc9(2, 0, **{"error recovery": ""}),
               dstc9(2, 1, coherent=None)]
    path = tmp_path / "chatbot1.json"
    path.write_text(json.dumps(records))
    judgments = read_set(path)
    assert judgments.kind == "dstc9" and len(judgments.items) == 2
    assert judgments.missing == {"error-recovery": 2, "coherent": 1}
    first, second = judgments.items
    assert first.turns == ["hello 1", "hi 1, how are you?", "fine x"] and first.speakers == ["User", "System", "User"]
    assert first.human["human:error-recovery"] == 1.0 and first.human["human:coherent"] == 2.5
    assert second.human["human:error-recovery"] == 2.0 and second.human["human:coherent"] == 3.0  # the one given
    # the import reads the same file with the same parser: the same missing values
    summary = services.dialogues_import(stream=io.BytesIO(path.read_bytes()), source_name=path.name)
    assert summary.missing_scores == judgments.missing


def test_several_dstc9_files_in_one_call_per_file_and_pooled(tmp_path):
    folder = tmp_path / "dstc9"
    folder.mkdir()
    for bot in range(3):
        (folder / f"chatbot{bot}.json").write_text(json.dumps(
            [dstc9(n + 10 * bot, a, **({"error recovery": "N/A"} if (n + a) % 4 == 0 else {}))
             for n in range(5) for a in range(2)]))
    result = bench("cosine_turns", "--dataset", str(folder))  # a folder, the format read off the files
    assert [f["dataset"] for f in result["files"]] == ["chatbot0.json", "chatbot1.json", "chatbot2.json"]
    assert all(f["format"] == "dstc9" and f["records"] == 5 for f in result["files"])
    assert result["files"][0]["missing_values"] == {"error-recovery": 3}
    pooled = result["pooled"]["dstc9"]
    assert pooled["files"] == 3 and pooled["records"] == 15
    overall = pooled["qualities"]["human:human-overall"]
    assert overall["published"] is None  # the paper's DSTC9 figure is SelF-Eval's, not cosine_turns'
    # the pooled figure is the correlation over every dialogue of the three files
    values, human = [], []
    from metrics import registry

    metric = registry.implementation("cosine_turns")
    for name in ("chatbot0.json", "chatbot1.json", "chatbot2.json"):
        items = read_set(folder / name).items
        values += metric.score_dialogues([i.turns for i in items])
        human += [i.human["human:human-overall"] for i in items]
    assert overall["n"] == 15
    assert overall["spearman"]["r"] == pytest.approx(stats.spearmanr(values, human).statistic, abs=1e-9)
    # the same files given one by one
    again = bench("cosine_turns", "--dataset", *(str(p) for p in sorted(folder.iterdir())), "--format", "dstc9")
    assert again["pooled"]["dstc9"]["qualities"]["human:human-overall"]["spearman"] == overall["spearman"]


def test_grade_scores_are_human_coherence_beside_the_coherence_metric(tmp_path):
    path = shared_file("grade", "dailydialog_EVAL.json")
    result = bench("coherence", "--dataset", str(path), "--limit", "40")
    (entry,) = result["files"]
    assert (entry["format"], entry["records"]) == ("grade", 40) and set(entry["qualities"]) == {"human:coherence"}
    records = json.loads(path.read_text())[:40]
    human = [np.mean(json.loads(r["HumanScores"])) for r in records]
    from metrics import registry
    from metrics.implementations.base import ScoringInput

    values = registry.implementation("coherence").score(
        [ScoringInput([t for t in r["Context"].split("|||") if t.strip()], r["Response"]) for r in records])
    assert entry["qualities"]["human:coherence"]["spearman"]["r"] == pytest.approx(
        stats.spearmanr(values, human).statistic, abs=1e-9)
    assert entry["qualities"]["human:coherence"]["published"] is None


def test_help_names_the_metrics_and_bad_paths_are_named():
    from django.core.management import load_command_class

    text = load_command_class("metrics", "benchmark_metric").create_parser("manage.py", "benchmark_metric").format_help()
    assert all(key in text for key in ("quantidce", "cosine_last", "cosine_context", "self_eval", "cosine_turns"))
    with pytest.raises(CommandError, match="nowhere.json: no such file or folder"):
        bench("cosine_last", "--dataset", "nowhere.json")


def test_pooled_grade_files_of_two_data_sets_carry_no_paper_figure(tmp_path):
    """A pooled GRADE figure carried the first file's paper number; each file keeps its own,
    and MDD-Eval's Empathetic-Eval figure (Table 5, .374) is there."""
    from metrics import registry
    from metrics.benchmarking.benchmarks import benchmark

    records = json.loads(shared_file("grade", "dailydialog_EVAL.json").read_text())[:12]
    paths = []
    for name in ("convai2", "empatheticdialogues"):
        path = tmp_path / f"{name}_EVAL.json"
        path.write_text(json.dumps([{**r, "Dataset": f"{name}_EVAL"} for r in records]))
        paths.append(path)
    result = benchmark(registry.implementation("cosine_last"), paths, metric="mdd_eval")
    by_file = {f["dataset"]: f["qualities"]["human:coherence"]["published"] for f in result["files"]}
    assert by_file == {"convai2_EVAL.json": None, "empatheticdialogues_EVAL.json": {"spearman": 0.374}}
    assert result["pooled"]["grade"]["qualities"]["human:coherence"]["published"] is None
    same = benchmark(registry.implementation("cosine_last"), [paths[1], paths[1]], metric="mdd_eval")
    assert same["pooled"]["grade"]["qualities"]["human:coherence"]["published"] == {"spearman": 0.374}


def test_benchmark_metric_compares_several_metrics_with_paired_intervals():
    """``benchmark_metric --metrics a,b`` ranks the metrics on the same items by Spearman with the humans,
    with the paired bootstrap gap to the best."""
    path = shared_file("grade", "dailydialog_EVAL.json")
    result = bench("--metrics", "cosine_last,readability", "--dataset", str(path), "--limit", "60",
                   "--resamples", "200")
    ranking = result["files"][0]["qualities"]["human:coherence"]
    assert ranking["n"] == 60 and {r["metric"] for r in ranking["rows"]} == {"cosine_last", "readability"}
    records = json.loads(path.read_text())[:60]
    human = [np.mean(json.loads(r["HumanScores"])) for r in records]
    from metrics import registry
    from metrics.implementations.base import ScoringInput

    inputs = [ScoringInput([t for t in r["Context"].split("|||") if t.strip()], r["Response"]) for r in records]
    for row in ranking["rows"]:
        values = registry.implementation(row["metric"]).score(inputs)
        assert row["r"] == pytest.approx(stats.spearmanr(values, human).statistic, abs=1e-9)
    second = ranking["rows"][1]
    assert second["delta_low"] is not None and second["tied_with_best"] == (second["delta_low"] <= 0)
    assert ranking["summary"].startswith(ranking["best"])
    with pytest.raises(CommandError, match="at least two"):
        bench("--metrics", "cosine_last", "--dataset", str(path))
    with pytest.raises(CommandError, match="neither a metric"):
        bench("--metrics", "cosine_last,nope", "--dataset", str(path))
