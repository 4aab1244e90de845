"""One token system: the login tokens DRF kept in plain text (``rest_framework.authtoken``'s
``authtoken_token``, one per user) become ``ApiToken`` rows of kind ``login`` holding only the SHA-256 of
the key, so every key issued before keeps authenticating (``studies.api.tokens.token_authenticate``
looks any key up by its hash) with its issue date and expiry (``created + API_TOKEN_LIFETIME``); the
plaintext rows are then deleted.

``rest_framework.authtoken`` is no longer an installed app, so its table is read through a model of
this migration's own (``legacy_token_model``) and only where it exists: a fresh database never had it.
The emptied table is left in place (a rollback to the code before can still use it); drop it by hand
once that is not wanted. Migrating back keeps the hashed tokens: the plaintext keys are gone."""
import hashlib
from datetime import timedelta

from django.apps.registry import Apps
from django.conf import settings
from django.db import migrations, models

LEGACY_TABLE = "authtoken_token"
LEGACY_NAME = "login token"
PREFIX_CHARACTERS = 8  # of the 40-character key, as the ``cnc_`` tokens show 8 of theirs


def legacy_token_model():
    """DRF's Token table, as a model in a registry of its own (the app that owned it is not installed)."""

    class LegacyToken(models.Model):
        key = models.CharField(max_length=40, primary_key=True)
        user_id = models.BigIntegerField()
        created = models.DateTimeField()

        class Meta:
            app_label = "legacy_authtoken"
            db_table = LEGACY_TABLE
            managed = False
            apps = Apps()

        def __str__(self) -> str:
            return f"{self.key[:PREFIX_CHARACTERS]}…"

    return LegacyToken


def _free_name(active_names: set[str], wanted: str) -> str:
    name, n = wanted, 1
    while name in active_names:
        n += 1
        name = f"{wanted} ({n})"
    return name


def hash_login_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if LEGACY_TABLE not in connection.introspection.table_names():
        return
    legacy = legacy_token_model().objects.using(connection.alias)
    api_token = apps.get_model("studies", "ApiToken")
    lifetime = getattr(settings, "API_TOKEN_LIFETIME", timedelta(days=30))
    for old in legacy.order_by("created"):
        active_names = set(api_token.objects.using(connection.alias).filter(
            user_id=old.user_id, revoked_at__isnull=True).values_list("name", flat=True))
        made = api_token.objects.using(connection.alias).create(
            user_id=old.user_id, kind="login", name=_free_name(active_names, LEGACY_NAME),
            prefix=old.key[:PREFIX_CHARACTERS], key_hash=hashlib.sha256(old.key.encode()).hexdigest(),
            expires_at=old.created + lifetime)
        api_token.objects.using(connection.alias).filter(pk=made.pk).update(created_at=old.created)  # not auto_now_add's
    legacy.all().delete()


class Migration(migrations.Migration):

    dependencies = [
        ('studies', '0022_api_tokens'),
    ]

    operations = [
        migrations.AddField(
            model_name='apitoken',
            name='kind',
            field=models.CharField(choices=[('named', 'named'), ('login', 'login')], default='named',
                                   help_text='named: made at /api/auth/tokens/; login: issued for a username and password',
                                   max_length=8),
        ),
        migrations.RunPython(hash_login_tokens, migrations.RunPython.noop),
    ]
