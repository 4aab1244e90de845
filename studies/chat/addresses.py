"""Which URLs and addresses a researcher-entered bot endpoint may reach (no Django here).

An endpoint URL is typed by a researcher and fetched by the server, so it is a server-side request
forgery surface (OWASP's SSRF prevention cheat sheet): unguarded, it reaches the cloud metadata service
(169.254.169.254), the database on loopback or the private network. The rule:

- http or https only, a host name, no user name or password in the URL;
- every address the host resolves to must be global, judged by ``ipaddress``'s own properties, never a
  list of forms typed here: ``is_global`` and none of ``is_private``, ``is_reserved``, ``is_loopback``,
  ``is_link_local``, ``is_multicast``, ``is_unspecified``, ``is_site_local``. IPv4 carried inside IPv6
  (mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``) is judged as the IPv4 address it
  carries; the deprecated IPv4-compatible form (``::a.b.c.d``, e.g. ``::127.0.0.1``), the
  local-use NAT64 prefix and the rest of ``::/8`` are reserved and refused whatever they carry. That
  refuses loopback, link-local (the metadata service), private (10/8, 172.16/12, 192.168/16, fc00::/7),
  shared (100.64/10), benchmarking, documentation, reserved and unspecified addresses;
- unless the address lies in a network the deployment allows (``CHAT_ALLOWED_NETWORKS``; the demo and the
  tests allow their loopback bot).

The address checked is the address connected to (``studies.chat.client`` connects to it by number and
sends the host name only in the Host header and TLS SNI), so a second, different DNS answer (rebinding)
is never used, and every redirect hop is checked the same way before it is followed.

No DNS oracle: for a host *name*, "does not resolve" and "resolves to an address that is refused" are
one message (``NAME_REFUSED``), so the endpoint form and "Try it" cannot be used to learn which
internal names exist or where they point. A literal address is named with its reason (no lookup is
involved).
"""
from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

URL_MAX_LENGTH = 500
SCHEMES = {"http": 80, "https": 443}
NAT64 = ipaddress.ip_network("64:ff9b::/96")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # for naming it only: is_reserved already refuses it
NAME_REFUSED = ("{host} does not resolve to an address endpoints may use: check the host name; an endpoint must be "
                "reachable at a public address (a deployment may allow networks with CONCORD_CHAT_ALLOWED_NETWORKS)")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[..., list]


class AddressRefused(ValueError):
    """The URL may not be fetched; the message says why in the researcher's terms. ``kind``: "url" (the
    text is not a usable URL) or "address" (a refused literal address, or a name that does not resolve
    to an allowed one: the two are not told apart)."""

    def __init__(self, message: str, *, kind: str = "url"):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Target:
    """A URL taken apart: what to connect to and what to ask for."""

    scheme: str
    host: str  # as written (a name, or an address without brackets)
    port: int
    path: str  # path and query, at least "/"

    @property
    def origin(self) -> tuple[str, str, int]:
        return self.scheme, self.host.lower(), self.port

    @property
    def host_header(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host
        return name if self.port == SCHEMES[self.scheme] else f"{name}:{self.port}"


def url_parse(url: str) -> Target:
    """The URL's parts, or AddressRefused naming what is wrong with it (nothing is resolved here)."""
    text = (url or "").strip()
    if not text:
        raise AddressRefused("enter the endpoint's URL")
    if len(text) > URL_MAX_LENGTH:
        raise AddressRefused(f"the URL is longer than {URL_MAX_LENGTH} characters")
    if any(ord(c) < 33 or ord(c) == 127 for c in text):
        raise AddressRefused("the URL contains spaces or control characters")
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise AddressRefused(f"the URL must start with http:// or https://, not {parts.scheme or text[:10]!r}")
    if parts.username is not None or parts.password is not None:
        raise AddressRefused("the URL must not contain a user name or password; enter a key instead")
    host = parts.hostname or ""
    if not host:
        raise AddressRefused("the URL has no host")
    try:
        port = parts.port or SCHEMES[scheme]
    except ValueError:
        raise AddressRefused("the URL's port is not a number from 1 to 65535") from None
    if port == 0:
        raise AddressRefused("the URL's port is not a number from 1 to 65535")
    path = parts.path or "/"
    return Target(scheme=scheme, host=host, port=port, path=f"{path}?{parts.query}" if parts.query else path)


def networks_parse(values: Iterable[str]) -> list[Network]:
    """The deployment's allowed networks (``CHAT_ALLOWED_NETWORKS``), e.g. ["127.0.0.0/8", "::1/128"]."""
    return [ipaddress.ip_network(str(v).strip(), strict=False) for v in values if str(v).strip()]


def _carried_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, NAT64, 6to4), if any."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def _public(address: IPAddress) -> bool:
    """Global by every property ``ipaddress`` has (``is_global`` alone misses some on older Pythons)."""
    if not address.is_global:
        return False
    if (address.is_private or address.is_reserved or address.is_loopback or address.is_link_local
            or address.is_multicast or address.is_unspecified):
        return False
    return not (isinstance(address, ipaddress.IPv6Address) and address.is_site_local)


