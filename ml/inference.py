"""The inference loop every scorer shares: packed inputs sorted by length so each batch pads little
(dynamic padding to the batch's longest input, a multiple of 8 on CUDA: ``ml.data.packing``), run under
``torch.inference_mode()`` with bf16 autocast on CUDA, the outputs returned in input order."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from tqdm.auto import tqdm

from ml.data.packing import collate, packed_length, pad_multiple


def infer_sorted(packed: Sequence[dict[str, list[int]]], pad_id: int, device: torch.device,
                 forward: Callable[[dict[str, torch.Tensor]], Sequence[Any]], *, batch_size: int = 64,
                 progress: str | None = None) -> list[Any]:
    """``forward(batch)`` -> one output per row, over length-sorted batches; outputs in input order.
    ``progress``: a tqdm description (shown on a terminal only)."""
    multiple = pad_multiple(device)
    order = sorted(range(len(packed)), key=lambda i: packed_length(packed[i]))
    out: list[Any] = [None] * len(packed)
    starts = range(0, len(order), batch_size)
    with torch.inference_mode(), torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                                                enabled=device.type == "cuda"):
        for start in (tqdm(starts, desc=progress, unit="batch", leave=False, disable=None) if progress else starts):
            chosen = order[start:start + batch_size]
            batch = {k: v.to(device) for k, v in collate([packed[i] for i in chosen], pad_id, multiple).items()}
            for i, row in zip(chosen, forward(batch), strict=True):
                out[i] = row
    return out
