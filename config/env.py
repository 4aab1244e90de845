"""The one place that reads the environment (django-environ).

Embedded defaults need no service: SQLite under ``var/``, Celery's filesystem broker under
``var/broker/``, artifacts under ``var/artifacts/``. ``DATABASE_URL=postgres://...`` and
``CELERY_BROKER_URL=redis://...`` switch to the real services.
"""
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(environ.Env().str("CONCORD_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)  # SQLite cannot create its file in a missing folder (a fresh clone)

env = environ.Env(
    DEBUG=(bool, False),
    ALLOWED_HOSTS=(list, ["localhost", "127.0.0.1", "[::1]"]),
)
if (BASE_DIR / ".env").is_file():
    environ.Env.read_env(BASE_DIR / ".env")

DEFAULT_DATABASE_URL = f"sqlite:///{VAR_DIR / 'concord.sqlite3'}"
DEFAULT_BROKER_URL = "filesystem://localhost/"  # a host named: kombu warns "No hostname was supplied" otherwise
