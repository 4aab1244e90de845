"""Settings shared by every environment. Values that differ per deployment come from config.env."""
from datetime import timedelta

from config.env import BASE_DIR, DEFAULT_BROKER_URL, DEFAULT_DATABASE_URL, VAR_DIR, env
from config.security import DEFAULT_CSP

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
    "axes",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "studies",
    "metrics",
    "crowd",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.security.SecurityHeadersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "studies.rating.language.RaterLanguageMiddleware",  # rater pages in the study's language, per request
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a lockout into a 429 answer
]

# The site's Content-Security-Policy (config.security); a response carrying its own is left alone.
CONTENT_SECURITY_POLICY = env.str("CONTENT_SECURITY_POLICY", default=DEFAULT_CSP)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

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
# One connection per process (and per thread), kept between requests: connecting is a TCP handshake, a
# password exchange (SCRAM: thousands of hash rounds on both sides) and a new PostgreSQL backend, more
# than a rater's whole page. Checked before reuse after an error; 0 connects per request.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONCORD_DB_CONN_MAX_AGE", default=300)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The embedded database under concurrent raters: wait for the write lock instead of failing with
    # "database is locked", take it at BEGIN (no deadlocked upgrades), and let readers run beside a writer.
    DATABASES["default"].setdefault("OPTIONS", {}).update({
        "timeout": 20, "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    })

# Mechanical Turk and Prolific calls; the test settings switch them off so that no test can reach
# a platform (or the AWS credential chain's metadata address) by accident.
CROWD_PLATFORM_CALLS = env.bool("CONCORD_PLATFORM_CALLS", default=True)

# Computed reports are cached per ratings version; share the cache between web processes in
# deployments (CACHE_URL=rediscache://host:6379/1); the default is per process.
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Wrong passwords (config.auth): django-axes locks a (username, client address) pair out for a while
# after a few failures, on the login page, the admin and the token endpoint alike.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("LOGIN_LOCKOUT_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "config.auth.client_ip"
AXES_VERBOSE = False  # no start-up banner on every command and worker
# how many proxies (each appending to X-Forwarded-For) stand in front of Django: 1 behind docker/Caddyfile
TRUSTED_PROXIES = env.int("TRUSTED_PROXIES", default=0)
# Login tokens (POST /api/auth/token/) expire this long after they were issued (401, saying so); named tokens
# (/api/auth/tokens/) have their own expiry.
API_TOKEN_LIFETIME = timedelta(hours=env.int("API_TOKEN_LIFETIME_HOURS", default=30 * 24))

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
# The languages rater pages are translated into (locale/<code>/LC_MESSAGES/django.po); researcher pages stay
# English. A study picks one (Study.language); README "Rater pages in the study's language" says how to add one.
LANGUAGES = [("en", "English"), ("ar", "العربية (Arabic)"), ("es", "Español (Spanish)")]
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_ROOT = VAR_DIR / "media"
ARTIFACTS_DIR = env.path("CONCORD_ARTIFACTS_DIR", default=str(VAR_DIR / "artifacts"))
# public data sets (DailyDialog++, GRADE, FED) read in place: the default training data of the learned metrics
SHARED_DATA_DIR = env.path("CONCORD_SHARED_DATA", default=str(BASE_DIR.parent / "shared" / "data"))
# one on-disk cache of frozen-encoder embeddings, shared by every metric, run and seed (ml.embedding_cache);
# CONCORD_EMBEDDING_CACHE=off turns it off
EMBEDDING_CACHE_DIR = (None if env.str("CONCORD_EMBEDDING_CACHE", default="") == "off"
                       else env.path("CONCORD_EMBEDDING_CACHE", default=str(ARTIFACTS_DIR) + "/embeddings"))

# Rater review (studies.reports.rater_evidence). Each flag on a rater's page shows its figure beside
# its threshold; the thresholds, and where each comes from:
RATER_FLAGS = {
    # leave-one-out Spearman ρ with the others' mean (scales) below this: the corrected item-total
    # correlation cut-off of 0.20 (Streiner, Norman & Cairney 2015, Health Measurement Scales, 5th ed., ch. 5),
    # with raters in place of items; the report's FLAG_MIN_LOO (studies.analysis.report) is the same number
    "min_loo_r": env.float("CONCORD_FLAG_MIN_LOO_R", default=0.2),
    # share of screens on which every response got the same value above this: the report's FLAG_MAX_STRAIGHT.
    # No published cut-off exists (Kim et al. 2019, Sociological Methods & Research 48(3), compare indicators
    # of straight-lining without one); 0.8 leaves raters whose screens are mostly identical
    "max_straight_lining": env.float("CONCORD_FLAG_MAX_STRAIGHT", default=0.8),
    # Gwet's AC1 with the others' majority label (labels) below this: "slight" agreement or less on the
    # Landis & Koch (1977, Biometrics 33(1)) scale, which Gwet (2014, Handbook of Inter-Rater Reliability,
    # 4th ed., ch. 6) applies to AC1. Not Cohen's κ: κ is 0 for a rater who always gives a prevalent label
    # at 97% agreement (Feinstein & Cicchetti 1990); AC1 is not (Gwet 2008; studies.analysis.rater_quality)
    "min_ac1": env.float("CONCORD_FLAG_MIN_AC1", default=0.2),
    # share of decisive A/B choices agreeing with the Bradley-Terry order at or below this: chance (0.5)
    "min_order_agreement": env.float("CONCORD_FLAG_MIN_ORDER_AGREEMENT", default=0.5),
    # median active seconds per item below this share of the study's median: "speeders", the 30% of the
    # median used by Greszki, Meyer & Schoen 2015 (Public Opinion Quarterly 79(2)) for too-fast responses
    "min_speed_share": env.float("CONCORD_FLAG_MIN_SPEED_SHARE", default=0.3),
    # top answer at the first shown position more often than chance, exact binomial test below this p:
    # the conventional 1% level, strict because every rater is tested (Holm would be stricter still)
    "position_p": env.float("CONCORD_FLAG_POSITION_P", default=0.01),
}
# The label aggregation the report uses for categorical and multi-label criteria (studies.analysis.aggregation:
# majority_vote, dawid_skene or mace); every method's accuracy on gold and check items is shown beside it.
LABEL_AGGREGATION_METHOD = env.str("CONCORD_LABEL_AGGREGATION", default="dawid_skene")
# How many of the most disputed items the review queue lists.
REVIEW_DISPUTED_ITEMS = env.int("CONCORD_REVIEW_DISPUTED_ITEMS", default=10)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "studies:experiment_list"
LOGOUT_REDIRECT_URL = "login"

# Rater pages (/r/...) may be framed by Mechanical Turk's sites and by these extra origins
# (comma-separated, e.g. "https://lab.example.org"); every other page refuses framing.
CONCORD_FRAME_ANCESTORS = env.list("CONCORD_FRAME_ANCESTORS", default=[])

# Uploads larger than this are refused before parsing; the same limit applies on the command line.
IMPORT_MAX_BYTES = env.int("CONCORD_IMPORT_MAX_BYTES", default=100 * 1024 * 1024)
# Chat-then-rate studies (studies.chat). Bot endpoints are researcher-entered URLs fetched by the server:
# loopback, link-local (cloud metadata) and private addresses are refused unless they lie in one of these
# networks (comma-separated CIDRs; the demo allows its loopback bot). Keys of endpoints are stored
# encrypted with CHAT_ENDPOINT_KEYS_SECRET (a Fernet key) when set, else with a key derived from SECRET_KEY.
CHAT_ALLOWED_NETWORKS = env.list("CONCORD_CHAT_ALLOWED_NETWORKS", default=[])
CHAT_ENDPOINT_KEYS_SECRET = env.str("CONCORD_CHAT_KEYS_SECRET", default="")
# The longest a rater's message waits for the system's reply, retries included (a call thread is held so long).
CHAT_REPLY_DEADLINE_SECONDS = env.float("CONCORD_CHAT_REPLY_DEADLINE", default=25.0)
# A rater's turn returns once the message is stored; the bot is asked in the web process's call threads
# (studies.chat.calls), at most CHAT_CALL_THREADS at once per process, and the page follows.
CHAT_BACKGROUND_REPLIES = env.bool("CONCORD_CHAT_BACKGROUND_REPLIES", default=True)
# The human-vs-metric page reads its correlations, judges' ranking and baselines as a worker stored them
# (metrics.summaries); True computes them in the request when none is stored yet.
METRIC_SUMMARIES_IN_REQUEST = env.bool("CONCORD_METRIC_SUMMARIES_IN_REQUEST", default=False)
CHAT_CALL_THREADS = env.int("CONCORD_CHAT_CALL_THREADS", default=32)
# Reports, figures and exports are computed in a pool of at most COMPUTE_POOL_WORKERS processes started on the
# first one (studies.compute_pool), so pandas, SciPy and matplotlib never load in a web process; 0 computes
# them in the request. A page waits COMPUTE_POOL_DEADLINE_SECONDS, then says it is computing and reloads; a
# pool process is replaced after COMPUTE_POOL_TASKS_PER_CHILD answers.
COMPUTE_POOL_WORKERS = env.int("CONCORD_COMPUTE_POOL_WORKERS", default=1)
COMPUTE_POOL_DEADLINE_SECONDS = env.float("CONCORD_COMPUTE_POOL_DEADLINE", default=20.0)
COMPUTE_POOL_TASKS_PER_CHILD = env.int("CONCORD_COMPUTE_POOL_TASKS_PER_CHILD", default=100)
# Several web nodes: a call's process is known alive on another machine by a lease in the shared cache
# (CACHE_URL), renewed every third of CHAT_CALLER_LEASE_SECONDS; a node killed mid-call is resumed by the
# other nodes' next look at the chat once its lease ends. CHAT_NODE_NAME names this node in the calls'
# names (default: the host name); two nodes on one host need different ones.
CHAT_CALLER_LEASE_SECONDS = env.float("CONCORD_CHAT_CALLER_LEASE", default=10.0)
CHAT_NODE_NAME = env.str("CONCORD_NODE_NAME", default="")

DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "config.auth.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's three, the JSON one answering a body nested too deeply with 400 instead of a RecursionError
    "DEFAULT_PARSER_CLASSES": ["config.parsers.JSONParser", "rest_framework.parsers.FormParser",
                               "rest_framework.parsers.MultiPartParser"],
    # DRF's two, the JSON one writing NaN and infinities as null (JSON has no NaN)
    "DEFAULT_RENDERER_CLASSES": ["config.renderers.JSONRenderer", "rest_framework.renderers.BrowsableAPIRenderer"],
    # one error envelope (RFC 9457 problem details) for every error, the project's exceptions mapped
    "EXCEPTION_HANDLER": "config.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "config.schema.ConcordAutoSchema",
    "DEFAULT_PAGINATION_CLASS": "config.pagination.Pagination",  # LimitOffsetPagination, bounded
    "PAGE_SIZE": 100,
    # unauthenticated API calls and the token endpoint (scope "auth") are rate limited per client
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.AnonRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env.str("API_ANON_RATE", default="60/minute"),
        "auth": env.str("API_TOKEN_RATE", default="10/minute"),
    },
    # `?format=` names the export format (csv, jsonl), not DRF's renderer.
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Concord API",
    "DESCRIPTION": "Human evaluation studies of dialogue systems: studies, items, imports, exports.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # studies.converters: an item's position and a row id are whole numbers (the token stays a string)
    "PATH_CONVERTER_OVERRIDES": {"position": {"type": "integer", "minimum": 0, "maximum": 999999},
                                 "id": {"type": "integer", "minimum": 0, "maximum": 999999999999999999}},
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI assets served by the app itself (no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Two models have a `platform` choice (a study's: invite/mturk/prolific/benchmark; a crowd publication's).
    "ENUM_NAME_OVERRIDES": {
        "StudyPlatformEnum": "studies.models.Study.Platform",
        "CrowdPlatformEnum": "crowd.models.Platform",
        # a criterion's judgement kind (studies.designs.kinds.KINDS; settings import no app code)
        "JudgementKindEnum": ["scale", "categorical", "multilabel", "free_text", "per_turn", "spans"],
        "KindEnum": "studies.models.CheckKind",
        "ApiTokenKindEnum": "studies.models.ApiToken.Kind",  # named or login
        "ImportJobStatusEnum": "studies.models.ImportJob.Status",  # an import job's, in its detail and the list  # a check item's kind keeps the name it had before
    },
}

# Celery (queues below); the filesystem broker needs no server.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=DEFAULT_BROKER_URL)
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(VAR_DIR / "broker" / "queue"),
        "data_folder_out": str(VAR_DIR / "broker" / "queue"),
        "processed_folder": str(VAR_DIR / "broker" / "processed"),
        # exchange tables (celery.pidbox.exchange, ...); kombu's default is ./control in the cwd
        "control_folder": str(VAR_DIR / "broker" / "control"),
        "store_processed": False,
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    # Redis re-delivers a message whose worker died (acks_late) once it has been unacknowledged this
    # long; keep it above the longest task so a slow run is not started twice.
    else {"visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=12 * 3600)}
)
CELERY_TASK_IGNORE_RESULT = True
# Queues by kind of work, so that one kind never waits behind another (docs/architecture.md, "Background
# jobs"): `calls` (outside endpoints: LLM judges, self-chats, crowd platforms), `imports`, `gpu` (training and
# learned-metric scoring), `periodic` (the beat's tasks) and `default`; config/workers.py says who serves each.
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    "studies.tasks.selfchat_run": {"queue": "calls"},
    "crowd.tasks.publication_sync": {"queue": "calls"},
    "crowd.tasks.crowd_practice_grant": {"queue": "calls"},
    "studies.tasks.import_job_run": {"queue": "imports"},
    "studies.tasks.studies_close_due": {"queue": "periodic"},
    "studies.tasks.selfchat_runs_recover": {"queue": "periodic"},
    "crowd.tasks.crowd_sync_all": {"queue": "periodic"},
    "crowd.tasks.crowd_qualifications_grant": {"queue": "periodic"},
    "metrics.tasks.scoring_runs_recover": {"queue": "periodic"},
    # a judge's scoring run is sent to `calls` by metrics.scoring.services.scoring_run_create; other metric work here
    "metrics.tasks.human_metric_summaries": {"queue": "default"},  # statistics on the CPU: never behind a training
    "metrics.tasks.*": {"queue": "gpu"},
}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# crowd platforms: sync MTurk/Prolific and abandon stale assignments every 10 minutes (needs `celery beat`)
CELERY_BEAT_SCHEDULE = {"crowd-sync": {"task": "crowd.tasks.crowd_sync_all", "schedule": 600.0},
                        "crowd-qualifications": {"task": "crowd.tasks.crowd_qualifications_grant", "schedule": 60.0},
                        "studies-close-due": {"task": "studies.tasks.studies_close_due", "schedule": 300.0},
                        "selfchat-runs-recover": {"task": "studies.tasks.selfchat_runs_recover",
                                                  "schedule": env.float("JOB_RECOVER_SECONDS", default=60.0)},
                        "scoring-runs-recover": {"task": "metrics.tasks.scoring_runs_recover",
                                                 "schedule": env.float("JOB_RECOVER_SECONDS", default=60.0)}}
# A running job (scoring run, self-chat run) holds a lease on its row, renewed every JOB_HEARTBEAT_SECONDS by
# its worker (which also reads a Cancel then); the beat's recover tasks find leases past their end (a worker
# killed or lost) and queue the run again, up to JOB_MAX_ATTEMPTS starts, then mark it failed with the reason.
JOB_LEASE_SECONDS = env.float("JOB_LEASE_SECONDS", default=120.0)
JOB_HEARTBEAT_SECONDS = env.float("JOB_HEARTBEAT_SECONDS", default=5.0)
JOB_MAX_ATTEMPTS = env.int("JOB_MAX_ATTEMPTS", default=3)
# Running jobs on the `calls` queue per researcher: their other ones wait queued, so that one researcher's
# slow endpoint never holds every slot of the calls worker.
JOB_CALLS_PER_OWNER = env.int("JOB_CALLS_PER_OWNER", default=2)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}

# ``manage.py load_demo`` creates a superuser whose password is in the README: allowed here and in
# local and test settings, never under production settings (config/settings/production.py).
DEMO_ALLOWED = True
