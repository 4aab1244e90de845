"""The whole SelF-Eval pipeline on a GPU, over ``ml/`` only (no Django, no database): coarse stage,
fine stage, then the benchmarks, with the wall time of each stage. For when a GPU is lent.

    python benchmarks/self_eval_gpu.py [--encoder roberta-base|PATH] [--train-limit 0] [--epochs 2]
        [--fine-epochs 1] [--per-level 3] [--max-turns 8] [--batch-size 4] [--rep-limit 0] [--out var/self_eval_gpu]

Defaults follow the paper where the CPU runs could not (encoder trained, head dropout 0.5, head lr
5e-3 → 2e-3, encoder lr 2e-5, 512 tokens, bf16 autocast on CUDA). Data from ../shared/data:
DailyDialog++ positives.json (train), dev.json (validation), test.json (Rep-0/1/2), FED turn level and
GRADE DailyDialog (correlations, the response scored as context + response). Prints JSON; the models
land under ``--out``."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from ml.data.dialogue_judgments import split_context  # noqa: E402
from ml.data.human_scores import read_grade  # noqa: E402
from ml.data.replacement import read_dialogues, rep_levels  # noqa: E402
from ml.dialogue_scoring import score_dialogues  # noqa: E402
from ml.models import SelfEvalModel, load_tokenizer  # noqa: E402
from ml.trainers import TrainingConfig  # noqa: E402
from ml.trainers.self_eval import train  # noqa: E402

DATA = ROOT.parent / "shared" / "data"


def correlations(metric, human) -> dict:
    return {"n": len(metric), "pearson": float(stats.pearsonr(metric, human)[0]),
            "spearman": float(stats.spearmanr(metric, human)[0]), "kendall": float(stats.kendalltau(metric, human)[0])}


def evaluate(model_dir: Path, rep_limit: int) -> dict:
    model, tokenizer = SelfEvalModel.load(model_dir), load_tokenizer(str(model_dir / "encoder"))
    out = {}
    started = time.perf_counter()
    triples = rep_levels(read_dialogues(DATA / "dailydialog_pp" / "test.json"), seed=71)
    triples = triples[:rep_limit] if rep_limit else triples
    scores, _ = score_dialogues(model, tokenizer, [s.turns for t in triples for s in t])
    grid = np.asarray(scores).reshape(-1, 3)
    accuracy = {"Rep-0": float(((grid[:, 0] > grid[:, 1]) & (grid[:, 0] > grid[:, 2])).mean()),
                "Rep-1": float(((grid[:, 1] < grid[:, 0]) & (grid[:, 1] > grid[:, 2])).mean()),
                "Rep-2": float(((grid[:, 2] < grid[:, 0]) & (grid[:, 2] < grid[:, 1])).mean())}
    accuracy["overall"] = float(np.mean(list(accuracy.values())))
    out["ddpp_test_replacement"] = {"dialogues": len(grid), **accuracy, "seconds": round(time.perf_counter() - started, 1)}
    started = time.perf_counter()
    fed = json.loads((DATA / "fed" / "fed-turn_eval.json").read_text())
    dialogues = []
    for record in fed:
        turns, _ = split_context(record["context"])
        dialogues.append([*turns, split_context(record["response"])[0][0]])
    values, _ = score_dialogues(model, tokenizer, dialogues)
    out["fed_turn"] = {}
    for quality in fed[0]["annotations"]:
        pairs = [(v, float(np.mean(r["annotations"][quality]))) for v, r in zip(values, fed, strict=True)
                 if r["annotations"].get(quality)]
        out["fed_turn"][quality] = correlations(*zip(*pairs, strict=True))
    out["fed_turn"]["seconds"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    grade = read_grade(DATA / "grade" / "dailydialog_EVAL.json")
    values, _ = score_dialogues(model, tokenizer, [[*p.context, p.response] for p in grade])
    out["grade_dailydialog"] = {**correlations(values, [p.score for p in grade]),
                                "seconds": round(time.perf_counter() - started, 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--encoder", default="")
    parser.add_argument("--train-limit", type=int, default=0)
    parser.add_argument("--validation-limit", type=int, default=300)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--fine-epochs", type=int, default=1)
    parser.add_argument("--per-level", type=int, default=3)
    parser.add_argument("--max-turns", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--rep-limit", type=int, default=0)
    parser.add_argument("--freeze-encoder", action="store_true")
    parser.add_argument("--out", default="var/self_eval_gpu")
    args = parser.parse_args()
    out = Path(args.out)
    common = dict(metric="self_eval", encoder=args.encoder, train_data=str(DATA / "dailydialog_pp" / "positives.json"),
                  validation_data=str(DATA / "dailydialog_pp" / "dev.json"), train_limit=args.train_limit,
                  validation_limit=args.validation_limit, per_level=args.per_level, max_turns=args.max_turns,
                  batch_size=args.batch_size, freeze_encoder=args.freeze_encoder, cache_features=args.freeze_encoder,
                  checkpoint_every=500)
    result = {"settings": vars(args)}
    started = time.perf_counter()
    coarse, state = train(TrainingConfig.for_stage("coarse", output_dir=str(out / "coarse"), epochs=args.epochs, **common),
                          resume=True)
    result["coarse"] = {"seconds": round(time.perf_counter() - started, 1), "steps": state.step,
                        "best_validation": state.best_validation}
    started = time.perf_counter()
    fine, state = train(TrainingConfig.for_stage("fine", output_dir=str(out / "fine"), epochs=args.fine_epochs,
                                                 init_from=str(coarse), **common), resume=True)
    result["fine"] = {"seconds": round(time.perf_counter() - started, 1), "steps": state.step,
                      "best_validation": state.best_validation}
    for name, directory in (("coarse", coarse), ("fine", fine)):
        result[f"evaluation_{name}"] = evaluate(directory, args.rep_limit)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
