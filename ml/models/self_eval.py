"""SelF-Eval's dialogue scorer (Ma et al. COLING 2022, eq. 1):

    h_D = [E_cls ; mean-pool of all token states]                 (2H)
    S_D = σ(W2 · tanh(W1 · h_D + b1) + b2),   W1: 2H→H, W2: H→1

with dropout (0.5, the paper's) on h_D and on the tanh layer. The input is a whole dialogue packed by
``ml.data.replacement.pack_dialogue``. Any Hugging Face encoder works (the paper: RoBERTa; offline
default: the packaged MiniLM). Saved like QuantiDCE: ``encoder/`` (weights + tokenizer), ``head.pt``,
``metric.json`` (``"metric": "self_eval"``)."""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from transformers import PreTrainedModel

from ml.models.quantidce import mean_pool


@dataclass
class SelfEvalOutput:
    score: torch.Tensor  # (batch,) in (0, 1)


class SelfEvalModel(nn.Module):
    def __init__(self, encoder: PreTrainedModel, *, head_dropout: float = 0.5, freeze_encoder: bool = False):
        super().__init__()
        self.encoder, self.freeze_encoder, self.head_dropout = encoder, freeze_encoder, head_dropout
        if freeze_encoder:
            encoder.requires_grad_(False)
        hidden = encoder.config.hidden_size
        self.head = nn.Sequential(nn.Dropout(head_dropout), nn.Linear(2 * hidden, hidden), nn.Tanh(),
                                  nn.Dropout(head_dropout), nn.Linear(hidden, 1))

    def train(self, mode: bool = True) -> SelfEvalModel:
        super().train(mode)
        if self.freeze_encoder:
            self.encoder.eval()  # a frozen encoder keeps its own dropout off; the head's stays on
        return self

    def representation(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **extra)
        last = out.last_hidden_state
        return torch.cat([last[:, 0], mean_pool(last, attention_mask)], dim=-1)

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, features: torch.Tensor | None = None) -> SelfEvalOutput:
        """``features``: h_D computed beforehand (a frozen encoder's, see ``ml.trainers.self_eval``)."""
        h = features if features is not None else self.representation(input_ids, attention_mask, token_type_ids)
        return SelfEvalOutput(torch.sigmoid(self.head(h)).squeeze(-1))

    def save(self, directory: str | Path, *, tokenizer=None, metadata: dict | None = None) -> Path:
        directory = Path(directory)
        tmp = directory.with_name(directory.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        self.encoder.save_pretrained(tmp / "encoder")
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp / "encoder")
        torch.save(self.head.state_dict(), tmp / "head.pt")
        (tmp / "metric.json").write_text(json.dumps({"metric": "self_eval", **(metadata or {}),
                                                     "head_dropout": self.head_dropout}, indent=2, default=str))
        shutil.rmtree(directory, ignore_errors=True)
        tmp.replace(directory)  # readers never see a half-written model
        return directory

    @classmethod
    def from_encoder(cls, name_or_path: str | None = None, *, head_dropout: float = 0.5,
                     freeze_encoder: bool = False) -> SelfEvalModel:
        from ml.models.encoder import load_encoder

        return cls(load_encoder(name_or_path), head_dropout=head_dropout, freeze_encoder=freeze_encoder)

    @classmethod
    def load(cls, directory: str | Path) -> SelfEvalModel:
        from ml.models.encoder import load_encoder

        directory = Path(directory)
        meta = directory / "metric.json"
        info = json.loads(meta.read_text()) if meta.is_file() else {}
        if not (directory / "head.pt").is_file() or info.get("metric") != "self_eval":
            raise FileNotFoundError(f"{directory} is not a saved SelF-Eval model (no head.pt / metric.json)")
        model = cls(load_encoder(str(directory / "encoder")), head_dropout=float(info.get("head_dropout", 0.5)))
        model.head.load_state_dict(torch.load(directory / "head.pt", map_location="cpu", weights_only=True))
        return model
