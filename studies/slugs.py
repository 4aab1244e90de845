"""Unique slugs for experiments, studies, corpora and systems (suffixes -2, -3, ... on clashes; retried on a race)."""
from __future__ import annotations

import secrets

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils.text import slugify


def unique_slug(model: type, text: str, *, field_name: str = "slug", max_length: int = 80) -> str:
    """A slug for ``text`` not yet used by ``model`` (suffixes -2, -3, ... on clashes)."""
    base = slugify(text)[: max_length - 6] or "untitled"
    candidate, n = base, 1
    while model.objects.filter(**{field_name: candidate}).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate


SLUG_ATTEMPTS = 5


def _slug_not_available(slug: str) -> ValidationError:
    # Says nothing about whose object holds the slug (it may be another researcher's).
    return ValidationError({"slug": [f"the slug {slug!r} is not available; choose another"]})


def _create_with_slug(model: type, *, slug: str | None, text: str, **fields):
    """``model.objects.create(slug=..., **fields)`` that survives a concurrent create of the same slug.

    The check-then-insert of ``unique_slug`` races: two requests can pick the same free slug and the
    second insert raises IntegrityError. Each insert runs in a savepoint; an explicit slug that turns
    out taken is a ValidationError, an automatic one moves on to the next free slug (then a random
    suffix, so retries cannot collide again)."""
    for attempt in range(SLUG_ATTEMPTS):
        candidate = slug or unique_slug(model, text)
        if attempt >= 2 and not slug:
            candidate = f"{candidate[:72]}-{secrets.token_hex(3)}"
        try:
            with transaction.atomic():
                return model.objects.create(slug=candidate, **fields)
        except IntegrityError:
            if not model.objects.filter(slug=candidate).exists():
                raise  # another constraint: not a slug race
            if slug:
                raise _slug_not_available(slug) from None
    raise _slug_not_available(candidate)
