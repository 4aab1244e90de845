"""Settings shared by every environment. Values that differ per deployment come from config.env."""
from config.env import BASE_DIR, DEFAULT_BROKER_URL, DEFAULT_DATABASE_URL, VAR_DIR, env

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="concord-insecure-development-key-change-me")
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "studies",
    "metrics",
    "crowd",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=DEFAULT_DATABASE_URL)}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Computed reports are cached per ratings version; share the cache between web processes in
# deployments (CACHE_URL=rediscache://host:6379/1); the default is per process.
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_ROOT = VAR_DIR / "media"
ARTIFACTS_DIR = env.path("CONCORD_ARTIFACTS_DIR", default=str(VAR_DIR / "artifacts"))
# public data sets (DailyDialog++, GRADE, FED) read in place: the default training data of the learned metrics
SHARED_DATA_DIR = env.path("CONCORD_SHARED_DATA", default=str(BASE_DIR.parent / "shared" / "data"))

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "studies:experiment_list"
LOGOUT_REDIRECT_URL = "login"

# Uploads larger than this are refused before parsing; the same limit applies on the command line.
IMPORT_MAX_BYTES = env.int("CONCORD_IMPORT_MAX_BYTES", default=100 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    # `?format=` names the export format (csv, jsonl), not DRF's renderer.
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Concord API",
    "DESCRIPTION": "Human evaluation studies of dialogue systems: studies, items, imports, exports.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI assets served by the app itself (no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Celery: queues `default` and `gpu`; the filesystem broker needs no server.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=DEFAULT_BROKER_URL)
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(VAR_DIR / "broker" / "queue"),
        "data_folder_out": str(VAR_DIR / "broker" / "queue"),
        "processed_folder": str(VAR_DIR / "broker" / "processed"),
        "store_processed": False,
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    # Redis re-delivers a message whose worker died (acks_late) once it has been unacknowledged this
    # long; keep it above the longest task so a slow run is not started twice.
    else {"visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=12 * 3600)}
)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {"metrics.tasks.*": {"queue": "gpu"}}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# crowd platforms: sync MTurk/Prolific and abandon stale assignments every 10 minutes (needs `celery beat`)
CELERY_BEAT_SCHEDULE = {"crowd-sync": {"task": "crowd.tasks.crowd_sync_all", "schedule": 600.0}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}
