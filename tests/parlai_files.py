"""Small hand-made files in ParlAI's exact shapes (written for these tests, not copied): an ACUTE-Eval
``pairings.jsonl`` (two models judged against a human evaluator, one onboarding pair), a self-chat log
``self_chats/<model>.blended_skill_talk.jsonl`` and a Mephisto model-chat result."""
from __future__ import annotations

import json


def _dialogue(first: str, second: str, lines: list[str], conversation_id: str | None = None) -> dict:
    """A ParlAI dialogue dict: strictly alternating turns, each {"id": speaker, "text": ...}."""
    names = (first, second)
    entry: dict = {"speakers": [first, second],
                   "dialogue": [{"id": names[i % 2], "text": text} for i, text in enumerate(lines)]}
    if conversation_id is not None:
        entry["id"] = conversation_id
    return entry


CHATS = {
    "blender_90M": [
        ("b90-1", ["hi ! how are you today ?", "i'm good, just got back from a run.",
                   "that's great ! i love running too . how far did you go ?", "about five miles."]),
        ("b90-2", ["do you have any pets ?", "yes, two cats.", "i have a dog named max . he is very friendly .",
                   "cats and dogs, nice."]),
    ],
    "seq2seq_convai2": [
        ("s2s-1", ["hi", "hello, what do you do for fun?", "i like to read . i like to read .", "what do you read?"]),
        ("s2s-2", ["i am a student", "what do you study?", "i am a student . i am a student .", "ok."]),
    ],
}


def pairings_lines(*, missing_speaker: bool = False) -> list[dict]:
    """Three pairs of blender_90M against seq2seq_convai2 (the first pair's seq2seq dialogue appears again
    in the third) and one onboarding pair whose correct answer is model_2."""
    (b1, b1_lines), (b2, b2_lines) = CHATS["blender_90M"]
    (s1, s1_lines), (s2, s2_lines) = CHATS["seq2seq_convai2"]
    pairs = [
        {"is_onboarding": False, "speakers_to_eval": ["blender_90M", "seq2seq_convai2"],
         "dialogue_dicts": [_dialogue("blender_90M", "human_evaluator", b1_lines, b1),
                            _dialogue("human_evaluator", "seq2seq_convai2", s1_lines, s1)]},
        {"is_onboarding": False, "speakers_to_eval": ["seq2seq_convai2", "blender_90M"],
         "dialogue_dicts": [_dialogue("human_evaluator", "seq2seq_convai2", s2_lines, s2),
                            _dialogue("human_evaluator", "blender_90M", b2_lines, b2)]},
        {"is_onboarding": False, "speakers_to_eval": ["blender_90M", "seq2seq_convai2"],
         "dialogue_dicts": [_dialogue("human_evaluator", "blender_90M", b2_lines, b2),
                            _dialogue("human_evaluator", "seq2seq_convai2", s1_lines, s1)]},
    ]
    onboarding = {
        "is_onboarding": True, "speakers_to_eval": ["model_1", "model_2"], "correct_answer": "model_2",
        "tags": ["onboarding0000"],
        "dialogue_dicts": [
            _dialogue("human_evaluator", "model_1", ["(INCORRECT CHOICE) hello", "hello hello hello hello",
                                                     "how are you?", "hello hello hello hello"]),
            _dialogue("model_2", "human_evaluator", ["(CORRECT CHOICE) Hi! I just got back from the lake.",
                                                     "Nice, did you swim?", "Yes, the water was warm.",
                                                     "Sounds lovely."]),
        ],
    }
    if missing_speaker:
        del pairs[1]["dialogue_dicts"][0]["dialogue"][2]["id"]
    return [onboarding, *pairs]


def jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def selfchat_lines(model: str = "TransformerGenerator", n: int = 2) -> list[dict]:
    """``parlai self_chat`` output: exchanges of two turns, speakers ``<agent>_1`` / ``<agent>_2``, the two
    sides' Blended Skill Talk contexts (persona lines and seeded utterances) in ``context``."""
    records = []
    for k in range(n):
        exchanges = [
            [{"id": f"{model}_1", "episode_done": False, "text": f"what do you like to do in your spare time ? ({k})",
              "beam_texts": [["what do you like to do in your spare time ?", -5.9]]},
             {"id": f"{model}_2", "episode_done": False, "text": "i play guitar . what about you ?"}],
            [{"id": f"{model}_1", "episode_done": False, "text": "i build houses out of matches ."},
             {"id": f"{model}_2", "episode_done": False, "text": "that sounds hard . how long does one take ?"}],
        ]
        context = [{"text": "your persona: my hobby is building houses out of matches.\nDavid Mach",
                    "episode_done": False, "id": "context"},
                   {"text": "your persona: i like to play guitar.\nDavid Mach", "episode_done": False, "id": "context"}]
        records.append({"dialog": exchanges, "context": context,
                        "metadata_path": "/base/self_chats/model2.blended_skill_talk.metadata"})
    return records


def modelchat_record() -> dict:
    """One Mephisto model-chat result (indented JSON, one conversation per file)."""
    return {
        "personas": [["i love hiking.", "i have two dogs."], ["i am a chef.", "i live in paris."]],
        "context_dataset": "blended_skill_talk", "person1_seed_utterance": "I went hiking yesterday.",
        "person2_seed_utterance": "Where did you go?", "additional_context": None,
        "bot_persona_strings": ["i am a chef.", "i live in paris."],
        "dialog": [
            {"episode_done": False, "id": "Worker", "text": "Hi!", "fake_start": True, "agent_idx": 0},
            {"agent_idx": 1, "text": "Hello! I just finished cooking dinner.", "id": "TransformerGenerator"},
            {"agent_idx": 0, "text": "What did you make?", "id": "Worker"},
            {"agent_idx": 1, "text": "Ratatouille, a classic here in Paris.", "id": "TransformerGenerator",
             "final_rating": "4"},
        ],
        "workers": ["WORKER_1"], "bad_workers": [], "hit_ids": ["HIT_ID_1"],
        "task_description": {"model_nickname": "blender_90M", "model_file": "/zoo/blender/blender_90M/model"},
    }
