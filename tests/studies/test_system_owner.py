"""System names are shared labels; descriptions are per researcher: one researcher's
description (HTML included) never shows in, nor is overwritten by, another's import of the same name."""
import importlib
import io

import pytest
from django.apps import apps as django_apps

from studies.corpora import services as corpus_imports
from studies.models import Corpus, Response, System, SystemDescription
from tests.conftest import jsonl_bytes

pytestmark = pytest.mark.django_db


def corpus_with(description: str, owner, name: str = "shared-bot") -> bytes:
    header = {"concord": "dialogues/1", "systems": {name: description, "human": "reference"},
              "human_systems": ["human"], "reference": "human"}
    return jsonl_bytes([{"id": "c1", "turns": ["hi"], "responses": {name: "hello", "human": "hey"}}], header)


def imported(owner, description):
    imported.count = getattr(imported, "count", 0) + 1
    return corpus_imports.dialogues_import(stream=io.BytesIO(corpus_with(description, owner)),
                                           source_name=f"s{imported.count}.jsonl", owner=owner)


def test_descriptions_are_each_researchers_own(user, other_user):
    imported(user, "Alice's <b>bot</b>")
    imported(other_user, "Bob's retrieval bot")
    system = System.objects.get(name="shared-bot")
    assert system.description == ""  # nothing researcher-written on the shared row
    mine = SystemDescription.objects.get(system=system, owner=user)
    theirs = SystemDescription.objects.get(system=system, owner=other_user)
    assert (mine.description, theirs.description) == ("Alice's <b>bot</b>", "Bob's retrieval bot")
    imported(user, "Alice's revised text")  # my own import replaces my own description only
    assert SystemDescription.objects.get(system=system, owner=user).description == "Alice's revised text"
    assert SystemDescription.objects.get(system=system, owner=other_user).description == "Bob's retrieval bot"
    assert SystemDescription.objects.get(system__name="human", owner=user).is_human


def test_the_migration_moves_a_shared_description_to_its_first_importer(user, other_user):
    imported(user, "")
    later = imported(other_user, "")
    System.objects.filter(name="shared-bot").update(description="first importer's text")
    Corpus.objects.filter(pk=later.corpus.pk).update(owner=other_user)
    assert Response.objects.filter(system__name="shared-bot").count() == 2
    migration = importlib.import_module("studies.migrations.0014_system_owner")
    migration.descriptions_to_owners(django_apps, None)
    assert System.objects.get(name="shared-bot").description == ""
    moved = SystemDescription.objects.get(system__name="shared-bot")
    assert (moved.owner, moved.description) == (user, "first importer's text")
