"""Guarded network access: every outbound connection to a user-supplied address passes here.

Targets are refused when they resolve to loopback, private, link-local, multicast, reserved or
otherwise non-global addresses (contract §7), unless the operator allows private targets.
The refusal happens twice: when a target is saved (``check_url``/``check_literal``, names only
checked for shape) and when it is contacted (``resolve``, and inside ``guarded_session`` at
connection time), so DNS rebinding and redirects towards internal addresses are refused too.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import SimpleNamespace
from typing import Final

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

USER_AGENT: Final = "Upwatch (uptime monitor; +https://upwatch.dev)"


def probe_user_agent(region_code: str) -> str:
    """What a probe says it is: the version and the region it checks from, so the owner of a
    target can tell Upwatch's regions apart in their logs (and test per-region failures)."""
    from upwatch import __version__

    return f"Upwatch/{__version__} (+region {region_code})"


# The operator's way to let checks and webhooks reach internal addresses (config.Settings
# reads it; a test keeps the two equal). Every refusal it would lift names it.
ALLOW_PRIVATE_SETTING: Final = "UPWATCH_ALLOW_PRIVATE_TARGETS"
_ALLOW_PRIVATE_HINT: Final = f"allowed only when the operator sets {ALLOW_PRIVATE_SETTING}=true"

# Where a request's caller wants the addresses it resolved and connected to (failure
# evidence): a context variable, since aiohttp gives its resolver and socket factory no handle
# on the request.
resolved_addresses: ContextVar[list[str] | None] = ContextVar("resolved_addresses", default=None)