def address_problem(address: IPAddress, allowed: Sequence[Network] = ()) -> str | None:
    """Why an endpoint may not connect to ``address``, or None when it may. A mapped or NAT64 address is
    only a wrapper: what it carries decides; a 6to4 address must pass as itself and as what it carries."""
    carried = _carried_ipv4(address)
    judged = carried or address
    if any(judged.version == net.version and judged in net for net in allowed):
        return None
    if carried is not None:
        if not _public(carried):
            return f"{address} carries the IPv4 address {carried}, which is {_kind(carried)}"
        if address.ipv4_mapped is not None or address in NAT64:
            return None
    if not _public(address):
        return f"{address} is {_kind(address)}"
    return None


def _kind(address: IPAddress) -> str:
    if address.is_loopback:
        return "a loopback address (this machine)"
    if address.is_link_local:
        return "a link-local address (where cloud metadata services live)"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, ipaddress.IPv6Address) and address in IPV4_COMPATIBLE:
        return "an IPv4-compatible IPv6 address (deprecated; use the IPv4 address or ::ffff:a.b.c.d)"
    if address.is_private:
        return "a private address"
    if address.is_reserved:
        return "a reserved address"
    return "not a public address"


def resolve(host: str, port: int, *, allowed: Sequence[Network] = (),
            resolver: Resolver = socket.getaddrinfo) -> str:
    """The address to connect to for ``host``: every address it resolves to must pass
    ``address_problem`` (one bad answer refuses the host: a name that mixes public and private
    answers is how rebinding attacks start), and the first one is returned for the caller to connect to."""
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        if problem := address_problem(literal, allowed):
            raise AddressRefused(f"refused: {problem}; endpoints must be public addresses (a deployment may allow "
                                 "networks with CONCORD_CHAT_ALLOWED_NETWORKS)", kind="address")
        return str(literal)
    # A name: not resolving and resolving to a refused address are one answer (no DNS oracle).
    try:
        answers = resolver(host, port, type=socket.SOCK_STREAM)
        addresses = list(dict.fromkeys(ipaddress.ip_address(a[4][0].split("%")[0]) for a in answers))
    except (OSError, UnicodeError, ValueError):
        addresses = []
    if not addresses or any(address_problem(address, allowed) for address in addresses):
        raise AddressRefused(NAME_REFUSED.format(host=host), kind="address")
    return str(addresses[0])


def literal_problem(url: str, allowed: Sequence[Network] = ()) -> str | None:
    """What is wrong with ``url`` without looking any name up (the endpoint form): its syntax, or a
    literal address that is refused. A host name is checked at every call, with one message whether
    it does not resolve or resolves to a refused address."""
    try:
        target = url_parse(url)
        ipaddress.ip_address(target.host)
    except AddressRefused as error:
        return str(error)
    except ValueError:
        return None  # a name
    try:
        resolve(target.host, target.port, allowed=allowed)
    except AddressRefused as error:
        return str(error)
    return None
