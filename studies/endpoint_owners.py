"""Whose endpoints are whose: an endpoint, its key and the chat systems it serves belong to
the researcher who made them. Nobody else sees, changes, tries or uses them; admins (superusers) see
all.

Experiments shared with collaborators: a chat study calls the endpoints of its experiment's *owner*.
A collaborator may build the items of a shared chat study from the owner's chat systems and its raters
chat with them (they *use* the owner's endpoints inside that experiment), but the endpoint pages, URL,
key and "Try it" stay the owner's; a collaborator's own endpoints are never called for another
researcher's experiment. An experiment without an owner (staff imports) uses only endpoints without
an owner (admin-only ones). Endpoints are resolved again at every call, so a study whose owner no
longer has an endpoint for a system fails that turn ("not set up correctly") rather than calling
someone else's key.

Only ``studies.models`` is imported here (a small shared module below the designs), so the chat unit,
the endpoint services and the chat
services can all ask without an import circle; ``studies.chat.selectors`` re-exports the two
selectors other parts call."""
from __future__ import annotations

from django.db.models import QuerySet

from studies.models import Study, StudyItem, System, SystemEndpoint


def endpoints_visible_to(user) -> QuerySet[SystemEndpoint]:
    """The endpoints ``user`` may see, change and try: their own; an admin's: every one."""
    endpoints = SystemEndpoint.objects.select_related("system", "owner")
    if user is None or not user.is_authenticated:
        return endpoints.none()
    if user.is_superuser:
        return endpoints
    return endpoints.filter(owner=user)


def chat_systems_usable_by(user) -> QuerySet[System]:
    """The systems ``user``'s own chat studies (and self-chats) may talk to: those they hold an endpoint
    for. An admin's too: seeing every endpoint is not using another researcher's key."""
    if user is None or not user.is_authenticated:
        return System.objects.none()
    return System.objects.filter(endpoints__owner=user).distinct()


def endpoints_of(owner_id: int | None) -> QuerySet[SystemEndpoint]:
    """The endpoints a chat study of an experiment owned by ``owner_id`` calls (None: admin-only ones)."""
    if owner_id is None:
        return SystemEndpoint.objects.filter(owner__isnull=True)
    return SystemEndpoint.objects.filter(owner_id=owner_id)


def study_endpoints(study: Study) -> QuerySet[SystemEndpoint]:
    """The endpoints ``study``'s chats may call: its experiment owner's."""
    return endpoints_of(study.experiment.owner_id)


def study_endpoint(study: Study, system_id: int) -> SystemEndpoint | None:
    """The endpoint a chat of ``study`` with ``system_id`` calls, or None (then the turn fails with
    "not set up correctly" and nobody's key is sent)."""
    return study_endpoints(study).filter(system_id=system_id).first()


def item_endpoints(item_id: int, system_ids: list[int], *, owner_id: int | None | bool = False) -> dict[int, SystemEndpoint]:
    """system id -> the endpoint a chat on this item calls (its study's experiment owner's), read at
    every turn: a system missing here has no endpoint the study may use. ``owner_id``: that owner as the
    caller has read it (None: the experiment has none, then the admin-only endpoints), for a plainer
    query; left out, it is read with the endpoints."""
    from django.db.models import F, Q, Subquery

    if owner_id is not False:
        return {e.system_id: e for e in endpoints_of(owner_id).filter(system_id__in=system_ids)}

    owner = Subquery(StudyItem.objects.filter(pk=item_id).values("study__experiment__owner_id")[:1])
    # one query (a chat turn reads it every time): the experiment owner's endpoints, or the admin-only
    # ones where the experiment has no owner
    endpoints = (SystemEndpoint.objects.filter(system_id__in=system_ids).annotate(study_owner=owner)
                 .filter(Q(owner_id=F("study_owner")) | Q(owner__isnull=True, study_owner__isnull=True)))
    return {e.system_id: e for e in endpoints}
