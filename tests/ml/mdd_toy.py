"""Tiny random models for MDD-Eval's tests, built from a config with the packaged MiniLM's tokenizer
(nothing downloaded): a BERT masked LM, a BART seq2seq model (translation) and a GPT-2 causal LM
(dialogue generation)."""
from pathlib import Path

import torch
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    BertConfig,
    BertForMaskedLM,
    GPT2Config,
    GPT2LMHeadModel,
)

from ml.models import load_tokenizer


def tiny_masked_lm_dir(path: Path, *, hidden: int = 32, seed: int = 0) -> Path:
    tokenizer = load_tokenizer()
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=2 * hidden, max_position_embeddings=160)
    BertForMaskedLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def tiny_seq2seq_dir(path: Path, *, seed: int = 0) -> Path:
    tokenizer = load_tokenizer()
    torch.manual_seed(seed)
    config = BartConfig(vocab_size=len(tokenizer), d_model=16, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                        max_position_embeddings=160, pad_token_id=tokenizer.pad_token_id,
                        bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                        decoder_start_token_id=tokenizer.cls_token_id, forced_eos_token_id=None)
    BartForConditionalGeneration(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def tiny_causal_lm_dir(path: Path, *, seed: int = 0) -> Path:
    tokenizer = load_tokenizer()
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=16, n_layer=1, n_head=2, n_positions=256,
                        bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                        pad_token_id=tokenizer.pad_token_id)
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
