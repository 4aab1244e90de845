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
from ml.embedding import embed
from ml.inference import infer_sorted
from ml.models.quantidce import SEPARATE, QuantiDCEModel


def _single(packed: dict[str, list[int]], prefix: str) -> dict[str, list[int]]:
    return {k[len(prefix):]: v for k, v in packed.items() if input_prefix(k) == prefix}


def embed_distinct(model: QuantiDCEModel, inputs: Sequence[dict[str, list[int]]], pad_id: int, device: torch.device,
                   batch_size: int = 128, on_progress=None) -> dict[tuple[int, ...], torch.Tensor]:
    """{input ids: the mean-pooled last hidden state (H,) on the CPU} for each distinct single-text input,
    through the on-disk embedding cache (``ml.embedding``)."""
    distinct = list({tuple(item["input_ids"]): item for item in inputs}.values())
    rows = embed(model.encoder, distinct, pad_id, device, batch_size=batch_size,
                 progress=None if on_progress else "frozen encoder: embedding distinct texts", on_progress=on_progress)
    return {tuple(item["input_ids"]): row for item, row in zip(distinct, rows, strict=True)}


def pair_features_of(model: QuantiDCEModel, items: Sequence[Sequence[dict[str, list[int]]]], pad_id: int,
                     device: torch.device, *, batch_size: int = 128, on_progress=None) -> list[torch.Tensor]:
    """Per item (a list of packed pairs), the (n, D) — ``windows``: (n, 2, D) — features the model's head
    reads, in order."""
    if model.representation in SEPARATE:
        prefixes = ("", RESPONSE, LAST) if model.representation == "windows" else ("", RESPONSE)
        singles = [_single(p, prefix) for item in items for p in item for prefix in prefixes]
        vectors = embed_distinct(model, singles, pad_id, device, batch_size, on_progress)
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


def paired_features(encoder, packed: Sequence[dict[str, list[int]]], pad_id: int, device: torch.device, *,
                    batch_size: int = 128, on_progress=None) -> torch.Tensor:
    """(N, 4H + 1) ``paired`` features [u; v; |u − v|; u∘v; cos] of separately packed pairs
    (``ml.data.packing.pack_separate``), each distinct text embedded once through the on-disk cache: what
    a frozen encoder's ``paired`` model (MDD-Eval's) computes from the same inputs."""
    from ml.models.quantidce import pair_features

    if not packed:
        return torch.zeros(0, 4 * encoder.config.hidden_size + 1)
    columns = []
    for prefix in ("", RESPONSE):
        singles = [_single(p, prefix) for p in packed]
        distinct = list({tuple(item["input_ids"]): item for item in singles}.values())
        rows = embed(encoder, distinct, pad_id, device, batch_size=batch_size, on_progress=on_progress,
                     progress=None if on_progress else "frozen encoder: embedding distinct texts")
        vectors = {tuple(item["input_ids"]): row for item, row in zip(distinct, rows, strict=True)}
        columns.append(torch.stack([vectors[tuple(item["input_ids"])] for item in singles]))
    with torch.no_grad():
        return pair_features(*columns)
