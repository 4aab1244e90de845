"""QuantiDCE with a frozen encoder: features computed once vs the encoder run on every batch, in the same
process on the same inputs and starting weights.

    python benchmarks/quantidce_frozen_features.py [--contexts 60] [--epochs 2] [--pairs 600]
                                                    [--representation windows] [--device cpu|cuda]

- training (MLR, the default ``windows`` head on the frozen packaged MiniLM): ``train_metric``'s trainer
  with ``cache_features`` (each distinct text embedded once, ``ml.data.frozen_features``, then the head
  trains on the features) vs the same trainer encoding every batch (``--no-cache-features``); reports
  wall seconds of build + training, the ratio, and the largest difference between the two trained heads'
  weights (the cache must not change what is learned);
- scoring (``ml.scoring.score_pairs``): each distinct text embedded once vs every packed pair through the
  whole model (``ml.scoring.score_packed``), on DailyDialog++ test pairs (a context recurs with its 15
  responses, as a study's context does with every system's); reports pairs/s, the ratio and the largest
  score difference.

Inputs: DailyDialog++ dev (training) and test (scoring) under ../shared/data. Prints JSON."""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import torch  # noqa: E402

from ml.data.levels import read_ddpp  # noqa: E402
from ml.data.packing import pack_for  # noqa: E402
from ml.devices import pick_device  # noqa: E402
from ml.models import QuantiDCEModel, load_tokenizer  # noqa: E402
from ml.scoring import score_packed, score_pairs  # noqa: E402
from ml.trainers import TrainingConfig  # noqa: E402
from ml.trainers.quantidce import build  # noqa: E402

DATA = Path(os.environ.get("CONCORD_SHARED_DATA", ROOT.parent / "shared" / "data")) / "dailydialog_pp"


def training(args, cached: bool) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as out:
        config = TrainingConfig.for_stage("mlr", train_data=str(DATA / "dev.json"), validation_data=str(DATA / "test.json"),
                                          train_limit=args.contexts, validation_limit=max(3, args.contexts // 10),
                                          epochs=args.epochs, representation=args.representation, cache_features=cached,
                                          output_dir=out, checkpoint_every=0, device=args.device)
        started = time.perf_counter()
        trainer = build(config)
        state = trainer.train()
        seconds = time.perf_counter() - started
        return seconds, {"steps": state.step, "head": {k: v.detach().cpu().clone()
                                                       for k, v in trainer.model.head.state_dict().items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", type=int, default=60, help="DailyDialog++ dev contexts to train on")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=600, help="DailyDialog++ test pairs to score")
    parser.add_argument("--representation", default="windows", choices=("windows", "paired"))
    parser.add_argument("--device", default="")
    args = parser.parse_args()
    device = pick_device(args.device or None)

    plain_s, plain = training(args, cached=False)
    cached_s, cached = training(args, cached=True)
    head_diff = max(float((plain["head"][k] - cached["head"][k]).abs().max()) for k in plain["head"])

    tokenizer = load_tokenizer()
    model = QuantiDCEModel.from_encoder(representation=args.representation, freeze_encoder=True).eval()
    pairs = [(c.context, r) for c in read_ddpp(DATA / "test.json") for level in c.levels for r in level][: args.pairs]
    started = time.perf_counter()
    fast = score_pairs(model, tokenizer, pairs, device=str(device))
    fast_s = time.perf_counter() - started
    packer = pack_for(args.representation)
    started = time.perf_counter()
    packed = [packer(tokenizer, c, r) for c, r in pairs]
    slow = score_packed(model, packed, tokenizer.pad_token_id, device=device)
    slow_s = time.perf_counter() - started
    print(json.dumps({
        "device": str(device), "representation": args.representation, "torch_threads": torch.get_num_threads(),
        "training": {"contexts": args.contexts, "epochs": args.epochs, "steps": cached["steps"],
                     "encoder_every_batch_s": round(plain_s, 2), "features_once_s": round(cached_s, 2),
                     "ratio": round(plain_s / cached_s, 2), "max_head_weight_difference": head_diff},
        "scoring": {"pairs": len(pairs), "every_pair_pairs_per_s": round(len(pairs) / slow_s, 1),
                    "distinct_texts_pairs_per_s": round(len(pairs) / fast_s, 1), "ratio": round(slow_s / fast_s, 2),
                    "max_score_difference": max(abs(a - b) for a, b in zip(fast, slow, strict=True))},
    }, indent=2))


if __name__ == "__main__":
    main()
