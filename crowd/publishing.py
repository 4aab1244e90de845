"""Configuring and publishing a publication, the same on every platform: settings cleaned and
merged (the reward is the study's), the cost estimate, the reasons to refuse, and the publish call,
each asked of the publication's platform object (``crowd.platforms``).

Order of work, so that a platform error leaves Concord's state unchanged: check locally (refuse,
sending nothing), call the platform, then record what the platform accepted.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from crowd import costs
from crowd.models import Publication
from crowd.platforms import platform_of
from studies.authoring import editing
from studies.models import Study


def effective_settings(publication: Publication) -> dict[str, Any]:
    """The publication's settings with defaults filled in (a researcher sets only what differs)."""
    return platform_of(publication).effective_settings(publication)


@transaction.atomic
def publication_configure(*, study: Study, platform: str, sandbox: bool = True,
                          settings: Mapping[str, Any] | None = None) -> Publication:
    """Create or update a study's publication on a platform (nothing is sent). Settings merge into
    the stored ones; the settings of a publication already sent can no longer change."""
    kind = platform_of(platform)
    sandbox = bool(sandbox) and kind.has_sandbox
    cleaned = kind.clean_settings(settings or {})
    publication, _ = Publication.objects.select_for_update().get_or_create(
        study=study, platform=platform, sandbox=sandbox)
    if cleaned and publication.status != Publication.Status.DRAFT:
        raise ValidationError({"settings": "this publication was already sent to the platform; its settings are fixed"})
    reward = kind.reward_from(cleaned)
    if reward is not None:  # the study's reward (studies.authoring.planning reads it too)
        editing.study_update(study=study, values={"reward": costs.money(reward)})
        study.refresh_from_db(fields=["reward"])
        publication.study = study
    publication.settings = {**publication.settings, **cleaned}
    publication.save(update_fields=["settings"])
    return publication


def publication_estimate(publication: Publication) -> costs.Estimate:
    kind = platform_of(publication)
    return kind.estimate(kind.effective_settings(publication))


def publish_problems(publication: Publication, *, confirm_production: bool) -> list[str]:
    """Why this publication cannot be sent now (empty when it can). Checked before any call."""
    return platform_of(publication).publish_problems(publication, confirm_production=confirm_production)


def publication_publish(*, publication: Publication, confirm_production: bool = False,
                        draft_only: bool = False) -> Publication:
    """Send the publication to its platform (refused, sending nothing, while ``publish_problems``
    has anything to say); ``draft_only`` creates it unpublished where the platform can."""
    return platform_of(publication).publish(publication=publication, confirm_production=confirm_production,
                                            draft_only=draft_only)
