"""Writes and reads of system endpoints (researcher settings): set one, try it, and build the client's
``Endpoint`` for a call with its key decrypted only then. An endpoint is its owner's
(``studies.endpoint_owners``): ``endpoint_set`` writes the owner's own endpoint for a system, never
another researcher's."""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from studies.chat import keys
from studies.chat.addresses import Network, literal_problem, networks_parse
from studies.chat.client import BotError, BotReply, Endpoint, bot_reply
from studies.endpoint_owners import endpoints_of
from studies.models import System, SystemEndpoint

PROBE = [{"speaker": "user", "text": "Hello! This is a test message from Concord."}]


def allowed_networks() -> list[Network]:
    """The deployment's ``CHAT_ALLOWED_NETWORKS`` (empty: only public addresses)."""
    return networks_parse(getattr(settings, "CHAT_ALLOWED_NETWORKS", []) or [])


def _url_problem(url: str) -> str | None:
    """What is wrong with the URL for this deployment, or None: its syntax, or a refused literal address.
    A host name is not looked up here (it is checked before every call, "Try it" included), so saving
    the form says nothing about which names resolve."""
    return literal_problem(url, allowed_networks())


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


@transaction.atomic
def endpoint_owner_set(*, endpoint: SystemEndpoint, owner) -> SystemEndpoint:
    """An admin gives an endpoint (an admin-only one left by the migration, say) to a researcher, its
    key unchanged; refused, naming the field, when that researcher already has one for the system."""
    locked = SystemEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    owner_id = getattr(owner, "pk", owner)
    if owner_id == locked.owner_id:
        return locked
    if endpoints_of(owner_id).filter(system_id=locked.system_id).exists():
        raise ValidationError({"owner": "that researcher already has an endpoint for this system"})
    locked.owner_id = owner_id
    locked.save(update_fields=["owner", "updated_at"])
    return locked


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


# What the researcher can do about each kind of failure ("Try it"); the detail comes first.
TRY_HINTS = {
    "timeout": "check that the server is running and answers within the timeout per attempt (raise it for a slow "
               "model); the whole call stops at CONCORD_CHAT_REPLY_DEADLINE",
    "connection": "check the URL's host and port, and that the server accepts connections from this site",
    "reply": "the server must answer HTTP 200 with JSON in the endpoint's protocol (Concord: {\"reply\": \"...\"}; "
             "OpenAI-compatible: choices[0].message.content)",
    "redirect": "use the final URL instead of one that redirects",
    "key": "set the key again, or set the environment variable on the web server and the workers",
}
STATUS_HINTS = {
    401: "the server refused the key: check it (or the environment variable it comes from)",
    403: "the server refused the key: check it (or the environment variable it comes from)",
    404: "check the URL's path (OpenAI-compatible: the base URL ending in /v1, or the full …/chat/completions)",
    405: "check the URL's path: the endpoint must accept POST",
    429: "the server is rate limiting: try again later or raise its limit",
}


def try_message(error: BotError) -> str:
    """A "Try it" failure in the researcher's terms: what happened and what to change. An address
    refusal is the same for a name that does not resolve and one that resolves to a refused address."""
    if error.kind == "status":
        hint = STATUS_HINTS.get(error.status or 0) or ("the server failed: look at its logs"
                                                       if (error.status or 0) >= 500 else "")
    else:
        hint = TRY_HINTS.get(error.kind, "")
    return f"{error}" + (f". What to do: {hint}." if hint else "")


@transaction.atomic
def endpoint_delete(*, endpoint: SystemEndpoint) -> None:
    """Remove an endpoint (its stored key with it). A chat study or self-chat that talks to the system
    through it gets "the system has no endpoint" on its next call, as when the key is cleared."""
    SystemEndpoint.objects.filter(pk=endpoint.pk).delete()
