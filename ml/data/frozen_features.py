"""A frozen encoder's pair features, computed once, so that training runs the head only.

A frozen encoder in eval mode is a fixed function, so h (``QuantiDCEModel``'s pair representation)
of every packed pair can be computed once before training instead of once per epoch. With the texts
encoded apart (``paired``, ``windows``) each *distinct* input is embedded once: a DailyDialog++ context
recurs with its 15 responses, so dev (1,028 contexts, 15,420 responses) costs ~17.5k encoder passes of
one text instead of 5 epochs × 15,420 × 2 (or 3) — the difference between minutes and hours on a CPU.
Cross-encoded pairs (``cls``, ``mean``) are each encoded once. The features are exactly what the
model's forward computes from the same inputs (``QuantiDCEModel.embed`` + ``pair_representation``,
or ``cross_pooled``)."""
from __future__ import annotations

from collections.abc import Sequence

import torch

from ml.data.packing import LAST, RESPONSE, input_prefix
from ml.inference import infer_sorted
from ml.models.quantidce import SEPARATE, QuantiDCEModel


def _single(packed: dict[str, list[int]], prefix: str) -> dict[str, list[int]]:
    return {k[len(prefix):]: v for k, v in packed.items() if input_prefix(k) == prefix}


def embed_distinct(model: QuantiDCEModel, inputs: Sequence[dict[str, list[int]]], pad_id: int, device: torch.device,
                   batch_size: int = 128) -> dict[tuple[int, ...], torch.Tensor]:
    """{input ids: the mean-pooled last hidden state (H,) on the CPU} for each distinct single-text input."""
    distinct = {tuple(item["input_ids"]): item for item in inputs}
    model.encoder.to(device).eval()
    rows = infer_sorted(list(distinct.values()), pad_id, device,
                        lambda batch: model.embed(batch["input_ids"], batch["attention_mask"],
                                                  batch.get("token_type_ids")).cpu(),
                        batch_size=batch_size, progress="frozen encoder: embedding distinct texts")
    return dict(zip(distinct, rows, strict=True))


def pair_features_of(model: QuantiDCEModel, items: Sequence[Sequence[dict[str, list[int]]]], pad_id: int,
                     device: torch.device, *, batch_size: int = 128) -> list[torch.Tensor]:
    """Per item (a list of packed pairs), the (n, D) — ``windows``: (n, 2, D) — features the model's head
    reads, in order."""
    if model.representation in SEPARATE:
        prefixes = ("", RESPONSE, LAST) if model.representation == "windows" else ("", RESPONSE)
        singles = [_single(p, prefix) for item in items for p in item for prefix in prefixes]
        vectors = embed_distinct(model, singles, pad_id, device, batch_size)
        out = []
        for item in items:
            columns = [torch.stack([vectors[tuple(p[prefix + "input_ids"])] for p in item]) for prefix in prefixes]
            with torch.no_grad():
                out.append(model.pair_representation(*columns))
        return out
    model.encoder.to(device).eval()
    rows = infer_sorted([p for item in items for p in item], pad_id, device,
                        lambda batch: model.cross_pooled(batch["input_ids"], batch["attention_mask"],
                                                         batch.get("token_type_ids")).float().cpu(),
                        batch_size=batch_size)
    grouped, start = [], 0
    for item in items:
        grouped.append(torch.stack(rows[start:start + len(item)]))
        start += len(item)
    return grouped
