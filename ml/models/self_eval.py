"""SelF-Eval's dialogue scorer (Ma et al. COLING 2022, eq. 1):

    h_D = [E_cls ; mean-pool of all token states]                 (2H)
    S_D = σ(W2 · tanh(W1 · h_D + b1) + b2),   W1: 2H→H, W2: H→1

with dropout (0.5, the paper's) on h_D and on the tanh layer. The input is a whole dialogue packed by
``ml.data.replacement.pack_dialogue``. Any Hugging Face encoder works (the paper: RoBERTa; offline
default: the packaged MiniLM). Saved like QuantiDCE: ``encoder/`` (weights + tokenizer), ``head.pt``,
``metric.json`` (``"metric": "self_eval"``, ``"representation"``).

An optional representation (not the paper's), ``representation="pairs"``: every turn is embedded on its
own by the (frozen) sentence encoder (mean pool, unit norm: u_1..u_n, ``ml.data.turn_pairs``), each
consecutive pair k = 1..n−1 gets QuantiDCE's paired features f_k = [u_k; u_{k+1}; |u_k − u_{k+1}|;
u_k∘u_{k+1}; cos(u_k, u_{k+1})] (``ml.models.quantidce.pair_features``), a small MLP scores each pair
(same dropout/tanh head, input 4H + 1), and the dialogue's score is

    S_D = σ( mean_k  MLP(f_k) )

so one replaced turn lowers the two pair scores around it and with them the dialogue's. With ``floor``
(``ml.models.floor``) each pair's logit is w·cos_k + b + MLP(f_k), the MLP starting at zero: the untrained
model orders dialogues exactly as ``cosine_turns`` does. Why: a pooled
vector of the whole packed dialogue hardly shows whether consecutive turns agree, which is what the
untrained consecutive-turn baselines measure (docs/self_eval_results.md); QuantiDCE's ``paired``
representation fixed the same problem there. Its input is ``features`` (B, T, H): the turn embeddings of
each dialogue, padded with all-zero rows (a unit vector is never zero, so zero rows mark padding)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from transformers import PreTrainedModel

from ml.models.encoder import save_model_directory
from ml.models.floor import head_for
from ml.models.quantidce import mean_pool, pair_features

REPRESENTATIONS = ("cls_mean", "pairs")  # cls_mean: the paper's h_D; pairs: consecutive turn pairs (above)


@dataclass
class SelfEvalOutput:
    score: torch.Tensor  # (batch,) in (0, 1)


class SelfEvalModel(nn.Module):
    def __init__(self, encoder: PreTrainedModel, *, head_dropout: float = 0.5, freeze_encoder: bool = False,
                 representation: str = "cls_mean", floor: bool = False):
        super().__init__()
        if representation not in REPRESENTATIONS:
            raise ValueError(f"representation must be one of {', '.join(REPRESENTATIONS)}, not {representation!r}")
        self.encoder, self.freeze_encoder, self.head_dropout = encoder, freeze_encoder, head_dropout
        if floor and representation != "pairs":
            raise ValueError("floor: the head starts from the consecutive turns' cosine (representation pairs)")
        self.representation_name, self.floor = representation, floor
        if freeze_encoder:
            encoder.requires_grad_(False)
        hidden = encoder.config.hidden_size
        width = 4 * hidden + 1 if representation == "pairs" else 2 * hidden
        self.head = head_for(nn.Sequential(nn.Dropout(head_dropout), nn.Linear(width, hidden), nn.Tanh(),
                                           nn.Dropout(head_dropout), nn.Linear(hidden, 1)), floor)

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
        """``features``: h_D computed beforehand (a frozen encoder's, see ``ml.trainers.self_eval``); with
        the ``pairs`` representation, the padded turn embeddings (B, T, H) (``ml.data.turn_pairs``)."""
        if self.representation_name == "pairs":
            if features is None:
                raise ValueError("the pairs representation scores turn embeddings: pass features (B, T, H), "
                                 "see ml.data.turn_pairs")
            return SelfEvalOutput(torch.sigmoid(self.pair_logits(features)))
        h = features if features is not None else self.representation(input_ids, attention_mask, token_type_ids)
        return SelfEvalOutput(torch.sigmoid(self.head(h)).squeeze(-1))

    def pair_logits(self, turns: torch.Tensor) -> torch.Tensor:
        """(B, T, H) turn embeddings, zero rows = padding -> (B,) mean over the consecutive real pairs of the
        head's pair logits. A dialogue with fewer than two turns has no pair: logit 0 (score ½)."""
        present = turns.abs().sum(-1) > 0  # (B, T)
        pairs = present[:, :-1] & present[:, 1:]  # (B, T − 1): both turns real
        features = pair_features(turns[:, :-1], turns[:, 1:])  # (B, T − 1, 4H + 1)
        logits = self.head(features).squeeze(-1) * pairs
        return logits.sum(-1) / pairs.sum(-1).clamp(min=1)

    def save(self, directory: str | Path, *, tokenizer=None, metadata: dict | None = None) -> Path:
        return save_model_directory(directory, encoder=self.encoder, head=self.head, tokenizer=tokenizer,
                                    metric_json={"metric": "self_eval", **(metadata or {}), "head_dropout": self.head_dropout,
                                                  "representation": self.representation_name, "floor": self.floor})

    @classmethod
    def from_encoder(cls, name_or_path: str | None = None, *, head_dropout: float = 0.5,
                     freeze_encoder: bool = False, representation: str = "cls_mean", floor: bool = False) -> SelfEvalModel:
        from ml.models.encoder import load_encoder

        return cls(load_encoder(name_or_path), head_dropout=head_dropout, freeze_encoder=freeze_encoder,
                   representation=representation, floor=floor)

    @classmethod
    def load(cls, directory: str | Path) -> SelfEvalModel:
        from ml.models.encoder import load_encoder

        directory = Path(directory)
        meta = directory / "metric.json"
        info = json.loads(meta.read_text()) if meta.is_file() else {}
        if not (directory / "head.pt").is_file() or info.get("metric") != "self_eval":
            raise FileNotFoundError(f"{directory} is not a saved SelF-Eval model (no head.pt / metric.json)")
        # models saved before the option have no "representation": the paper's cls_mean
        model = cls(load_encoder(str(directory / "encoder")), head_dropout=float(info.get("head_dropout", 0.5)),
                    representation=info.get("representation", "cls_mean"), floor=bool(info.get("floor", False)))
        model.head.load_state_dict(torch.load(directory / "head.pt", map_location="cpu", weights_only=True))
        return model
