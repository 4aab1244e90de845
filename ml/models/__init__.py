"""Encoders and metric heads (any Hugging Face encoder: BERT, RoBERTa, MiniLM; a path or a name)."""
from ml.models.encoder import default_encoder_path, load_tokenizer
from ml.models.quantidce import QuantiDCEModel, QuantiDCEOutput
from ml.models.self_eval import SelfEvalModel, SelfEvalOutput

__all__ = ["QuantiDCEModel", "QuantiDCEOutput", "SelfEvalModel", "SelfEvalOutput", "default_encoder_path",
           "load_tokenizer"]
