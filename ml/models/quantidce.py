"""QuantiDCE's scorer (Ye et al. ACL 2021): encoder → pair representation h → MLP → sigmoid.

    s = σ(W3 · ELU(W2 · ELU(W1 · h + b1) + b2) + b3),   W1: D→H/2, W2: H/2→H/4, W3: H/4→1

(768→384→192→1 for BERT-base; the sizes follow the encoder's hidden size H). The representation h:

- ``cls`` (the paper): the cross-encoded pair ``[CLS] context [SEP] response [SEP]``; h = the
  encoder's pooler output where it has one, else the [CLS] hidden state (D = H);
- ``mean``: the same cross-encoded pair, h = the mean of its last hidden states (D = H);
- ``paired``: context and response encoded *separately* and mean-pooled to unit vectors u, v (what a
  sentence-transformers checkpoint such as the packaged MiniLM was trained to produce), h = [u; v;
  |u − v|; u∘v; cos(u, v)] (Sentence-BERT's pair features, Reimers & Gurevych 2019, plus the cosine;
  D = 4H + 1). The inputs carry ``response_input_ids``… beside the context's ``input_ids`` (see
  ``ml.data.packing.pack_separate``);
- ``windows`` (the default): the ``paired`` features of the response with two context windows, the
  whole context u and its last turn w, scored by one shared head and averaged before the sigmoid:

      s = σ(½ · (f([u; v; |u − v|; u∘v; cos(u, v)]) + f([w; v; |w − v|; w∘v; cos(w, v)])))

  (f the MLP above; inputs ``last_input_ids``… beside the others, ``ml.data.packing.pack_windows``).
  The ablation (docs/quantidce_ablation.md) found the whole context alone transfers to FED but
  not to GRADE, the last turn alone the reverse; the two windows together beat both untrained baselines
  on both sets on average over seeds (five of six seeds each; margins within the bootstrap noise).

With a frozen encoder the pair features can be computed once (``ml.data.frozen_features``) and passed
as ``features``: the model then runs the head only."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel

from ml.embedding import mean_pool
from ml.models.encoder import save_model_directory
from ml.models.floor import head_for
from ml.trainers.config import QUANTIDCE_REPRESENTATIONS as REPRESENTATIONS

SEPARATE = ("paired", "windows")  # representations whose texts are embedded apart


@dataclass
class QuantiDCEOutput:
    score: torch.Tensor  # (batch,) in (0, 1)
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


def pair_features(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """[u; v; |u − v|; u∘v; cos(u, v)] of unit-normalised u, v: (B, H), (B, H) -> (B, 4H + 1)."""
    u, v = F.normalize(u, dim=-1), F.normalize(v, dim=-1)
    return torch.cat([u, v, (u - v).abs(), u * v, (u * v).sum(-1, keepdim=True)], dim=-1)


class QuantiDCEModel(nn.Module):
    def __init__(self, encoder: PreTrainedModel, representation: str = "cls", *, freeze_encoder: bool = False,
                 floor: bool = False):
        super().__init__()
        if representation not in REPRESENTATIONS:
            raise ValueError(f"representation must be one of {', '.join(REPRESENTATIONS)}, not {representation!r}")
        if floor and representation not in SEPARATE:
            raise ValueError("floor: the head starts from the cosine of texts embedded apart (paired or windows), "
                             f"not {representation!r}")
        self.encoder, self.representation, self.freeze_encoder, self.floor = encoder, representation, freeze_encoder, floor
        if freeze_encoder:
            encoder.requires_grad_(False)
        hidden = encoder.config.hidden_size
        width = 4 * hidden + 1 if representation in SEPARATE else hidden
        self.head = head_for(nn.Sequential(nn.Linear(width, hidden // 2), nn.ELU(), nn.Linear(hidden // 2, hidden // 4),
                                           nn.ELU(), nn.Linear(hidden // 4, 1)), floor)

    def train(self, mode: bool = True) -> QuantiDCEModel:
        super().train(mode)
        if self.freeze_encoder:
            self.encoder.eval()  # a frozen encoder also keeps its dropout off
        return self

    def _encode(self, input_ids, attention_mask, token_type_ids, output_hidden_states, output_attentions):
        extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=output_hidden_states,
                            output_attentions=output_attentions, **extra)

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, response_input_ids: torch.Tensor | None = None,
                response_attention_mask: torch.Tensor | None = None, response_token_type_ids: torch.Tensor | None = None,
                last_input_ids: torch.Tensor | None = None, last_attention_mask: torch.Tensor | None = None,
                last_token_type_ids: torch.Tensor | None = None, *, features: torch.Tensor | None = None,
                output_hidden_states: bool = False, output_attentions: bool = False) -> QuantiDCEOutput:
        if features is not None:  # computed beforehand by the frozen encoder (ml.data.frozen_features)
            return QuantiDCEOutput(self.score_features(features))
        out = self._encode(input_ids, attention_mask, token_type_ids, output_hidden_states, output_attentions)
        hidden_states, attentions = out.hidden_states, out.attentions
        if self.representation in SEPARATE:
            if response_input_ids is None:
                raise ValueError(f"the {self.representation} representation needs response_input_ids "
                                 f"(pack with {'pack_windows' if self.representation == 'windows' else 'pack_separate'})")
            encoded = [out, self._encode(response_input_ids, response_attention_mask, response_token_type_ids,
                                         output_hidden_states, output_attentions)]
            masks = [attention_mask, response_attention_mask]
            if self.representation == "windows":
                if last_input_ids is None:
                    raise ValueError("the windows representation needs last_input_ids (pack with pack_windows)")
                encoded.append(self._encode(last_input_ids, last_attention_mask, last_token_type_ids,
                                            output_hidden_states, output_attentions))
                masks.append(last_attention_mask)
            pooled = self.pair_representation(*(mean_pool(e.last_hidden_state, m) for e, m in zip(encoded, masks,
                                                                                                   strict=True)))
            # for distillation, one tensor per layer: each input's tokens in turn (attention maps flattened)
            if output_hidden_states:
                hidden_states = tuple(torch.cat(layer, dim=1) for layer in zip(*(e.hidden_states for e in encoded),
                                                                               strict=True))
            if output_attentions:
                attentions = tuple(torch.cat([a.flatten(2) for a in layer], dim=2)
                                   for layer in zip(*(e.attentions for e in encoded), strict=True))
        else:
            pooled = self.pooled(out, attention_mask)
        return QuantiDCEOutput(self.score_features(pooled), hidden_states if output_hidden_states else None,
                               attentions if output_attentions else None)

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
              token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """One text per row (``paired``/``windows`` inputs) -> its mean-pooled last hidden state (B, H)."""
        out = self._encode(input_ids, attention_mask, token_type_ids, False, False)
        return mean_pool(out.last_hidden_state.float(), attention_mask)

    def cross_pooled(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                     token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """One cross-encoded pair per row (``cls``/``mean`` inputs) -> h (B, H)."""
        return self.pooled(self._encode(input_ids, attention_mask, token_type_ids, False, False), attention_mask)

    def pooled(self, out, attention_mask: torch.Tensor) -> torch.Tensor:
        """h of a cross-encoded pair: its mean pooling (``mean``) or pooler output / [CLS] state (``cls``)."""
        if self.representation == "mean":
            return mean_pool(out.last_hidden_state, attention_mask)
        pooled = getattr(out, "pooler_output", None)
        return out.last_hidden_state[:, 0] if pooled is None else pooled

    def pair_representation(self, context: torch.Tensor, response: torch.Tensor,
                            last: torch.Tensor | None = None) -> torch.Tensor:
        """h from the mean-pooled embeddings of the texts encoded apart: (B, 4H + 1) for ``paired``,
        (B, 2, 4H + 1) for ``windows`` (whole context, then last turn)."""
        features = pair_features(context, response)
        return features if self.representation == "paired" else torch.stack([features, pair_features(last, response)], 1)

    def score_features(self, features: torch.Tensor) -> torch.Tensor:
        """σ(f(h)): (B, D) -> (B,); windows (B, W, D) -> σ(mean over W of f(h_w))."""
        logits = self.head(features).squeeze(-1)
        return torch.sigmoid(logits.mean(-1) if logits.dim() == 2 else logits)

    # -- a self-describing model directory: encoder/ (weights + tokenizer), head.pt, metric.json ------
    def save(self, directory: str | Path, *, tokenizer=None, metadata: dict | None = None) -> Path:
        return save_model_directory(directory, encoder=self.encoder, head=self.head, tokenizer=tokenizer,
                                    metric_json={"metric": "quantidce", **(metadata or {}), "representation": self.representation,
                                                 "floor": self.floor})

    @classmethod
    def from_encoder(cls, name_or_path: str | None = None, *, eager_attention: bool = False, representation: str = "cls",
                     freeze_encoder: bool = False, floor: bool = False) -> QuantiDCEModel:
        """A new scorer on a pretrained Hugging Face encoder (head randomly initialised; ``floor``: starting as
        the untrained cosine, ``ml.models.floor``)."""
        from ml.models.encoder import load_encoder

        return cls(load_encoder(name_or_path, eager_attention=eager_attention), representation,
                   freeze_encoder=freeze_encoder, floor=floor)

    @classmethod
    def load(cls, directory: str | Path, *, eager_attention: bool = False) -> QuantiDCEModel:
        """A model saved with ``save`` (``eager_attention`` when attention maps are needed, as for KD)."""
        from ml.models.encoder import load_encoder

        directory = Path(directory)
        if not (directory / "head.pt").is_file():
            raise FileNotFoundError(f"{directory} is not a saved QuantiDCE model (no head.pt)")
        meta = directory / "metric.json"
        floor = bool(json.loads(meta.read_text()).get("floor", False)) if meta.is_file() else False
        model = cls(load_encoder(str(directory / "encoder"), eager_attention=eager_attention),
                    saved_representation(directory), floor=floor)
        model.head.load_state_dict(torch.load(directory / "head.pt", map_location="cpu", weights_only=True))
        return model


def saved_representation(directory: str | Path) -> str:
    """The representation a saved model was trained with (models saved before the option: ``cls``)."""
    meta = Path(directory) / "metric.json"
    return json.loads(meta.read_text()).get("representation", "cls") if meta.is_file() else "cls"
