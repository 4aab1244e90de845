"""ABC-Eval's 16 dialogue behaviours, the per-turn kind's ready-made set (Finch, Finch & Choi, "Don't Forget
Your ABC's: Evaluating the State-of-the-Art in Chat-Oriented Dialogue Systems", ACL 2023).

ABC-Eval annotates every turn of the judged bot for each behaviour as present or absent (binary), and
reports that these turn-level behaviour rates are more reliable and more predictive of dialogue quality
than whole-dialogue Likert ratings. The names follow the paper; the definitions are a short paraphrase
for raters, and a researcher may edit both in the study builder (they are ordinary criterion options)."""
from __future__ import annotations

from typing import Any

ABC_EVAL_BEHAVIOURS: tuple[tuple[str, str], ...] = (
    ("uninterpretable", "The response is hard to understand: it makes no sense, or what it means is unclear."),
    ("antisocial", "The response is insulting, rude, hostile or otherwise socially inappropriate."),
    ("preference info", "The bot states a preference of its own (likes, dislikes, wants, opinions)."),
    ("life info", "The bot states something about its own life (experiences, situation, relationships)."),
    ("empathetic", "The response understands and responds suitably to the partner's feelings."),
    ("lack of empathy", "The response misunderstands or ignores the partner's feelings where they matter."),
    ("commonsense contradiction", "The response contradicts common sense or makes an unfounded assumption."),
    ("fact usage", "The response uses a piece of factual knowledge about the world correctly."),
    ("fact contradiction", "The response states something about the world that is false."),
    ("self contradiction", "The response contradicts something the bot itself said earlier."),
    ("partner contradiction", "The response contradicts or misremembers something the partner said."),
    ("redundant", "The response repeats something already said, or asks for information already given."),
    ("ignore", "The response ignores what the partner just said."),
    ("irrelevant", "The response is off topic: unrelated to the conversation so far."),
    ("follow-up", "The response follows up on what the partner said (a question or comment about it)."),
    ("topic switch", "The response moves the conversation to a new topic."),
)


def abc_eval_criterion(name: str = "abc-eval") -> dict[str, Any]:
    """A per-turn criterion spec asking ABC-Eval's 16 binary behaviours of every bot turn (the builder's
    ready-made set; ``options`` are editable like any other criterion's)."""
    return {
        "name": name, "kind": "per_turn",
        "question": "For each of the bot's turns, tick every behaviour it shows.",
        "help_text": "Read each bot turn in the context of the conversation so far. Leave a behaviour unticked "
                     "when the turn does not show it.",
        "options": {"mode": "binary", "labels": [label for label, _ in ABC_EVAL_BEHAVIOURS],
                    "definitions": dict(ABC_EVAL_BEHAVIOURS), "speaker": ""},
    }
