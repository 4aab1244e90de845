"""MDD-Eval's data augmentation (Zhang et al. AAAI 2022, Sec. 3.2): human-human dialogues become
(context, response) pairs with contexts of 1–4 turns, and every pair gets ``per_technique`` (10)
new responses from each technique:

- syntactic perturbation: ``word_drop`` (each word dropped with p = 0.15, at least one, never all),
  ``word_shuffle`` (the words permuted), ``word_repeat`` (one to three words doubled in place);
- random utterance selection: ``random_other_dialogue`` (a turn of another dialogue),
  ``random_generated`` (from the pool of generated responses), ``random_back_translated`` (from the
  pool of back-translations) — pools over the whole chunk of pairs;
- ``mask_fill``: a contiguous span (15 % of the response's tokens, at least one) blanked and filled
  by a masked language model given the context (any Hugging Face masked LM; top-10 sampling);
- ``back_translation``: the response translated by one seq2seq model and back by another (sampled);
- ``generation``: responses sampled from a dialogue model (causal or seq2seq) given the context.

A model-based technique without its model path is skipped with one line saying which and why
(``Augmenter.skipped``); the pools it would fill are empty, so the random selections from them are
skipped too; everything else still runs. The original pair is kept (technique ``original``); which
class each pair belongs to is the teacher's call (``ml.data.pseudo_labels``), not the technique's."""
from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

SYNTACTIC = ("word_drop", "word_shuffle", "word_repeat")
RANDOM_SELECTION = ("random_other_dialogue", "random_generated", "random_back_translated")
MODEL_BASED = ("mask_fill", "back_translation", "generation")
TECHNIQUES = ("original", *SYNTACTIC, *RANDOM_SELECTION, *MODEL_BASED)


@dataclass(frozen=True)
class DialoguePair:
    context: list[str]
    response: str
    id: str  # "<dialogue id>:<turn index>"


def dialogue_pairs(dialogues: Iterable[tuple[str, Sequence[str]]], *, max_context_turns: int = 4,
                   seed: int = 71) -> list[DialoguePair]:
    """Every turn after the first is a response; its context is the 1..``max_context_turns`` turns
    before it (the number drawn per pair, seeded, capped by what precedes it)."""
    rng = random.Random(seed)
    pairs = []
    for dialogue_id, turns in dialogues:
        turns = [t.strip() for t in turns if t and t.strip()]
        for i in range(1, len(turns)):
            size = min(i, rng.randint(1, max_context_turns))
            pairs.append(DialoguePair(turns[i - size:i], turns[i], f"{dialogue_id}:{i}"))
    return pairs


# -- syntactic perturbation ------------------------------------------------------------------------
def word_drop(text: str, rng: random.Random, p: float = 0.15) -> str:
    words = text.split()
    if len(words) < 2:
        return text
    kept = [w for w in words if rng.random() >= p]
    if len(kept) == len(words):
        kept.pop(rng.randrange(len(kept)))
    return " ".join(kept or [rng.choice(words)])


def word_shuffle(text: str, rng: random.Random) -> str:
    words = text.split()
    shuffled = words[:]
    for _ in range(5):  # a few tries to differ from the original (short replies may not)
        rng.shuffle(shuffled)
        if shuffled != words:
            break
    return " ".join(shuffled)


def word_repeat(text: str, rng: random.Random) -> str:
    words = text.split()
    if not words:
        return text
    for i in sorted(rng.sample(range(len(words)), min(len(words), rng.randint(1, 3))), reverse=True):
        words.insert(i, words[i])
    return " ".join(words)


# -- model-based techniques ------------------------------------------------------------------------
def _device(wanted: str = ""):
    from ml.devices import pick_device

    return pick_device(wanted or None)


