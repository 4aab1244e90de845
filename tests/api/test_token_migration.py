"""Migration studies 0023: the login tokens DRF kept in plain text (``authtoken_token``, an app no longer
installed) become hashed ``ApiToken`` rows of kind ``login``, with their dates, so the old keys keep
authenticating (or answer "expired" when their lifetime has passed), and the plaintext rows are deleted:
no key is left in any column of any table. A database that never had the table (a fresh one) migrates
too. Run on the real migrations, from the state before."""
import hashlib
import importlib
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from rest_framework.test import APIClient

HASHING = importlib.import_module("studies.migrations.0023_login_tokens_hashed")
BEFORE_TOKENS = [("studies", "0021_acute_eval_selfchat")]
WITH_NAMED_TOKENS = [("studies", "0022_api_tokens")]
ALICE_KEY = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"  # DRF's shape: 40 hexadecimal characters
BOB_KEY = "0b5a2c1f6e7d8c9b0a1f2e3d4c5b6a7980f1e2d3"


def migrated(target):
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    executor.loader.build_graph()
    return executor.loader.project_state(target).apps


def migrated_to_latest():
    executor = MigrationExecutor(connection)
    target = executor.loader.graph.leaf_nodes()
    executor.migrate(target)
    executor.loader.build_graph()
    return executor.loader.project_state(target).apps


@pytest.fixture
def history():
    """The test database back at the latest migrations, and without DRF's table, whatever the test did."""
    legacy = HASHING.legacy_token_model()
    yield legacy
    migrated_to_latest()
    if HASHING.LEGACY_TABLE in connection.introspection.table_names():
        with connection.schema_editor() as editor:
            editor.delete_model(legacy)


def drf_table(legacy):
    with connection.schema_editor() as editor:
        editor.create_model(legacy)


def bearer(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def every_stored_value() -> str:
    """Every row of every table in the database, as text."""
    with connection.cursor() as cursor:
        dumped = []
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            dumped.append(repr(cursor.fetchall()))
    return "\n".join(dumped)


@pytest.mark.django_db(transaction=True)
def test_drf_login_tokens_become_hashed_api_tokens_that_still_authenticate(history):
    old = migrated(BEFORE_TOKENS)
    users = old.get_model("auth", "User").objects
    alice, bob = users.create(username="alice"), users.create(username="bob")
    drf_table(history)
    fresh = timezone.now() - timedelta(days=1)
    stale = timezone.now() - settings.API_TOKEN_LIFETIME - timedelta(days=1)
    history.objects.create(key=ALICE_KEY, user_id=alice.pk, created=fresh)
    history.objects.create(key=BOB_KEY, user_id=bob.pk, created=stale)
    assert ALICE_KEY in every_stored_value()

    new = migrated_to_latest()
    stored = {t.user.username: t for t in new.get_model("studies", "ApiToken").objects.select_related("user")}
    assert set(stored) == {"alice", "bob"}
    for username, key, created in (("alice", ALICE_KEY, fresh), ("bob", BOB_KEY, stale)):
        token = stored[username]
        assert (token.kind, token.name, token.prefix) == ("login", "login token", key[:8])
        assert token.key_hash == hashlib.sha256(key.encode()).hexdigest()
        assert (token.created_at, token.expires_at) == (created, created + settings.API_TOKEN_LIFETIME)
        assert token.revoked_at is None
    assert history.objects.count() == 0
    dumped = every_stored_value()
    assert ALICE_KEY not in dumped and BOB_KEY not in dumped

    assert bearer(ALICE_KEY).get("/api/experiments/").status_code == 200
    listed = bearer(ALICE_KEY).get("/api/auth/tokens/").json()["results"]
    assert [(t["name"], t["kind"], t["status"]) for t in listed] == [("login token", "login", "active")]
    expired = bearer(BOB_KEY).get("/api/experiments/")
    assert expired.status_code == 401 and "expired" in expired.json()["detail"]
    assert "/api/auth/token/" in expired.json()["detail"]


@pytest.mark.django_db(transaction=True)
def test_a_database_without_drfs_table_migrates_and_a_taken_name_is_not_reused(history):
    old = migrated(BEFORE_TOKENS)
    assert HASHING.LEGACY_TABLE not in connection.introspection.table_names()
    alice = old.get_model("auth", "User").objects.create(username="alice")
    assert migrated_to_latest().get_model("studies", "ApiToken").objects.count() == 0  # a fresh database

    named = migrated(WITH_NAMED_TOKENS).get_model("studies", "ApiToken").objects
    named.create(user_id=alice.pk, name="login token", prefix="cnc_abcdefgh", key_hash="0" * 64)
    drf_table(history)
    history.objects.create(key=ALICE_KEY, user_id=alice.pk, created=timezone.now())
    new = migrated_to_latest().get_model("studies", "ApiToken").objects
    assert sorted(new.values_list("name", "kind")) == [("login token", "named"), ("login token (2)", "login")]
    assert bearer(ALICE_KEY).get("/api/experiments/").status_code == 200
