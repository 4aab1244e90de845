"""The study data model: what is judged (corpora of conversations and system responses), how
(studies and their items), and by whom (raters, assignments, ratings).

Integrity lives in the database (unique and check constraints); rules that depend on a study's
design (value ranges, config shape) are checked by the services (``studies.authoring.services``, the study's design in ``studies.designs``) before anything is written.

One module per part (choices, corpora, studies, raters, answers, chat, onboarding, review, selfchat); every model is re-exported here, so
``from studies.models import Study`` is the one way to import them. App label and tables are unchanged."""
from studies.models.answers import BestWorstChoice, Comparison, Rating
from studies.models.api import ApiToken, IdempotencyKey
from studies.models.chat import Chat, ChatTurn, StudyItemSystem, SystemEndpoint
from studies.models.choices import (
    DEFAULT_ITEMS_PER_ASSIGNMENT,
    DEFAULT_RATERS_PER_ITEM,
    CheckKind,
    Design,
    Unit,
    default_questionnaire,
    new_token,
)
from studies.models.corpora import Conversation, Corpus, ImportJob, Response, System, SystemDescription
from studies.models.onboarding import Onboarding, PracticeAnswer, PracticeAttempt, PracticeItem
from studies.models.raters import Assignment, AssignmentItem, Invite, Rater, RaterBlock
from studies.models.review import RaterDecision
from studies.models.selfchat import SelfChatDialogue, SelfChatRun
from studies.models.studies import Criterion, Experiment, Study, StudyItem, StudyItemConversation, StudyItemResponse

__all__ = ["Design", "DEFAULT_RATERS_PER_ITEM", "DEFAULT_ITEMS_PER_ASSIGNMENT", "Unit", "default_questionnaire", "new_token", "CheckKind", "Corpus", "System", "SystemDescription", "Conversation", "Response", "ImportJob", "Experiment", "Study", "Criterion", "StudyItem", "StudyItemResponse", "StudyItemConversation", "Rater", "RaterBlock", "Assignment", "Invite", "AssignmentItem", "Rating", "BestWorstChoice", "Comparison", "SystemEndpoint", "StudyItemSystem", "Chat", "ChatTurn", "Onboarding", "PracticeItem", "PracticeAttempt", "PracticeAnswer", "RaterDecision", "IdempotencyKey", "ApiToken", "SelfChatRun", "SelfChatDialogue"]