# NAT64 gateways translate these onto IPv4 (RFC 6052, RFC 8215), so the embedded IPv4
# address is where the packet really goes.
_NAT64_PREFIXES: Final = (
    ipaddress.IPv6Network("64:ff9b::/96"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
)


class TargetRefused(Exception):
    """The target is, or resolves to, an address outbound checks may not reach.

    Deliberately not an ``OSError``: aiohttp lets it through unwrapped, so callers can tell
    a policy refusal from a network failure.
    """


class ResolutionFailed(OSError):
    """The name did not resolve (no such name, no address, or the lookup timed out).

    An ``OSError`` so that aiohttp reports it like any other lookup failure
    (``aiohttp.ClientConnectorDNSError``).
    """


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    for prefix in _NAT64_PREFIXES:
        if address in prefix:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _refusal_reason(address: IPAddress) -> str | None:
    """Why ``address`` is refused, or None when it is public."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            reason = _refusal_reason(embedded)
            return None if reason is None else f"embeds {embedded}, {reason}"
        if address.is_site_local:
            return "site-local"
    # Order matters only for the message: the most specific word first.
    checks = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    )
    for reason, refused in checks:
        if refused:
            return reason
    # is_global also excludes shared address space (CGNAT, 100.64.0.0/10).
    return None if address.is_global else "not globally routable"


def is_public(address: IPAddress) -> bool:
    """Whether ``address`` is a globally routable unicast address."""
    return _refusal_reason(address) is None


def _parse_literal(host: str) -> IPAddress | None:
    """The address ``host`` denotes without DNS, or None when it is a name.

    Besides canonical forms this accepts what ``inet_aton`` accepts (``127.1``, ``2130706433``,
    ``0x7f000001``), because the system resolver treats those as addresses too.
    """
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if ":" in bare or not bare or not bare[0].isdigit():
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(bare))
    except OSError:
        return None


# A label DNS can look up (RFC 1035, plus the underscore some names carry), in ASCII form:
# an internationalised name is checked as its punycode.
_LABEL = re.compile(r"[A-Za-z0-9_-]{1,63}")


def check_host_name(host: str) -> None:
    """Refuse (``ValueError``) a host that is neither an address nor a name DNS can look up:
    an empty label (``a..b``), a label over 63 or a name over 253 characters, a character no
    name has, a punycode label (``xn--``) that does not decode. Saved as is, such a target
    would only ever fail its checks. ``host`` in ASCII (yarl's ``raw_host``)."""
    if _parse_literal(host) is not None:
        return
    name = host.removesuffix(".")  # a fully qualified name's final dot
    if len(name) > 253:
        raise ValueError("the host is longer than 253 characters")
    for label in name.split("."):
        if not label:
            raise ValueError("the host has an empty label (a dot at its start, or two in a row)")
        if len(label) > 63:
            raise ValueError(f"the host has a label longer than 63 characters: {label[:20]}…")
        if not _LABEL.fullmatch(label):
            raise ValueError(
                f"the host is not a valid domain name: {label!r} holds other characters "
                "than letters, digits, - and _"
            )
        if label[:4].lower() == "xn--":
            try:
                label.encode("ascii").decode("idna")
            except UnicodeError:
                raise ValueError(
                    f"the host is not a valid domain name: {label!r} is not valid punycode"
                ) from None


def _is_localhost_name(host: str) -> bool:
    name = host.rstrip(".").lower()
    return name == "localhost" or name.endswith(".localhost")


class NetworkGuard:
    """The one policy for outbound addresses.

    Rule for names with several addresses: the name is refused when ANY of its addresses is
    refused. Allowing a name with one public and one private address would let the
    connection (or a later re-resolution) land on the private one.
    """

    def __init__(
        self, allow_private: bool, dns_timeout: float = 5.0, loopback_only: bool = False
    ) -> None:
        self.allow_private = allow_private
        self.dns_timeout = dns_timeout
        # Test and benchmark machines may reach nothing but themselves: with this set, only
        # loopback addresses are permitted and no name but localhost is ever looked up.
        self.loopback_only = loopback_only

    def permits(self, address: IPAddress) -> bool:
        """Whether a connection to ``address`` may be opened."""
        if self.loopback_only and not address.is_loopback:
            return False
        return self.allow_private or is_public(address)

    def _refuse_address(self, address: IPAddress, host: str) -> None:
        if self.permits(address):
            return
        reason = _refusal_reason(address)
        shown = str(address) if host.strip("[]") == str(address) else f"{host} ({address})"
        if reason is None or self.allow_private:  # refused only by ``loopback_only``
            raise TargetRefused(f"{shown}: only loopback targets are reached here")
        raise TargetRefused(f"{shown} is not a public address ({reason}); {_ALLOW_PRIVATE_HINT}")

    def check_literal(self, host: str) -> None:
        """Refuse a host that is an address or a local name, without any DNS lookup.

        Used when a target is saved; names that need DNS are checked when contacted.
        """
        if self.allow_private:
            return
        if _is_localhost_name(host):
            raise TargetRefused(f"{host} is a local name; {_ALLOW_PRIVATE_HINT}")
        address = _parse_literal(host)
        if address is not None:
            self._refuse_address(address, host)

    def check_url(self, url: str, schemes: tuple[str, ...] = ("http", "https")) -> None:
        """Validate a target URL's shape and refuse literal internal hosts.

        Raises ``ValueError`` for a malformed URL, another scheme than ``schemes``, or a host
        that is no address or domain name (``check_host_name``).
        Parsed with yarl, the parser aiohttp itself uses, so both read the same host.
        """
        try:
            parsed = URL(url)
            port = parsed.port
            host = parsed.host  # decodes punycode, which can fail too
        except UnicodeError:
            # yarl encodes and decodes the host with IDNA: the only part that can fail so.
            raise ValueError("the host is not a valid domain name: IDNA cannot read it") from None
        except (ValueError, TypeError) as exc:
            raise ValueError(f"not a valid URL: {exc}") from exc
        if parsed.scheme not in schemes:
            raise ValueError(f"the URL scheme must be {' or '.join(schemes)}")
        if not host or not parsed.raw_host:
            raise ValueError("the URL has no host")
        if port is not None and not 0 < port < 65536:
            raise ValueError("the URL port is out of range")
        check_host_name(parsed.raw_host)
        self.check_literal(host)

    async def resolve(self, host: str, port: int) -> list[str]:
        """The addresses to connect to for ``host``, every one of them permitted.

        Raises ``TargetRefused`` when any address is refused (see the class rule) and
        ``ResolutionFailed`` when the name does not resolve within ``dns_timeout``.
        """
        literal = _parse_literal(host)
        if literal is not None:
            self._refuse_address(literal, host)
            return [str(literal)]
        if not self.allow_private and _is_localhost_name(host):
            raise TargetRefused(f"{host} is a local name; {_ALLOW_PRIVATE_HINT}")
        if self.loopback_only and not _is_localhost_name(host):
            raise TargetRefused(f"{host}: only loopback targets are reached here")
        infos = await self._lookup(host, port)
        addresses: list[str] = []
        for _family, _type, _proto, _canonname, sockaddr in infos:
            text = str(sockaddr[0])
            if text not in addresses:
                addresses.append(text)
        if not addresses:
            raise ResolutionFailed(f"{host} has no address")
        for text in addresses:
            self._refuse_address(ipaddress.ip_address(text.split("%", 1)[0]), host)
        return addresses

    async def _lookup(
        self, host: str, port: int
    ) -> list[tuple[socket.AddressFamily, socket.SocketKind, int, str, tuple[object, ...]]]:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.dns_timeout):
                result = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except TimeoutError as exc:
            raise ResolutionFailed(f"looking up {host} timed out") from exc
        except (socket.gaierror, UnicodeError) as exc:
            raise ResolutionFailed(f"{host} does not resolve: {exc}") from exc
        return [(f, t, p, c, tuple(s)) for f, t, p, c, s in result]

    def open_socket(self, addr_info: aiohttp.AddrInfoType) -> socket.socket:
        """aiohttp ``socket_factory``: the last gate, right before ``connect()``.

        The resolver never sees URLs with a literal address (aiohttp skips it for those,
        including on redirects), so the address is checked again here. Names arrive only
        after the resolver approved every address, so a refusal here is about one literal
        address and aiohttp raises it unchanged.
        """
        family, kind, proto, _canonname, sockaddr = addr_info
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        self._refuse_address(address, str(address))
        wanted = resolved_addresses.get()
        if wanted is not None and str(address) not in wanted:
            wanted.append(str(address))
        return socket.socket(family=family, type=kind, proto=proto)


class GuardedResolver(AbstractResolver):
    """aiohttp resolver that resolves through a ``NetworkGuard`` at connection time."""

    def __init__(self, guard: NetworkGuard) -> None:
        self._guard = guard

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results: list[ResolveResult] = []
        addresses = await self._guard.resolve(host, port)
        wanted = resolved_addresses.get()
        if wanted is not None:
            wanted.extend(a for a in addresses if a not in wanted)
        for address in addresses:
            found = socket.AF_INET6 if ":" in address else socket.AF_INET
            if family not in (socket.AF_UNSPEC, found):
                continue
            results.append(
                ResolveResult(
                    hostname=host,
                    host=address,
                    port=port,
                    family=found,
                    proto=0,
                    flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
                )
            )
        if not results:
            raise ResolutionFailed(f"{host} has no address of the connector's family")
        return results

    async def close(self) -> None:
        """Nothing to release: lookups run on the event loop's executor."""


class ConnectionPhases:
    """Durations of the connection phases of one request, in milliseconds.

    Pass an instance as ``trace_request_ctx`` to a request on a ``guarded_session``; the
    session's trace config fills it. Phases add up over redirects. ``connect_ms`` includes
    the TLS handshake: aiohttp exposes no event between TCP connect and TLS completion.
    ``dns_ms`` stays None when the address came from the connector's DNS cache, and both
    stay None when a kept-alive connection was reused.
    """

    def __init__(self) -> None:
        self.dns_ms: float | None = None
        self.connect_ms: float | None = None
        self.reused_connection = False
        self._dns_started: float | None = None
        self._connect_started: float | None = None
        self._dns_ms_before_connect = 0.0

    def dns_started(self) -> None:
        self._dns_started = time.perf_counter()

    def dns_ended(self) -> None:
        if self._dns_started is not None:
            elapsed = (time.perf_counter() - self._dns_started) * 1000
            self.dns_ms = (self.dns_ms or 0.0) + elapsed
            self._dns_started = None

    def connect_started(self) -> None:
        self._connect_started = time.perf_counter()
        self._dns_ms_before_connect = self.dns_ms or 0.0

    def connect_ended(self) -> None:
        if self._connect_started is not None:
            elapsed = (time.perf_counter() - self._connect_started) * 1000
            # Connection creation includes the lookup; count that under dns_ms only.
            dns_inside = (self.dns_ms or 0.0) - self._dns_ms_before_connect
            self.connect_ms = (self.connect_ms or 0.0) + max(0.0, elapsed - dns_inside)
            self._connect_started = None

    def connection_reused(self) -> None:
        self.reused_connection = True


def _told(
    step: Callable[[ConnectionPhases], None],
) -> Callable[[object, SimpleNamespace, object], Awaitable[None]]:
    """An aiohttp trace hook that tells the request's ``ConnectionPhases`` (when it was given
    one as ``trace_request_ctx``) that ``step`` happened."""

    async def hook(_session: object, context: SimpleNamespace, _params: object) -> None:
        recorder = context.trace_request_ctx
        if isinstance(recorder, ConnectionPhases):
            step(recorder)

    return hook


def _phase_trace_config() -> aiohttp.TraceConfig:
    config = aiohttp.TraceConfig()
    config.on_dns_resolvehost_start.append(_told(ConnectionPhases.dns_started))
    config.on_dns_resolvehost_end.append(_told(ConnectionPhases.dns_ended))
    config.on_connection_create_start.append(_told(ConnectionPhases.connect_started))
    config.on_connection_create_end.append(_told(ConnectionPhases.connect_ended))
    config.on_connection_reuseconn.append(_told(ConnectionPhases.connection_reused))
    config.freeze()
    return config


class PeerResponse(aiohttp.ClientResponse):
    """A response that keeps the address and certificate of the connection it came over.

    aiohttp hands a connection back to its pool (or closes it) as soon as a response's body
    is in, often before the caller sees the headers; ``start`` runs while it is still held.
    A reused keep-alive connection passes no resolver or socket factory, so this is the only
    place its address is seen.
    """

    peercert: dict[str, object] | None = None
    peer_address: str | None = None

    async def start(self, connection: aiohttp.connector.Connection) -> aiohttp.ClientResponse:
        transport = connection.transport
        if transport is not None:
            # Empty for an unverified TLS connection, None for plain TCP.
            self.peercert = transport.get_extra_info("peercert") or None
            peer = transport.get_extra_info("peername")
            if isinstance(peer, tuple) and peer:
                self.peer_address = str(peer[0])
        return await super().start(connection)


def guarded_session(
    guard: NetworkGuard, *, limit: int = 1000, user_agent: str = USER_AGENT
) -> aiohttp.ClientSession:
    """A keep-alive client session whose every connection passes ``guard``.

    Create it inside the running loop (an app lifespan) and close it there. Names resolve
    through ``GuardedResolver``; literal addresses, which aiohttp never hands to a resolver,
    are checked by ``guard.open_socket`` just before connecting. Cookies are never stored,
    since one session serves the targets of every user. Environment proxies are ignored,
    since a proxy would hide the real target from the guard.
    """
    connector = aiohttp.TCPConnector(
        limit=limit,
        resolver=GuardedResolver(guard),
        socket_factory=guard.open_socket,
    )
    return aiohttp.ClientSession(
        connector=connector,
        cookie_jar=aiohttp.DummyCookieJar(),
        trace_configs=[_phase_trace_config()],
        response_class=PeerResponse,
        headers={"User-Agent": user_agent},
        trust_env=False,
    )


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """The wait a ``Retry-After`` header asks for (RFC 9110 §10.2.3): delay seconds or an
    HTTP-date, read against ``now``; ``None`` when absent or not understood. A date already
    past asks for no wait."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(int(value))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # RFC 9110 dates are GMT; "-0000" reads as naive
    return max(0.0, (when - now).total_seconds())
