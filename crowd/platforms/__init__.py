"""The crowd platforms behind one protocol (``base.CrowdPlatform``), one module each, and the
registry that maps a publication's ``platform`` to its object. A new platform is a module here that
subclasses ``CrowdPlatform``, one line in ``PLATFORMS``, and its choice in ``crowd.models.Platform``."""
from __future__ import annotations

from django.core.exceptions import ValidationError

from crowd.models import Publication
from crowd.platforms import mturk, prolific
from crowd.platforms.base import CrowdPlatform

PLATFORMS: dict[str, CrowdPlatform] = {p.key: p for p in (mturk.PLATFORM, prolific.PLATFORM)}


def platform_of(publication_or_key: Publication | str) -> CrowdPlatform:
    """The platform object of a publication (or of a ``Platform`` value); ValidationError names the
    known ones when there is no such platform."""
    key = publication_or_key.platform if isinstance(publication_or_key, Publication) else publication_or_key
    try:
        return PLATFORMS[key]
    except (KeyError, TypeError):
        raise ValidationError({"platform": f"one of {', '.join(PLATFORMS)}"}) from None
