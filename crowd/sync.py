"""Syncing a publication with its platform: the platform object reads its view of every
acceptance and reconciles Concord's assignments (``crowd.platforms``); a failing call is recorded
on the publication so the Crowd page shows it."""
from __future__ import annotations

from typing import Any

from crowd.errors import PlatformError
from crowd.models import Publication
from crowd.platforms import platform_of
from crowd.platforms.base import SyncSummary, record_error


def publication_sync(*, publication: Publication, client: Any = None) -> SyncSummary:
    """Read the platform's view of the publication and reconcile Concord's assignments with it."""
    try:
        summary = platform_of(publication).sync(publication=publication, client=client)
    except PlatformError as error:
        record_error(publication, error)
        raise
    Publication.objects.filter(pk=publication.pk).update(last_error="")
    return summary
