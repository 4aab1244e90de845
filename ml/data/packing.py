"""Packing a context and a response into one encoder input.

    BERT:     [CLS] context [SEP] response [SEP]        RoBERTa: <s> context </s></s> response </s>

(the tokenizer's own special tokens). Context turns are joined with ``joiner``. Inputs longer than
``max_length`` lose context tokens first — the **oldest** by default (the start of the context), or
the newest (``truncate="newest"``, as QuantiDCE's released code did); the response is cut only when
it alone does not fit."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerBase


@dataclass(frozen=True)
class PairTemplate:
    """The special tokens a tokenizer puts around a pair (read off the tokenizer, not hard-coded)."""

    prefix: list[int]
    middle: list[int]
    suffix: list[int]
    types: tuple[int, int, int, int, int] | None  # prefix, first, middle, second, suffix


_TEMPLATES: dict = {}  # per tokenizer: its PairTemplate, and its single-sequence tokens


def pair_template(tokenizer: PreTrainedTokenizerBase) -> PairTemplate:
    key = id(tokenizer)
    if key not in _TEMPLATES:
        first = tokenizer.encode("a", add_special_tokens=False)
        second = tokenizer.encode("b", add_special_tokens=False)
        encoded = tokenizer("a", "b", return_token_type_ids="token_type_ids" in tokenizer.model_input_names)
        ids = encoded["input_ids"]
        start = next(i for i in range(len(ids)) if ids[i:i + len(first)] == first)
        end = next(i for i in range(start + len(first), len(ids)) if ids[i:i + len(second)] == second)
        types = None
        if "token_type_ids" in encoded:
            t = encoded["token_type_ids"]
            types = (t[0] if start else 0, t[start], t[start + len(first)] if end > start + len(first) else t[start],
                     t[end], t[-1])
        _TEMPLATES[key] = PairTemplate(ids[:start], ids[start + len(first):end], ids[end + len(second):], types)
    return _TEMPLATES[key]


def pack(tokenizer: PreTrainedTokenizerBase, context: Sequence[str], response: str, *, max_length: int = 128,
         truncate: str = "oldest", joiner: str = " ", context_turns: int = 0) -> dict[str, list[int]]:
    """``context_turns``: keep only the newest N turns of the context (0 = all)."""
    if truncate not in ("oldest", "newest"):
        raise ValueError("truncate must be 'oldest' or 'newest'")
    context = list(context)[-context_turns:] if context_turns else context
    context_ids = tokenizer.encode(joiner.join(context), add_special_tokens=False)
    response_ids = tokenizer.encode(response, add_special_tokens=False)
    template = pair_template(tokenizer)
    special = len(template.prefix) + len(template.middle) + len(template.suffix)
    response_ids = response_ids[: max_length - special]
    budget = max_length - special - len(response_ids)
    if len(context_ids) > budget:
        context_ids = context_ids[len(context_ids) - budget:] if truncate == "oldest" else context_ids[:budget]
    parts = (template.prefix, context_ids, template.middle, response_ids, template.suffix)
    input_ids = [token for part in parts for token in part]
    packed = {"input_ids": input_ids, "attention_mask": [1] * len(input_ids)}
    if template.types is not None:
        packed["token_type_ids"] = [kind for part, kind in zip(parts, template.types, strict=True) for _ in part]
    return packed


RESPONSE = "response_"  # key prefix of the response's own input in a separately packed pair


def single_template(tokenizer: PreTrainedTokenizerBase) -> tuple[list[int], list[int]]:
    """The special tokens around one sequence (BERT: [CLS] … [SEP]), read off the tokenizer."""
    key = ("single", id(tokenizer))
    if key not in _TEMPLATES:
        text = tokenizer.encode("a", add_special_tokens=False)
        ids = tokenizer("a")["input_ids"]
        start = next(i for i in range(len(ids)) if ids[i:i + len(text)] == text)
        _TEMPLATES[key] = (ids[:start], ids[start + len(text):])
    return _TEMPLATES[key]


def pack_separate(tokenizer: PreTrainedTokenizerBase, context: Sequence[str], response: str, *, max_length: int = 128,
                  truncate: str = "oldest", joiner: str = " ", context_turns: int = 0) -> dict[str, list[int]]:
    """Context and response as two inputs, ``[CLS] context [SEP]`` and ``[CLS] response [SEP]`` (keys
    ``input_ids``… and ``response_input_ids``…), for the paired representation: a sentence encoder
    embeds each text alone, as it was trained to. Each is cut to ``max_length`` (the context losing its
    oldest tokens, or its newest with ``truncate="newest"``; the response its end)."""
    if truncate not in ("oldest", "newest"):
        raise ValueError("truncate must be 'oldest' or 'newest'")
    context = list(context)[-context_turns:] if context_turns else context
    return {**pack_single(tokenizer, joiner.join(context), max_length=max_length, keep_end=truncate == "oldest"),
            **pack_single(tokenizer, response, max_length=max_length, keep_end=False, prefix=RESPONSE)}


def pack_single(tokenizer: PreTrainedTokenizerBase, text: str, *, max_length: int, keep_end: bool,
                prefix: str = "") -> dict[str, list[int]]:
    """One text as ``[CLS] text [SEP]`` under keys ``prefix + input_ids``…, cut to ``max_length`` keeping
    its end (``keep_end``) or its beginning."""
    before, after = single_template(tokenizer)
    room = max_length - len(before) - len(after)
    encoded = tokenizer.encode(text, add_special_tokens=False)
    encoded = (encoded[len(encoded) - room:] if keep_end else encoded[:room]) if len(encoded) > room else encoded
    ids = [*before, *encoded, *after]
    out = {prefix + "input_ids": ids, prefix + "attention_mask": [1] * len(ids)}
    if "token_type_ids" in tokenizer.model_input_names:
        out[prefix + "token_type_ids"] = [0] * len(ids)
    return out


LAST = "last_"  # key prefix of the last context turn's own input (the ``windows`` representation)
PREFIXES = ("", RESPONSE, LAST)


def pack_windows(tokenizer: PreTrainedTokenizerBase, context: Sequence[str], response: str, *, max_length: int = 128,
                 truncate: str = "oldest", joiner: str = " ") -> dict[str, list[int]]:
    """``pack_separate``'s two inputs plus the last context turn alone (keys ``last_input_ids``…), for the
    ``windows`` representation: the response is compared with the whole context and with the turn it
    answers."""
    last = list(context)[-1:]
    return {**pack_separate(tokenizer, context, response, max_length=max_length, truncate=truncate, joiner=joiner),
            **pack_single(tokenizer, last[0] if last else "", max_length=max_length, keep_end=truncate == "oldest",
                          prefix=LAST)}


def pack_for(representation: str):
    """The packing a representation needs: ``pack_separate`` for ``paired``, ``pack_windows`` for
    ``windows``, ``pack`` (one cross-encoded pair) otherwise."""
    return {"paired": pack_separate, "windows": pack_windows}.get(representation, pack)


def packed_length(packed: dict[str, list[int]]) -> int:
    return sum(len(packed.get(prefix + "input_ids", ())) for prefix in PREFIXES)


def pad_multiple(device: torch.device) -> int:
    """8 on CUDA, 1 elsewhere. Measured on an H100 (MiniLM, bf16): the first sight of each new batch width
    cost ~0.5 s of kernel selection and loading, 20 times a warm step; on CPU padding would only add work."""
    return 8 if device.type == "cuda" else 1


def input_prefix(key: str) -> str:
    """Which input of a separately packed pair a key belongs to ("" = the context)."""
    return next((p for p in PREFIXES[1:] if key.startswith(p)), "")


def collate(batch: Sequence[dict[str, list[int]]], pad_id: int, multiple_of: int = 1) -> dict[str, torch.Tensor]:
    """Dynamic padding: pad to the longest input of the batch, not to max_length, rounded up to
    ``multiple_of`` (8 on CUDA: bf16 tensor-core kernels want aligned shapes, and fewer distinct widths
    mean fewer one-off cuBLAS kernel choices — see ``pad_multiple``). A separately packed pair
    (``pack_separate``) pads its context and its response inputs each to their own longest."""
    out = {}
    for prefix in PREFIXES:
        if prefix + "input_ids" not in batch[0]:
            continue
        longest = max(len(item[prefix + "input_ids"]) for item in batch)
        width = -(-longest // multiple_of) * multiple_of
        for key in (k for k in batch[0] if input_prefix(k) == prefix):
            fill = pad_id if key == prefix + "input_ids" else 0
            out[key] = torch.tensor([item[key] + [fill] * (width - len(item[key])) for item in batch], dtype=torch.long)
    return out
