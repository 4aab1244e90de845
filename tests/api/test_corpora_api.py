"""Corpora, systems and background imports through the API: listed in the one pagination,
filters that work or are refused naming the parameter; another researcher's corpus is a 404 and never
listed, their description of a shared system name never shown, their import jobs never listed."""
import io
import json

import pytest

from studies.corpora import services as corpus_imports
from studies.models import ImportJob
from tests.api.test_convention import client_of
from tests.conftest import jsonl_bytes
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


@pytest.fixture
def bob(other_user):
    return client_of(other_user)


@pytest.fixture
def bobs_corpus(other_user):
    """Bob's corpus shares the system name hred with Alice's, and describes it his own way."""
    header = {"concord": "dialogues/1", "systems": {"hred": "Bob's secret hred notes", "bobbot": "mine"}}
    lines = jsonl_bytes([{"id": "b1", "turns": ["Hi", "Hello"], "responses": {"hred": "yo", "bobbot": "hey"}}], header)
    return corpus_imports.dialogues_import(stream=io.BytesIO(lines), source_name="bob.jsonl", owner=other_user).corpus


def test_corpora_are_listed_with_counts_and_read_by_slug(api, user, corpus, bobs_corpus):
    listed = api.get("/api/corpora/").json()
    assert set(listed) == {"count", "next", "previous", "results"}
    assert [c["slug"] for c in listed["results"]] == [corpus.slug]  # never Bob's
    entry = listed["results"][0]
    assert entry["owner"] == user.username and entry["conversations"] == 6 and entry["responses"] == 24
    detail = api.get(f"/api/corpora/{corpus.slug}/").json()
    assert {s["name"]: s["responses"] for s in detail["systems"]} == {"seq2seq": 6, "hred": 6, "thred": 6, "human": 6}
    assert api.get(f"/api/corpora/{bobs_corpus.slug}/").status_code == 404
    assert api.get(f"/api/corpora/{bobs_corpus.slug}/systems/").status_code == 404


def test_corpus_filters_work_or_are_refused_by_name(api, corpus):
    assert api.get("/api/corpora/", {"source_format": corpus.source_format}).json()["count"] == 1
    assert api.get("/api/corpora/", {"source_format": "csv-of-nothing"}).json()["count"] == 0
    unknown = api.get("/api/corpora/", {"owner": "bob"})
    assert unknown.status_code == 400 and "owner" in problem_fields(unknown)
    bad_page = api.get("/api/corpora/", {"limit": "abc"})
    assert bad_page.status_code == 400 and "limit" in problem_fields(bad_page)


def test_systems_are_those_of_your_corpora_with_your_own_descriptions(api, bob, corpus, bobs_corpus):
    names = [s["name"] for s in api.get("/api/systems/").json()["results"]]
    assert names == sorted(["seq2seq", "hred", "thred", "human"])  # not Bob's bobbot
    hred = next(s for s in api.get("/api/systems/").json()["results"] if s["name"] == "hred")
    assert hred["responses"] == 6 and "secret" not in hred["description"]  # Bob's 1 response and text unseen
    bobs = {s["name"]: s for s in bob.get("/api/systems/").json()["results"]}
    assert set(bobs) == {"hred", "bobbot"} and bobs["hred"]["description"] == "Bob's secret hred notes"
    one = api.get("/api/systems/", {"corpus": corpus.slug}).json()
    assert one["count"] == 4
    per_corpus = api.get(f"/api/corpora/{corpus.slug}/systems/").json()
    assert [s["name"] for s in per_corpus["results"]] == [s["name"] for s in one["results"]]
    for params, field in (({"corpus": bobs_corpus.slug}, "corpus"), ({"system": "hred"}, "system")):
        refused = api.get("/api/systems/", params)
        assert refused.status_code == 400 and field in problem_fields(refused), params


def test_background_imports_are_listed_for_their_owner_only_and_filtered(api, bob, user, other_user):
    mine = ImportJob.objects.create(owner=user, path="/nowhere", source_name="a.jsonl", corpus_slug="a",
                                    status=ImportJob.Status.DONE, counts={"conversations": 3})
    ImportJob.objects.create(owner=user, path="/nowhere", source_name="b.jsonl", corpus_slug="b")
    theirs = ImportJob.objects.create(owner=other_user, path="/nowhere", source_name="c.jsonl", corpus_slug="a")
    listed = api.get("/api/imports/").json()
    assert listed["count"] == 2 and theirs.pk not in [j["id"] for j in listed["results"]]
    done = api.get("/api/imports/", {"status": "done"}).json()["results"]
    assert [j["id"] for j in done] == [mine.pk] and done[0]["counts"] == {"conversations": 3}
    assert [j["id"] for j in api.get("/api/imports/", {"corpus": "a"}).json()["results"]] == [mine.pk]
    for params, field in (({"status": "finished"}, "status"), ({"experiment": "x"}, "experiment")):
        refused = api.get("/api/imports/", params)
        assert refused.status_code == 400 and field in problem_fields(refused), params
    assert [j["id"] for j in bob.get("/api/imports/").json()["results"]] == [theirs.pk]
    assert bob.get(f"/api/imports/{mine.pk}/").status_code == 404


def test_the_import_upload_still_answers_on_the_same_path(api):
    upload = io.BytesIO(jsonl_bytes([{"id": "x1", "turns": ["Hi", "Hey"], "responses": {"sysA": "hello"}}],
                                    {"concord": "dialogues/1", "systems": ["sysA"]}))
    upload.name = "x.jsonl"
    made = api.post("/api/imports/", {"file": upload, "format": "auto"}, format="multipart")
    assert made.status_code == 201, made.content
    slug = json.loads(made.content)["corpus"]
    assert slug in [c["slug"] for c in api.get("/api/corpora/").json()["results"]]
    assert [s["name"] for s in api.get("/api/systems/", {"corpus": slug}).json()["results"]] == ["sysA"]
