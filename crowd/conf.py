"""Deployment values the crowd app needs, read through ``config.env`` (the one place that reads the
environment) with a Django setting taking precedence where one is defined."""
from __future__ import annotations

from django.conf import settings

from config.env import env


def public_base_url() -> str:
    """Where workers reach this site (``CONCORD_PUBLIC_URL``, e.g. https://concord.example.org);
    MTurk's ExternalQuestion and Prolific's study URL are built on it."""
    value = getattr(settings, "CONCORD_PUBLIC_URL", None) or env.str("CONCORD_PUBLIC_URL", default="")
    return value.rstrip("/")


def prolific_token() -> str:
    return getattr(settings, "PROLIFIC_TOKEN", None) or env.str("PROLIFIC_TOKEN", default="")
