"""``manage.py check --deploy`` names what several web nodes and workers cannot share as configured."""
from studies.checks import shared_services_check


def test_per_process_cache_folder_broker_and_sqlite_are_named(settings, monkeypatch):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    settings.CELERY_BROKER_URL = "filesystem://localhost/"
    monkeypatch.setitem(settings.DATABASES["default"], "ENGINE", "django.db.backends.sqlite3")
    assert {m.id for m in shared_services_check()} == {"studies.W001", "studies.W002", "studies.W003"}


def test_shared_services_pass(settings, monkeypatch):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:6379/1"}}
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"
    monkeypatch.setitem(settings.DATABASES["default"], "ENGINE", "django.db.backends.postgresql")
    assert shared_services_check() == []
