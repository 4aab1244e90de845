"""Writes and reads of system endpoints (researcher settings): set one, try it, and build the client's
``Endpoint`` for a call with its key decrypted only then. An endpoint is its owner's
(``studies.chat.ownership``): ``endpoint_set`` writes the owner's own endpoint for a system, never
another researcher's."""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from studies.chat import keys
from studies.chat.addresses import AddressRefused, Network, networks_parse, resolve, url_parse
from studies.chat.client import BotError, BotReply, Endpoint, bot_reply
from studies.chat.ownership import endpoints_of
from studies.models import System, SystemEndpoint

PROBE = [{"speaker": "user", "text": "Hello! This is a test message from Concord."}]


def allowed_networks() -> list[Network]:
    """The deployment's ``CHAT_ALLOWED_NETWORKS`` (empty: only public addresses)."""
    return networks_parse(getattr(settings, "CHAT_ALLOWED_NETWORKS", []) or [])


def _url_problem(url: str) -> str | None:
    """What is wrong with the URL for this deployment, or None. A name that does not resolve now is
    accepted (the check runs again before every call); a refused address is not."""
    try:
        target = url_parse(url)
        resolve(target.host, target.port, allowed=allowed_networks())
    except AddressRefused as error:
        return None if error.kind == "dns" else str(error)
    return None


@transaction.atomic
def endpoint_set(*, owner, system: System, protocol: str, url: str, model_name: str = "", key: str = "",
                 key_env: str = "", clear_key: bool = False, timeout_seconds: float = 10.0,
                 retries: int = 2) -> SystemEndpoint:
    """Create or change ``owner``'s endpoint for ``system`` (``owner`` None: the admin-only one). ``key`` (stored encrypted) and ``key_env`` (the name of a
    ``CONCORD_BOT_KEY_*`` variable) are alternatives; giving neither keeps the stored key unless
    ``clear_key``. Every bad field is named; nothing is written then."""
    errors: dict[str, str] = {}
    if protocol not in SystemEndpoint.Protocol.values:
        errors["protocol"] = f"choose one of {', '.join(SystemEndpoint.Protocol.values)}"
    url = (url or "").strip()
    if problem := _url_problem(url):
        errors["url"] = problem
    model_name = (model_name or "").strip()
    if len(model_name) > 200:
        errors["model_name"] = "at most 200 characters"
    key, key_env = (key or "").strip(), (key_env or "").strip()
    if key and key_env:
        errors["key"] = "give a key or the name of an environment variable, not both"
    elif key and (problem := keys.key_problem(key)):
        errors["key"] = f"the key {problem}"
    elif key_env and (problem := keys.env_name_problem(key_env)):
        errors["key_env"] = problem
    if isinstance(timeout_seconds, bool) or not isinstance(timeout_seconds, (int, float)) \
            or not 0.5 <= timeout_seconds <= 60:
        errors["timeout_seconds"] = f"must be from 0.5 to 60 seconds, got {timeout_seconds!r}"
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 5:
        errors["retries"] = f"must be a whole number from 0 to 5, got {retries!r}"
    if errors:
        raise ValidationError(errors)
    owner_id = getattr(owner, "pk", owner)
    endpoint = (endpoints_of(owner_id).select_for_update().filter(system=system).first()
                or SystemEndpoint(system=system, owner_id=owner_id))
    endpoint.protocol, endpoint.url, endpoint.model_name = protocol, url, model_name
    endpoint.timeout_seconds, endpoint.retries = float(timeout_seconds), retries
    if key:
        endpoint.key_encrypted, endpoint.key_env = keys.key_encrypt(key), ""
    elif key_env:
        endpoint.key_env, endpoint.key_encrypted = key_env, ""
    elif clear_key:
        endpoint.key_env = endpoint.key_encrypted = ""
    endpoint.save()
    return endpoint


def endpoint_for_call(endpoint: SystemEndpoint | None) -> Endpoint:
    """The client's view of an endpoint, its key decrypted (or read from the environment) for this call
    only; BotError("key") when it cannot be had."""
    if endpoint is None:
        raise BotError("key", "the system has no endpoint")
    try:
        key = keys.endpoint_key(key_env=endpoint.key_env, key_encrypted=endpoint.key_encrypted)
    except keys.KeyUnavailable as error:
        raise BotError("key", str(error)) from None
    return Endpoint(protocol=endpoint.protocol, url=endpoint.url, model=endpoint.model_name, key=key,
                    timeout=endpoint.timeout_seconds, retries=endpoint.retries)


def endpoint_try(*, endpoint: SystemEndpoint) -> BotReply:
    """Send one greeting to the endpoint (the researcher's "Try it"); the reply or BotError."""
    return bot_reply(endpoint_for_call(endpoint), PROBE, conversation_id="concord-probe",
                     deadline_seconds=settings.CHAT_REPLY_DEADLINE_SECONDS, allowed=allowed_networks())
