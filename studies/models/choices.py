"""The study data model's choices and small defaults: designs, units, check kinds, the default questionnaire."""
from __future__ import annotations

import secrets

from django.db import models


class Design(models.TextChoices):
    """The designs a study may have. What each one does is its module in ``studies/designs/`` (one
    registry line each, ``studies.designs.registry.DESIGNS``); code asks ``design_for(study)``."""

    LIKERT = "likert", "Likert scale"
    RME = "rme", "Magnitude estimation, fixed reference (RME)"
    BME = "bme", "Magnitude estimation, metric reference (BME)"
    BWS = "bws", "Best-worst scaling (ranking)"
    BWS_TUPLES = "bws_tuples", "Best-worst scaling, tuples of many items"
    PAIRWISE = "pairwise", "Pairwise comparison (A/B)"
    ACUTE = "acute", "Whole-conversation comparison (ACUTE-Eval)"


# A new study's size: a pilot a researcher can afford and finish in about a quarter of an hour per rater, whose
# live panel then says (Spearman-Brown) how many raters the full study needs. The seed study (Santhanam &
# Shaikh 2019) had 40 raters each rate 50 conversations (33-43 minutes): a replication sets those itself.
DEFAULT_RATERS_PER_ITEM = 5
DEFAULT_ITEMS_PER_ASSIGNMENT = 20


class Unit(models.TextChoices):
    """What one rating judges: a response (the next turn, given the conversation so far) or a whole
    conversation (dialogue-level judgement, e.g. FED's dialogue level or DSTC9's interactive evaluation)."""

    RESPONSE = "response", "A response (the next turn)"
    DIALOGUE = "dialogue", "A whole dialogue"
    CHAT = "chat", "A chat the rater has with a system"


def default_questionnaire() -> list[dict]:
    """The seed study's two questions (reports split by them) and two optional demographics."""
    return [
        {"name": "prior_rating_experience", "kind": "yes_no", "required": True,
         "question": "Have you taken part before in studies that rated the output of dialogue systems?"},
        {"name": "prior_agent_experience", "kind": "yes_no", "required": True,
         "question": "Have you talked with conversational agents (chatbots, voice assistants) before?"},
        {"name": "age_band", "kind": "choice", "required": False, "question": "Your age (optional)",
         "choices": ["18-24", "25-34", "35-44", "45-54", "55-64", "65 or over"]},
        {"name": "english_first_language", "kind": "yes_no", "required": False,
         "question": "Is English your first language? (optional)"},
    ]


def new_token() -> str:
    return secrets.token_urlsafe(24)


class CheckKind(models.TextChoices):
    GOLD = "gold", "Gold item (known answer)"
    INSTRUCTED = "instructed", "Instructed response"
