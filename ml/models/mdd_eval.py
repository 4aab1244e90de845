"""MDD-Eval's classifier (Zhang et al. AAAI 2022): an encoder reads the cross-encoded pair
``[CLS] context [SEP] response [SEP]`` and a head maps its first token's hidden state h to three
classes, ordered by rising quality — 0 random, 1 adversarial, 2 relevant:

    z = W2 · tanh(W1 · dropout(h) + b1) + b2,   p = softmax(z),   score = p_relevant

(the head of the released RoBERTa classifier). Teacher and student share it. Besides the first token
(``cls``, the paper), h can be the mean of the pair's hidden states (``mean``) or, as QuantiDCE's
``paired`` option (``ml.models.quantidce``), Sentence-BERT pair features of context and response
encoded apart — the representation a frozen sentence encoder such as the packaged MiniLM serves. The student also
trains a masked-LM head on the same encoder: the encoder's own where the checkpoint has one (a BERT
or RoBERTa masked LM), else a new one whose decoder is tied to the input embeddings; encoders without
a masked-LM class have none (the MLM term is then off). Scores never see masked inputs."""
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
from ml.trainers.config import REPRESENTATIONS

LABELS = ("random", "adversarial", "relevant")


@dataclass
class MDDEvalOutput:
    logits: torch.Tensor  # (batch, 3)
    score: torch.Tensor  # (batch,) P(relevant | context, response)


def load_masked_lm(name_or_path: str | None) -> tuple[PreTrainedModel, str]:
    """The encoder as a masked LM, and where its MLM head came from: ``pretrained`` (in the checkpoint),
    ``initialised`` (new, decoder tied to the embeddings) or ``none`` (no masked-LM class: a bare encoder)."""
    from transformers import AutoModelForMaskedLM

    from ml.models.encoder import default_encoder_path, load_encoder, quiet_loading

    path = name_or_path or default_encoder_path()
    try:
        # a sentence encoder (the packaged MiniLM) ships no masked-LM head: transformers would report its
        # missing weights as a corrupted checkpoint; the head is expected to be new, and the caller says so
        with quiet_loading():
            model, info = AutoModelForMaskedLM.from_pretrained(path, dtype=torch.float32, output_loading_info=True)
    except ValueError:  # the architecture has no masked-LM head class
        return load_encoder(path), "none"
    prefix = model.base_model_prefix
    head_missing = any(not key.startswith(prefix + ".") for key in info.get("missing_keys", ()))
    if head_missing:
        model.tie_weights()  # the new decoder shares the input embeddings (BERT's tying)
    return model, "initialised" if head_missing else "pretrained"


