"""Where learned metrics run: the device asked for, else CUDA when present, else the CPU."""
from __future__ import annotations

import torch


def pick_device(wanted: str | None = None) -> torch.device:
    return torch.device(wanted or ("cuda" if torch.cuda.is_available() else "cpu"))
