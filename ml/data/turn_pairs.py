"""Per-turn embeddings for SelF-Eval's optional ``pairs`` representation (``ml.models.self_eval``).

Each distinct turn text is embedded once by the frozen sentence encoder: tokenized alone (plain text,
no speaker label, as the encoder was trained on sentences), mean-pooled over its tokens and normalised to
unit length. A dialogue is then the (n, H) stack of its turns' vectors; dialogues are padded to (B, T, H)
with all-zero rows, which the model reads as padding (a unit vector is never zero).

Turn replacement makes most turns recur across a dialogue's samples (level 0 holds every turn, and the
replacement turns are other dialogues' turns), so embedding the distinct texts once costs about one
encoder pass per turn of the data set instead of one per packed sample of up to 512 tokens."""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from ml.data.packing import single_template
from ml.devices import pick_device
from ml.embedding import embed


def embed_turns(encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], *,
                max_length: int = 512, batch_size: int = 64, device: str | torch.device | None = None,
                on_progress=None) -> tuple[dict[str, torch.Tensor], int]:
    """{distinct text: its unit-norm embedding (H,) on the CPU}, and how many distinct texts were longer
    than ``max_length`` tokens (cut, keeping their beginning). Through the on-disk embedding cache
    (``ml.embedding``): batched by length, inference mode, bf16 on CUDA."""
    target = pick_device(device) if not isinstance(device, torch.device) else device
    unique = sorted(set(texts), key=len)
    before, after = single_template(tokenizer)
    room = max_length - len(before) - len(after)
    tokens = [tokenizer.encode(text, add_special_tokens=False) for text in unique]
    truncated = sum(len(ids) > room for ids in tokens)
    packed = [{"input_ids": [*before, *ids[:room], *after]} for ids in tokens]
    for item in packed:
        item["attention_mask"] = [1] * len(item["input_ids"])
        if "token_type_ids" in tokenizer.model_input_names:
            item["token_type_ids"] = [0] * len(item["input_ids"])
    rows = embed(encoder, packed, tokenizer.pad_token_id, target, batch_size=batch_size,
                 progress=None if on_progress else "embedding turns", on_progress=on_progress)
    return {text: F.normalize(row, dim=-1) for text, row in zip(unique, rows, strict=True)}, truncated


def pad_turns(dialogues: Sequence[torch.Tensor], turns: int | None = None) -> torch.Tensor:
    """(n_i, H) per dialogue -> (B, T, H), T = ``turns`` or the longest, zero rows after each dialogue's turns."""
    width = turns if turns is not None else max(len(d) for d in dialogues)
    hidden = dialogues[0].shape[-1]
    out = torch.zeros(len(dialogues), width, hidden)
    for row, stack in enumerate(dialogues):
        out[row, :len(stack)] = stack
    return out


def turn_features(vectors: dict[str, torch.Tensor], dialogues: Sequence[Sequence[str]], turns: int | None = None
                  ) -> torch.Tensor:
    """Dialogues as texts -> (B, T, H) from their turns' vectors (a dialogue without turns: all zero rows)."""
    hidden = next(iter(vectors.values())).shape[-1] if vectors else 1
    return pad_turns([torch.stack([vectors[t] for t in d]) if d else torch.zeros(0, hidden) for d in dialogues],
                     turns if turns is not None else max([1, *(len(d) for d in dialogues)]))


class TurnPairsDataset(torch.utils.data.Dataset):
    """Like a feature-cached ``ml.data.replacement.ReplacementDataset`` (item m = (features of its samples,
    their (rising-quality level, slot) places, levels of m); ``ReplacementCollator`` batches it), but the
    features are each sample's padded turn embeddings (count, T, H), T = the longest dialogue of the set."""

    def __init__(self, groups, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, *, max_length: int = 512,
                 device: str | torch.device | None = None, on_progress=None):
        texts = [t for group in groups for sample in group.samples() for t in sample.turns]
        vectors, self.truncated = embed_turns(encoder, tokenizer, texts, max_length=max_length, device=device,
                                              on_progress=on_progress)
        self.distinct_turns = len(vectors)
        longest = max((len(sample.turns) for group in groups for sample in group.samples()), default=1)
        self.items = []
        for group in groups:
            samples, places = [], []
            for level in group.levels:
                for slot, sample in enumerate(level):
                    samples.append(sample.turns)
                    places.append((group.n - sample.replaced, slot))
            self.items.append((turn_features(vectors, samples, longest), places, group.n + 1))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        return self.items[index]


def score_dialogues_by_pairs(model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase,
                             dialogues: Sequence[Sequence[str]], *, batch_size: int = 32, max_length: int = 512,
                             device: str | None = None) -> tuple[list[float], int]:
    """(scores in input order, how many distinct turns were cut) for a ``pairs`` SelF-Eval model."""
    target = pick_device(device)
    vectors, truncated = embed_turns(model.encoder, tokenizer, [t for d in dialogues for t in d],
                                     max_length=max_length, device=target)
    model = model.to(target).eval()
    scores: list[float] = []
    with torch.inference_mode():
        for start in range(0, len(dialogues), batch_size):
            chunk = [list(d) for d in dialogues[start:start + batch_size]]
            scores += model(features=turn_features(vectors, chunk).to(target)).score.float().cpu().tolist()
    return scores, truncated
