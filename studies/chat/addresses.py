"""Which URLs and addresses a researcher-entered bot endpoint may reach (no Django here).

An endpoint URL is typed by a researcher and fetched by the server, so it is a server-side request
forgery surface (OWASP's SSRF prevention cheat sheet): unguarded, it reaches the cloud metadata service
(169.254.169.254), the database on loopback or the private network. The rule:

- http or https only, a host name, no user name or password in the URL;
- every address the host resolves to must be public: ``ipaddress``'s ``is_global`` and not multicast or
  site-local, with IPv4 carried inside IPv6 (mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4
  ``2002::/16``) judged as the IPv4 address it carries. That refuses loopback, link-local (the metadata
  service), private (10/8, 172.16/12, 192.168/16, fc00::/7), shared (100.64/10), benchmarking, reserved
  and unspecified addresses;
- unless the address lies in a network the deployment allows (``CHAT_ALLOWED_NETWORKS``; the demo and the
  tests allow their loopback bot).

The address checked is the address connected to (``studies.chat.client`` connects to it by number and
sends the host name only in the Host header and TLS SNI), so a second, different DNS answer (rebinding)
is never used, and every redirect hop is checked the same way before it is followed.
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

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[..., list]


class AddressRefused(ValueError):
    """The URL may not be fetched; the message says why in the researcher's terms. ``kind``: "url" (the
    text is not a usable URL), "dns" (the name did not resolve: perhaps only for now) or "address"."""

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
    if address.is_multicast or not address.is_global:
        return False
    return not (isinstance(address, ipaddress.IPv6Address) and address.is_site_local)


def address_problem(address: IPAddress, allowed: Sequence[Network] = ()) -> str | None:
    """Why an endpoint may not connect to ``address``, or None when it may."""
    carried = _carried_ipv4(address)
    judged = carried or address
    if any(judged.version == net.version and judged in net for net in allowed):
        return None
    if carried is not None and not _public(carried):
        return f"{address} carries the IPv4 address {carried}, which is {_kind(carried)}"
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
    if address.is_private:
        return "a private address"
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
        addresses = [literal]
    else:
        try:
            answers = resolver(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as error:
            raise AddressRefused(f"the host {host} could not be resolved ({error})", kind="dns") from None
        addresses = list(dict.fromkeys(ipaddress.ip_address(a[4][0].split("%")[0]) for a in answers))
        if not addresses:
            raise AddressRefused(f"the host {host} has no address", kind="dns")
    for address in addresses:
        if problem := address_problem(address, allowed):
            where = "" if literal is not None else f"{host} resolves to "
            raise AddressRefused(f"refused: {where}{problem}; endpoints must be public addresses "
                                 "(a deployment may allow networks with CONCORD_CHAT_ALLOWED_NETWORKS)", kind="address")
    return str(addresses[0])
