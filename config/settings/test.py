"""Test settings. Unit tests run on SQLite unless DATABASE_URL is set (the integration suite)."""
import os

from config.settings.base import *  # noqa: F403

# No test talks to Mechanical Turk or Prolific (botocore's Stubber and recorded responses stand in),
# and boto3 must not look for credentials at the EC2 metadata address either.
CROWD_PLATFORM_CALLS = False
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

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
# no disk cache of embeddings between tests unless a test sets one (settings.EMBEDDING_CACHE_DIR = tmp_path)
EMBEDDING_CACHE_DIR = os.environ.get("CONCORD_EMBEDDING_CACHE") or None
# Chat replies in the request, as the unit tests expect; the tests of the background path switch it on.
CHAT_BACKGROUND_REPLIES = False
# The human-vs-metric page computes what no worker stored yet, as the unit tests that write scores directly
# expect; the tests of the stored path switch it off.
METRIC_SUMMARIES_IN_REQUEST = True
# Reports computed in the request: a pool process cannot see a test's uncommitted rows (the tests of the pool
# switch it on with committed data).
COMPUTE_POOL_WORKERS = 0