class MDDEvalModel(nn.Module):
    def __init__(self, backbone: PreTrainedModel, *, mlm_head: str = "none", dropout: float = 0.1,
                 freeze_encoder: bool = False, representation: str = "cls", floor: bool = False):
        super().__init__()
        if representation not in REPRESENTATIONS:
            raise ValueError(f"representation must be one of {', '.join(REPRESENTATIONS)}, not {representation!r}")
        if floor and representation != "paired":
            raise ValueError("floor: the head starts from the cosine of context and response (representation paired)")
        self.backbone, self.mlm_head, self.representation, self.floor = backbone, mlm_head, representation, floor
        # a masked-LM model holds the encoder as its base model; a bare encoder is its own
        self.encoder = backbone.base_model if mlm_head != "none" else backbone
        self.freeze_encoder = freeze_encoder
        if freeze_encoder:
            backbone.requires_grad_(False)
        hidden = self.encoder.config.hidden_size
        width = 4 * hidden + 1 if representation == "paired" else hidden
        # floor (ml.models.floor): the relevant class's logit starts as w·cos(context, response) + b
        self.head = head_for(nn.Sequential(nn.Dropout(dropout), nn.Linear(width, hidden), nn.Tanh(), nn.Dropout(dropout),
                                           nn.Linear(hidden, len(LABELS))), floor, column=LABELS.index("relevant"))

    @property
    def has_mlm(self) -> bool:
        return self.mlm_head != "none"

    def train(self, mode: bool = True) -> MDDEvalModel:
        super().train(mode)
        if self.freeze_encoder:
            self.backbone.eval()
        return self

    def _hidden(self, input_ids, attention_mask, token_type_ids) -> torch.Tensor:
        extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, response_input_ids: torch.Tensor | None = None,
                response_attention_mask: torch.Tensor | None = None, response_token_type_ids: torch.Tensor | None = None,
                *, features: torch.Tensor | None = None) -> MDDEvalOutput:
        """``features``: the pair representation computed beforehand by the frozen encoder (``paired``:
        ``ml.embedding``), so only the head runs."""
        if features is not None:
            logits = self.head(features)
            return MDDEvalOutput(logits, torch.softmax(logits.float(), dim=-1)[:, LABELS.index("relevant")])
        hidden = self._hidden(input_ids, attention_mask, token_type_ids)
        if self.representation == "paired":
            if response_input_ids is None:
                raise ValueError("the paired representation needs response_input_ids (pack with pack_separate)")
            reply = self._hidden(response_input_ids, response_attention_mask, response_token_type_ids)
            pooled = pair_features(mean_pool(hidden, attention_mask), mean_pool(reply, response_attention_mask))
        elif self.representation == "mean":
            pooled = mean_pool(hidden, attention_mask)
        else:
            pooled = hidden[:, 0]
        logits = self.head(pooled)
        return MDDEvalOutput(logits, torch.softmax(logits.float(), dim=-1)[:, LABELS.index("relevant")])

    def mlm_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   token_type_ids: torch.Tensor | None = None, *, positions: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T, V) vocabulary logits; with ``positions`` (a (B, T) bool mask of the chosen tokens) only
        theirs, (N, V): the vocabulary projection is the costly part and only ~15 % of the tokens need it."""
        if not self.has_mlm:
            raise ValueError("this encoder has no masked-LM head")
        head = getattr(self.backbone, "cls", None) or getattr(self.backbone, "lm_head", None)
        if positions is None or head is None:  # an architecture whose head is not BERT's cls / RoBERTa's lm_head
            extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
            logits = self.backbone(input_ids=input_ids, attention_mask=attention_mask, **extra).logits
            return logits if positions is None else logits[positions]
        return head(self._hidden(input_ids, attention_mask, token_type_ids)[positions])

    # -- a self-describing model directory: encoder/ (weights + tokenizer), head.pt, metric.json ------
    def save(self, directory: str | Path, *, tokenizer=None, metadata: dict | None = None) -> Path:
        return save_model_directory(directory, encoder=self.backbone, head=self.head, tokenizer=tokenizer,
                                    metric_json={"metric": "mdd_eval", **(metadata or {}), "labels": list(LABELS),
                                                  "mlm_head": self.mlm_head, "representation": self.representation,
                                                  "floor": self.floor})

    @classmethod
    def from_encoder(cls, name_or_path: str | None = None, *, freeze_encoder: bool = False, dropout: float = 0.1,
                     representation: str = "cls", floor: bool = False) -> MDDEvalModel:
        backbone, mlm_head = load_masked_lm(name_or_path)
        return cls(backbone, mlm_head=mlm_head, freeze_encoder=freeze_encoder, dropout=dropout,
                   representation=representation, floor=floor)

    @classmethod
    def load(cls, directory: str | Path, *, freeze_encoder: bool = False) -> MDDEvalModel:
        directory = Path(directory)
        meta = directory / "metric.json"
        if not (directory / "head.pt").is_file() or not meta.is_file() or \
                json.loads(meta.read_text()).get("metric") != "mdd_eval":
            raise FileNotFoundError(f"{directory} is not a saved MDD-Eval model (no head.pt / metric.json of mdd_eval)")
        backbone, mlm_head = load_masked_lm(str(directory / "encoder"))
        saved = json.loads(meta.read_text())
        model = cls(backbone, mlm_head=saved.get("mlm_head", mlm_head) if mlm_head != "none" else "none",
                    freeze_encoder=freeze_encoder, representation=saved.get("representation", "cls"),
                    floor=bool(saved.get("floor", False)))
        model.head.load_state_dict(torch.load(directory / "head.pt", map_location="cpu", weights_only=True))
        return model
