"""MDD-Eval's whole pipeline on ``ml/`` only (no Django): teacher → augmentation → pseudo-labels +
student, then the held-out scores, with the wall time of every stage. For a GPU when one is lent
(the defaults are the full-size run); on CPU pass limits.

    python benchmarks/mdd_eval_pipeline.py --output var/mdd_pipeline [--device cuda] [--encoder PATH]
        [--teacher-limit N] [--teacher-epochs 3] [--pairs-limit N] [--per-technique 10] [--student-epochs 3]
        [--mask-model PATH] [--translate-forward PATH --translate-backward PATH] [--generator PATH]
        [--benchmark-limit N] [--lr 2e-5] [--head-lr 0] [--batch-size 16] [--max-length 128]
        [--representation cls|mean|paired] [--freeze-encoder]

Data: DailyDialog++ dev (teacher; 10 % of its contexts validate), DailyDialog++ dev + positives
(dialogues to augment) from ../shared/data; the benchmark: DailyDialog++ test ranking accuracy,
GRADE DailyDialog and FED turn level (Spearman with the human mean), for teacher and student.
Prints JSON (also written to OUTPUT/pipeline.json)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = Path(os.environ.get("CONCORD_SHARED_DATA", ROOT.parent / "shared" / "data"))


def held_out_scores(model_dir: Path, *, device: str, limit: int) -> dict:
    """Spearman with human means (GRADE DailyDialog, FED turn level: mean over its qualities' scores of
    the 'Overall' quality where present) and DailyDialog++ test ranking accuracy."""
    import numpy as np
    from scipy import stats

    from ml.data.human_scores import read_grade
    from ml.data.levels import read_ddpp
    from ml.models import load_tokenizer
    from ml.models.mdd_eval import MDDEvalModel
    from ml.scoring import score_pairs

    model = MDDEvalModel.load(model_dir)
    tokenizer = load_tokenizer(str(model_dir / "encoder"))
    out = {}
    grade = read_grade(DATA / "grade" / "dailydialog_EVAL.json")
    values = score_pairs(model, tokenizer, [(p.context, p.response) for p in grade], device=device)
    out["grade_dailydialog_spearman"] = float(stats.spearmanr(values, [p.score for p in grade]).statistic)
    fed = json.loads((DATA / "fed" / "fed-turn_eval.json").read_text())
    fed_pairs = [([t.split(": ", 1)[-1] for t in r["context"].split("\n")], r["response"].split(": ", 1)[-1]) for r in fed]
    values = score_pairs(model, tokenizer, fed_pairs, device=device)
    overall = [float(np.mean(r["annotations"].get("Overall", [np.nan]))) for r in fed]
    keep = [i for i, v in enumerate(overall) if not np.isnan(v)]
    out["fed_turn_overall_spearman"] = float(stats.spearmanr([values[i] for i in keep], [overall[i] for i in keep]).statistic)
    test = read_ddpp(DATA / "dailydialog_pp" / "test.json", limit=limit or None)
    pairs = [(c.context, r) for c in test for level in c.levels for r in level]
    values = np.array(score_pairs(model, tokenizer, pairs, device=device)).reshape(len(test), 3, -1)
    correct = [float(values[c, hi, a] > values[c, lo, b]) + 0.5 * float(values[c, hi, a] == values[c, lo, b])
               for c in range(len(test)) for lo in range(3) for hi in range(lo + 1, 3)
               for a in range(values.shape[2]) for b in range(values.shape[2])]
    out["ddpp_test_ranking_accuracy"] = float(np.mean(correct))
    out["ddpp_test_contexts"] = len(test)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=ROOT / "var" / "mdd_pipeline")
    parser.add_argument("--device", default="")
    parser.add_argument("--encoder", default="")
    parser.add_argument("--teacher-limit", type=int, default=0)
    parser.add_argument("--teacher-epochs", type=int, default=3)
    parser.add_argument("--student-epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--head-lr", type=float, default=0.0)
    parser.add_argument("--pairs-limit", type=int, default=0)
    parser.add_argument("--per-technique", type=int, default=10)
    parser.add_argument("--student-limit", type=int, default=0, help="label only the first N augmented pairs")
    parser.add_argument("--threshold", type=float, default=0.7)
    parser.add_argument("--mask-model", default="")
    parser.add_argument("--translate-forward", default="")
    parser.add_argument("--translate-backward", default="")
    parser.add_argument("--generator", default="")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--representation", choices=("cls", "mean", "paired"), default="cls")
    parser.add_argument("--freeze-encoder", action="store_true", help="train the heads only (the MLM term is then off)")
    parser.add_argument("--benchmark-limit", type=int, default=0, help="DailyDialog++ test contexts (0 = all)")
    args = parser.parse_args()
    import transformers

    transformers.logging.set_verbosity_error()  # the new MLM head's load report is expected

    from ml.devices import pick_device
    from ml.trainers import TqdmCallback, mdd_eval
    from ml.trainers.mdd_config import MDDEvalConfig

    device = str(pick_device(args.device or None))
    common = {"encoder": args.encoder, "device": device, "batch_size": args.batch_size, "learning_rate": args.lr,
              "head_learning_rate": args.head_lr, "max_length": args.max_length,
              "representation": args.representation, "freeze_encoder": args.freeze_encoder}
    report: dict = {"device": device, "settings": vars(args) | {"output": str(args.output)}, "stages": {}}

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    def stage(name, config):
        progress(f"stage {name} ...")
        started = time.perf_counter()
        result, state = mdd_eval.train(config, resume=True, callbacks=[TqdmCallback()], log=progress)
        report["stages"][name] = {"seconds": round(time.perf_counter() - started, 1)}
        return result, state

    teacher, state = stage("teacher", MDDEvalConfig.for_stage(
        "teacher", **common, train_data=str(DATA / "dailydialog_pp" / "dev.json"), output_dir=str(args.output / "teacher"),
        epochs=args.teacher_epochs, train_limit=args.teacher_limit))
    report["stages"]["teacher"]["validation_accuracy"] = json.loads((teacher / "metric.json").read_text())[
        "validation_accuracy"]
    data, counts = stage("augment", MDDEvalConfig.for_stage(
        "augment", device=device, output_dir=str(args.output / "augmented"), per_technique=args.per_technique,
        pairs_limit=args.pairs_limit, mask_model=args.mask_model, translate_forward=args.translate_forward,
        translate_backward=args.translate_backward, generator_model=args.generator,
        sources=",".join(str(DATA / "dailydialog_pp" / f) for f in ("dev.json", "positives.json"))))
    report["stages"]["augment"].update({k: counts[k] for k in ("pairs", "records", "techniques", "skipped")})
    started = time.perf_counter()
    student, state = stage("student", MDDEvalConfig.for_stage(
        "student", **common, init_from=str(teacher), train_data=str(data), output_dir=str(args.output / "student"),
        epochs=args.student_epochs, train_limit=args.student_limit, threshold=args.threshold))
    report["stages"]["student"]["pseudo_labels"] = json.loads(
        (args.output / "student" / "pseudo_labels_counts.json").read_text())
    for name, directory in (("teacher", teacher), ("student", student)):
        started = time.perf_counter()
        report[f"{name}_held_out"] = held_out_scores(directory, device=device, limit=args.benchmark_limit)
        report[f"{name}_held_out"]["seconds"] = round(time.perf_counter() - started, 1)
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "pipeline.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
