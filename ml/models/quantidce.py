"""QuantiDCE's scorer (Ye et al. ACL 2021): encoder → pooled [CLS] → MLP → sigmoid.

    s = σ(W3 · ELU(W2 · ELU(W1 · h_cls + b1) + b2) + b3),   W1: H→H/2, W2: H/2→H/4, W3: H/4→1

(768→384→192→1 for BERT-base; the sizes follow the encoder's hidden size H). h_cls is the encoder's
pooler output where it has one, else the [CLS] hidden state."""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from transformers import PreTrainedModel


@dataclass
class QuantiDCEOutput:
    score: torch.Tensor  # (batch,) in (0, 1)
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class QuantiDCEModel(nn.Module):
    def __init__(self, encoder: PreTrainedModel):
        super().__init__()
        self.encoder = encoder
        hidden = encoder.config.hidden_size
        self.head = nn.Sequential(nn.Linear(hidden, hidden // 2), nn.ELU(), nn.Linear(hidden // 2, hidden // 4), nn.ELU(),
                                  nn.Linear(hidden // 4, 1))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                *, output_hidden_states: bool = False, output_attentions: bool = False) -> QuantiDCEOutput:
        extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=output_hidden_states,
                           output_attentions=output_attentions, **extra)
        pooled = getattr(out, "pooler_output", None)
        if pooled is None:
            pooled = out.last_hidden_state[:, 0]
        score = torch.sigmoid(self.head(pooled)).squeeze(-1)
        return QuantiDCEOutput(score, out.hidden_states if output_hidden_states else None,
                               out.attentions if output_attentions else None)

    # -- a self-describing model directory: encoder/ (weights + tokenizer), head.pt, metric.json ------
    def save(self, directory: str | Path, *, tokenizer=None, metadata: dict | None = None) -> Path:
        directory = Path(directory)
        tmp = directory.with_name(directory.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        self.encoder.save_pretrained(tmp / "encoder")
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp / "encoder")
        torch.save(self.head.state_dict(), tmp / "head.pt")
        (tmp / "metric.json").write_text(json.dumps({"metric": "quantidce", **(metadata or {})}, indent=2, default=str))
        shutil.rmtree(directory, ignore_errors=True)
        tmp.replace(directory)  # readers never see a half-written model
        return directory

    @classmethod
    def from_encoder(cls, name_or_path: str | None = None, *, eager_attention: bool = False) -> QuantiDCEModel:
        """A new scorer on a pretrained Hugging Face encoder (head randomly initialised)."""
        from ml.models.encoder import load_encoder

        return cls(load_encoder(name_or_path, eager_attention=eager_attention))

    @classmethod
    def load(cls, directory: str | Path, *, eager_attention: bool = False) -> QuantiDCEModel:
        """A model saved with ``save`` (``eager_attention`` when attention maps are needed, as for KD)."""
        from ml.models.encoder import load_encoder

        directory = Path(directory)
        if not (directory / "head.pt").is_file():
            raise FileNotFoundError(f"{directory} is not a saved QuantiDCE model (no head.pt)")
        model = cls(load_encoder(str(directory / "encoder"), eager_attention=eager_attention))
        model.head.load_state_dict(torch.load(directory / "head.pt", map_location="cpu", weights_only=True))
        return model