class MaskFiller:
    """Blank a contiguous span of the response's tokens and sample each blank from a masked LM's top-k."""

    def __init__(self, path: str, *, device: str = "", span: float = 0.15, top_k: int = 10, max_length: int = 128):
        import torch
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        self.torch, self.device, self.span, self.top_k, self.max_length = torch, _device(device), span, top_k, max_length
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if self.tokenizer.mask_token_id is None:
            raise ValueError(f"mask model {path}: its tokenizer has no mask token (not a masked LM)")
        self.model = AutoModelForMaskedLM.from_pretrained(path).to(self.device).eval()

    def __call__(self, pairs: Sequence[DialoguePair], n: int, rng: random.Random) -> list[list[str]]:
        from ml.data.packing import collate, pack

        torch, tok = self.torch, self.tokenizer
        inputs, spans = [], []
        for pair in pairs:
            response = tok.encode(pair.response, add_special_tokens=False)[: self.max_length // 2]
            for _ in range(n):
                length = max(1, round(self.span * len(response))) if response else 0
                start = rng.randrange(len(response) - length + 1) if response else 0
                masked = response[:start] + [tok.mask_token_id] * length + response[start + length:]
                packed = pack(tok, pair.context, "", max_length=self.max_length)  # context fitted first
                ids = packed["input_ids"][:-1] + masked + packed["input_ids"][-1:]
                ids = ids[-self.max_length:]
                inputs.append({"input_ids": ids, "attention_mask": [1] * len(ids)})
                spans.append((response, start, length))
        batch = collate(inputs, tok.pad_token_id or 0)
        generator = torch.Generator().manual_seed(rng.randrange(2**31))
        with torch.inference_mode():
            logits = self.model(**{k: v.to(self.device) for k, v in batch.items()}).logits.float().cpu()
        out = []
        for row, (response, start, length) in enumerate(spans):
            positions = (batch["input_ids"][row] == tok.mask_token_id).nonzero().flatten().tolist()
            filled = list(response)
            for offset, position in enumerate(positions[:length]):
                scores = logits[row, position].clone()
                scores[tok.all_special_ids] = float("-inf")
                top = scores.topk(self.top_k)
                pick = top.indices[torch.multinomial(torch.softmax(top.values, -1), 1, generator=generator)].item()
                filled[start + offset] = pick
            out.append(tok.decode(filled, skip_special_tokens=True).strip())
        return [out[i * n:(i + 1) * n] for i in range(len(pairs))]


def _sample(model, tokenizer, texts: list[str], n: int, *, device, max_new_tokens: int, seed: int,
            sample: bool = True, decoder_only: bool = False) -> list[list[str]]:
    """n sampled continuations per text (greedy when ``sample`` is False and n = 1)."""
    import torch

    torch.manual_seed(seed)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    if decoder_only:
        tokenizer.padding_side = "left"
    encoded = tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=128).to(device)
    encoded.pop("token_type_ids", None)
    with torch.inference_mode():
        generated = model.generate(**encoded, do_sample=sample, top_k=50 if sample else None, num_return_sequences=n,
                                   max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id)
    if decoder_only:
        generated = generated[:, encoded["input_ids"].shape[1]:]
    decoded = [t.strip().split("\n")[0].strip() for t in tokenizer.batch_decode(generated, skip_special_tokens=True)]
    return [decoded[i * n:(i + 1) * n] for i in range(len(texts))]


class BackTranslator:
    """Response → (forward model, greedy) → pivot language → (backward model, sampled) → n paraphrases."""

    def __init__(self, forward_path: str, backward_path: str, *, device: str = "", max_new_tokens: int = 48):
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        self.device, self.max_new_tokens = _device(device), max_new_tokens
        self.forward = [AutoModelForSeq2SeqLM.from_pretrained(forward_path).to(self.device).eval(),
                        AutoTokenizer.from_pretrained(forward_path)]
        self.backward = [AutoModelForSeq2SeqLM.from_pretrained(backward_path).to(self.device).eval(),
                         AutoTokenizer.from_pretrained(backward_path)]

    def __call__(self, pairs: Sequence[DialoguePair], n: int, rng: random.Random) -> list[list[str]]:
        pivot = [v[0] for v in _sample(*self.forward, [p.response for p in pairs], 1, device=self.device,
                                       max_new_tokens=self.max_new_tokens, seed=rng.randrange(2**31), sample=False)]
        return _sample(*self.backward, [t or "." for t in pivot], n, device=self.device,
                       max_new_tokens=self.max_new_tokens, seed=rng.randrange(2**31))


