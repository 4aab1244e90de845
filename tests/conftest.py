"""Fixtures shared by the test packages: users, token clients, and small corpora built through the
import service (so every test exercises the real write path)."""
import io
import json
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from studies.authoring import services as authoring
from studies.corpora import services as corpus_imports
from tests.factories import UserFactory, token_for

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def shared_file(*parts: str) -> Path:
    """A file from ../shared/data, or skip the test with a reason when the folder is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"{path} is not here (the shared data sets live outside the repository)")
    return path


def jsonl_bytes(conversations: list[dict], header: dict | None = None) -> bytes:
    lines = ([json.dumps(header)] if header else []) + [json.dumps(c) for c in conversations]
    return ("\n".join(lines) + "\n").encode()


def small_corpus_lines(n: int = 6) -> bytes:
    header = {"concord": "dialogues/1", "systems": ["seq2seq", "hred", "thred", "human"], "reference": "human"}
    conversations = [
        {"id": f"c{i}", "turns": [f"Hello number {i}", f"Hi there {i}, how are you?"],
         "responses": {"seq2seq": f"fine {i}", "hred": f"good thanks {i}", "thred": f"great, and you {i}?",
                       "human": f"I'm well, thanks for asking {i}."}}
        for i in range(n)
    ]
    return jsonl_bytes(conversations, header)


@pytest.fixture
def local_bot():
    """A fresh bot server (studies.chat.local_bot) on 127.0.0.1, a free port, for one test; its slow bot
    takes 3 s."""
    from studies.chat.local_bot import LocalBot

    with LocalBot(slow_seconds=3.0) as bot:
        yield bot


@pytest.fixture
def loopback_allowed(settings):
    """The deployment setting the demo and the tests turn on for their loopback bot (chat endpoints)."""
    settings.CHAT_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    return settings


@pytest.fixture
def user(db):
    return UserFactory(username="alice")


@pytest.fixture
def other_user(db):
    return UserFactory(username="bob")


@pytest.fixture
def api(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    return client


@pytest.fixture
def corpus(user):
    return corpus_imports.dialogues_import(stream=io.BytesIO(small_corpus_lines()), source_name="small.jsonl",
                                     owner=user).corpus


@pytest.fixture
def make_study(user, corpus):
    """Build a study of a design on the small corpus, items built, optionally published."""
    def build(design: str = "likert", *, publish: bool = True, raters_per_item: int = 3, items_per_assignment: int = 6,
              experiment=None, platform: str = "invite", **config):
        experiment = experiment or authoring.experiment_create(owner=user, title=f"Exp {design}")
        study = authoring.study_create(experiment=experiment, title=f"{design} study", design=design,
                                      design_config=config or None, raters_per_item=raters_per_item,
                                      items_per_assignment=items_per_assignment, platform=platform)
        authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"],
                                   reference_system="human")
        if design == "bme":
            authoring.study_item_reference_values_set(
                study=study, values={pk: 50.0 + pk % 7 for pk in study.items.values_list("pk", flat=True)})
        if publish:
            authoring.study_publish(study=study)
        study.refresh_from_db()
        return study
    return build
