"""Deployment checks (``manage.py check --deploy``): what one web process keeps to itself, which several
processes or nodes must share (docs/deployment.md, "Several web nodes and workers")."""
from __future__ import annotations

from django.conf import settings
from django.core import checks


@checks.register(checks.Tags.caches, deploy=True)
def shared_services_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    found: list[checks.CheckMessage] = []
    backend = str(settings.CACHES["default"]["BACKEND"]).lower()
    if any(word in backend for word in ("locmem", "dummy", "filebased")):
        found.append(checks.Warning(
            "The cache is kept per process (or per host): API throttles count per web process, each process "
            "computes the reports again, and a chat call of another web node cannot be told dead before the "
            "reply deadline.", hint="Set CACHE_URL=rediscache://host:6379/1, the same for every web node and worker.",
            id="studies.W001"))
    if str(settings.CELERY_BROKER_URL).startswith("filesystem"):
        found.append(checks.Warning(
            "The Celery broker is a folder (CONCORD_VAR_DIR/broker): only processes that share that folder see "
            "the queued jobs.", hint="Set CELERY_BROKER_URL=redis://host:6379/0 for workers on other machines.",
            id="studies.W002"))
    if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        found.append(checks.Warning(
            "The database is a SQLite file: one machine only, one writer at a time.",
            hint="Set DATABASE_URL=postgres://... for several web nodes or workers.", id="studies.W003"))
    return found
