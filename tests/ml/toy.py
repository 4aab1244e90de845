"""Self-written toy data and a tiny random encoder for the training tests (seconds, offline).

Toy DailyDialog++: each context is a question about a topic; level 3 (relevant) answers it on the
topic, level 2 (adversarial) reuses the topic word in an off-key reply, level 1 (random) talks of
something else — a model can learn the levels from the words, as the real metric must from meaning."""
import json
import random
from pathlib import Path

import torch
from transformers import BertConfig, BertModel

from ml.models import load_tokenizer

TOPICS = ["music", "football", "coffee", "holiday", "garden", "movie", "dinner", "weather", "books", "train"]
RELEVANT = ["yes i love {t} very much", "sure the {t} was great fun", "of course {t} makes me happy",
            "i really enjoyed the {t} yes", "great {t} indeed thank you"]
ADVERSARIAL = ["{t} no idea whatever", "the {t} of the printer cable", "{t} is a word in the dictionary",
               "error {t} not found", "{t} tax form page seven"]
RANDOM = ["the printer cable is broken", "press the tab key twice", "invoice number seven is due",
          "the dictionary has many pages", "tax forms are on the desk"]


def toy_ddpp(path: Path, contexts: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    with path.open("w") as stream:
        for i in range(contexts):
            topic = rng.choice(TOPICS)
            stream.write(json.dumps({
                "id": i, "context": [f"hello there friend {i}", f"do you like {topic} ?"],
                "positive_responses": [r.format(t=topic) for r in RELEVANT],
                "adversarial_negative_responses": [r.format(t=topic) for r in ADVERSARIAL],
                "random_negative_responses": list(RANDOM),
            }) + "\n")
    return path


def toy_grade(path: Path, pairs: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    records = []
    for i in range(pairs):
        topic = rng.choice(TOPICS)
        good = rng.random() < 0.5
        response = rng.choice(RELEVANT if good else RANDOM).format(t=topic)
        scores = [rng.choice([4, 5]) if good else rng.choice([1, 2]) for _ in range(5)]
        records.append({"ID": i, "Dataset": "toy", "DialogModel": "toy", "Context": f"hi|||do you like {topic} ?",
                        "Response": response, "HumanScores": json.dumps(scores)})
    path.write_text(json.dumps(records))
    return path


def tiny_encoder_dir(path: Path, *, layers: int = 2, hidden: int = 32, dropout: float = 0.1, seed: int = 0) -> Path:
    """A random BERT with the packaged MiniLM's tokenizer, saved as a Hugging Face model directory."""
    tokenizer = load_tokenizer()
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=2, intermediate_size=2 * hidden, max_position_embeddings=128,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def toy_dialogues(path: Path, dialogues: int, seed: int = 0) -> Path:
    """Plain dialogue lines ``{"id", "turns"}``: every turn of a dialogue speaks of its one topic, so a
    turn replaced from another dialogue is off-topic — what SelF-Eval must learn to notice."""
    rng = random.Random(seed)
    lines = []
    for i in range(dialogues):
        topic = rng.choice(TOPICS)
        turns = [f"do you like {topic} ?", rng.choice(RELEVANT).format(t=topic), f"what {topic} do you like ?",
                 rng.choice(RELEVANT).format(t=topic)][: rng.choice([3, 4])]
        lines.append(json.dumps({"id": i, "turns": turns}))
    path.write_text("\n".join(lines) + "\n")
    return path
