"""What one probe found: up or not, how long it took, and exactly what failed.

Modelled on a shallow exception tree (httpx's): one ``ErrorKind`` per failure a user can act
on. Whether a slow success counts as degraded is decided by the status machine, not here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class ErrorKind(StrEnum):
    """What failed, exactly."""

    DNS = "dns"
    CONNECT = "connect"
    TLS = "tls"
    TIMEOUT = "timeout"
    STATUS_CODE = "status_code"
    KEYWORD = "keyword"
    ASSERTION = "assertion"
    CERTIFICATE_EXPIRY = "certificate_expiry"
    RESPONSE_TOO_LARGE = "response_too_large"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    REFUSED_TARGET = "refused_target"
    DNS_MISMATCH = "dns_mismatch"
    MISSED_HEARTBEAT = "missed_heartbeat"
    DOMAIN_EXPIRY = "domain_expiry"
    DOMAIN_NOT_FOUND = "domain_not_found"
    # The registry did not answer usably: says nothing about the domain (see ``inconclusive``).
    DOMAIN_LOOKUP = "domain_lookup"
    # A server that answers, but not as its protocol says (a mail server's greeting).
    UNEXPECTED_REPLY = "unexpected_reply"
    # The server refused the monitor's credentials.
    LOGIN = "login"
    # The service reports itself unhealthy (gRPC health: NOT_SERVING, UNKNOWN).
    UNHEALTHY = "unhealthy"
    # Ping: too many echo requests went unanswered; ICMP sockets not permitted here.
    PACKET_LOSS = "packet_loss"
    ICMP_UNAVAILABLE = "icmp_unavailable"
    # UDP: the host said no one listens on the port.
    PORT_UNREACHABLE = "port_unreachable"
    AUTH = "auth"  # the server refused the credentials
    DATABASE = "database"  # a database server answered with an error (unknown database, ...)
    PROTOCOL = "protocol"  # the server did not speak the expected protocol


@dataclass(frozen=True, slots=True)
class Timings:
    """Milliseconds per phase; None when the phase did not happen or was not measured."""

    dns_ms: float | None = None
    connect_ms: float | None = None
    tls_ms: float | None = None
    first_byte_ms: float | None = None
    total_ms: float | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    response_time_ms: float | None
    status_code: int | None = None
    error_kind: ErrorKind | None = None
    error: str | None = None
    timings: Timings | None = None
    details: Mapping[str, object] = field(default_factory=dict)
    # The check could not tell up from down (a registry that did not answer): stored with its
    # error, but the status machine keeps the monitor's status.
    inconclusive: bool = False
    # What a failing check saw (``probes/evidence.py``); None when it passed.
    evidence: Mapping[str, object] | None = None
