"""Production settings: secrets from the environment, HTTPS only, secure cookies, compressed static files.

Behind a TLS-terminating proxy (docker/Caddyfile) that sets X-Forwarded-Proto; Django then redirects
plain HTTP to HTTPS, sends HSTS and marks the session and CSRF cookies Secure."""
from config.security import checked_secret_key
from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = False
DEMO_ALLOWED = False  # load_demo's superuser has the README's password
SECRET_KEY = checked_secret_key(env.str("DJANGO_SECRET_KEY", default=""))
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
SESSION_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=True)
SESSION_COOKIE_HTTPONLY = True
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
# one year once the site is known to work over HTTPS; set 0 for a first trial on a new domain
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = False
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
