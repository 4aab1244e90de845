"""Test settings. Unit tests run on SQLite unless DATABASE_URL is set (the integration suite)."""
from config.settings.base import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}
STATIC_ROOT = None  # tests serve static files from the finders; no collectstatic needed
WHITENOISE_USE_FINDERS = True
# django-axes needs the request in authenticate(); the test client's login() gives none. Tests of the
# lockout switch it back on (settings.AXES_ENABLED = True).
AXES_ENABLED = False
