"""Turkle's own site settings (turkle_site/settings.py upstream), reduced to what serving workers needs,
with PostgreSQL from TURKLE_DATABASE_URL (postgres://user@host:port/name) and DEBUG off."""
import os
from urllib.parse import urlsplit

_db = urlsplit(os.environ["TURKLE_DATABASE_URL"])

DEBUG = False
SECRET_KEY = os.environ.get("TURKLE_SECRET_KEY", "benchmark-only-not-secret")
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
X_FRAME_OPTIONS = "SAMEORIGIN"
TURKLE_SITE_NAME = "Turkle"
TURKLE_AUTO_ACCEPT_DEFAULT = True  # submit -> accept next task, as a worker doing a batch would set it
TURKLE_TEMPLATE_LIMIT = 64
TURKLE_EMAIL_ENABLED = False
META_TAGS = []
STATIC_URL = "/static/"
DATABASES = {"default": {
    "ENGINE": "django.db.backends.postgresql", "NAME": _db.path.lstrip("/"), "USER": _db.username or "postgres",
    "PASSWORD": _db.password or "", "HOST": _db.hostname or "127.0.0.1", "PORT": _db.port or 5432,
}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
USE_I18N = True
USE_TZ = True
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.contrib.auth.context_processors.auth",
        "django.template.context_processors.debug",
        "django.template.context_processors.i18n",
        "django.template.context_processors.media",
        "django.template.context_processors.request",
        "django.template.context_processors.static",
        "django.template.context_processors.tz",
        "django.contrib.messages.context_processors.messages",
        "turkle.utils.turkle_vars",
    ]},
}]
MIDDLEWARE = (
    "django.middleware.common.CommonMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
)
ROOT_URLCONF = "turkle_site.urls"
INSTALLED_APPS = (
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "turkle",
    "django.contrib.admin",
    "rest_framework",
    "rest_framework.authtoken",
    "turkle.api",
    "guardian",
    "djaa_list_filter2",
)
AUTHENTICATION_BACKENDS = ("django.contrib.auth.backends.ModelBackend", "guardian.backends.ObjectPermissionBackend")
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "index"
LOGOUT_REDIRECT_URL = "index"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
