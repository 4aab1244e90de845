"""Small hand-written files in Label Studio's and Potato's shapes (fixtures_dataio/), and builders of
variants for the import tests."""
from __future__ import annotations

import copy
import io
import json
from pathlib import Path

from studies.corpora import services

FIXTURES = Path(__file__).parent / "fixtures_dataio"


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def label_studio_tasks() -> list[dict]:
    return json.loads(fixture_bytes("label_studio_export.json"))


def dumps(tasks) -> bytes:
    return json.dumps(tasks, indent=1).encode()


def dialogue_tasks() -> list[dict]:
    """Tasks without a response: each judges a whole dialogue (its system in data.system)."""
    tasks = copy.deepcopy(label_studio_tasks())
    for n, task in enumerate(tasks):
        task["data"].pop("response")
        task["data"]["conversation_id"] = f"dlg-{n}"
    return tasks


def import_bytes(user, data: bytes, name: str, **kwargs):
    return services.dialogues_import(stream=io.BytesIO(data), source_name=name, owner=user, **kwargs)