class ResponseGenerator:
    """n responses sampled from a dialogue model given the context (turns joined by new lines)."""

    def __init__(self, path: str, *, device: str = "", max_new_tokens: int = 32):
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

        self.device, self.max_new_tokens = _device(device), max_new_tokens
        self.decoder_only = not AutoConfig.from_pretrained(path).is_encoder_decoder
        loader = AutoModelForCausalLM if self.decoder_only else AutoModelForSeq2SeqLM
        self.model = loader.from_pretrained(path).to(self.device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(path)

    def __call__(self, pairs: Sequence[DialoguePair], n: int, rng: random.Random) -> list[list[str]]:
        prompts = ["\n".join(p.context) + ("\n" if self.decoder_only else "") for p in pairs]
        return _sample(self.model, self.tokenizer, prompts, n, device=self.device, max_new_tokens=self.max_new_tokens,
                       seed=rng.randrange(2**31), decoder_only=self.decoder_only)


# -- the augmenter ---------------------------------------------------------------------------------
@dataclass
class Augmenter:
    per_technique: int = 10
    mask_model: str = ""
    translate_forward: str = ""
    translate_backward: str = ""
    generator_model: str = ""
    device: str = ""
    seed: int = 71
    skipped: dict[str, str] = field(default_factory=dict)  # technique -> why
    _models: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if not self.mask_model:
            self.skipped["mask_fill"] = "no masked language model given (mask model path empty)"
        if not (self.translate_forward and self.translate_backward):
            self.skipped["back_translation"] = ("needs two seq2seq translation models (forward and backward paths); "
                                                f"given: {self.translate_forward or '-'} / {self.translate_backward or '-'}")
        if not self.generator_model:
            self.skipped["generation"] = "no dialogue model given (generator model path empty)"
        for technique, pool in (("random_generated", "generation"), ("random_back_translated", "back_translation")):
            if pool in self.skipped:
                self.skipped[technique] = f"its pool is empty: {pool} is skipped"

    def skip_lines(self) -> list[str]:
        return [f"{technique} skipped: {why}" for technique, why in self.skipped.items()]

    def _model(self, technique: str):
        if technique not in self._models:
            if technique == "mask_fill":
                self._models[technique] = MaskFiller(self.mask_model, device=self.device)
            elif technique == "back_translation":
                self._models[technique] = BackTranslator(self.translate_forward, self.translate_backward,
                                                         device=self.device)
            else:
                self._models[technique] = ResponseGenerator(self.generator_model, device=self.device)
        return self._models[technique]

    def augment(self, pairs: Sequence[DialoguePair], *, chunk: int = 0, batch_size: int = 16) -> list[dict]:
        """The records of one chunk of pairs: each original and its augmented responses. ``chunk`` seeds
        the draws, so a chunk redone after a crash gives the same records."""
        rng = random.Random(self.seed * 100003 + chunk)
        n = self.per_technique
        made: dict[str, list[list[str]]] = {}
        for technique in MODEL_BASED:
            if technique in self.skipped:
                continue
            model, made[technique] = self._model(technique), []
            for start in range(0, len(pairs), batch_size):
                made[technique] += model(pairs[start:start + batch_size], n, rng)
        pools = {"random_generated": [t for v in made.get("generation", []) for t in v if t],
                 "random_back_translated": [t for v in made.get("back_translation", []) for t in v if t]}
        records = []
        for index, pair in enumerate(pairs):
            dialogue = pair.id.rsplit(":", 1)[0]
            back = made.get("back_translation", [[]] * len(pairs))[index]
            variants = {"original": [pair.response],
                        "word_drop": [word_drop(pair.response, rng) for _ in range(n)],
                        "word_shuffle": [word_shuffle(pair.response, rng) for _ in range(n)],
                        "word_repeat": [word_repeat(pair.response, rng) for _ in range(n)],
                        "random_other_dialogue": self._others(pairs, dialogue, n, rng)}
            for technique, pool in pools.items():
                if technique not in self.skipped and pool:
                    variants[technique] = [rng.choice(pool) for _ in range(n)]
            for technique in MODEL_BASED:
                if technique in made:
                    variants[technique] = made[technique][index]
            for technique, responses in variants.items():
                for response in responses:
                    if response and response.strip():
                        record = {"pair": pair.id, "context": pair.context, "response": response.strip(),
                                  "technique": technique, "original": pair.response}
                        if technique == "original" and back:
                            record["noised"] = back[0]  # x̂ for the student's consistency term
                        records.append(record)
        return records

    @staticmethod
    def _others(pairs: Sequence[DialoguePair], dialogue: str, n: int, rng: random.Random) -> list[str]:
        others = [p.response for p in pairs if p.id.rsplit(":", 1)[0] != dialogue]
        return [rng.choice(others) for _ in range(n)] if others else []


def technique_counts(records: Iterable[dict]) -> dict[str, int]:
    counts = Counter(r["technique"] for r in records)
    return {t: counts.get(t, 0) for t in TECHNIQUES}
