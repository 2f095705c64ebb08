"""DNS probe: the name has records of a type, optionally including an expected value.

Only the configured resolvers are contacted, never the target, so the network guard does
not apply; the answer itself is reported as found.
"""

from __future__ import annotations

import ipaddress
import time
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Final, Literal

import dns.exception
import dns.rdatatype
from pydantic import Field

from upwatch.kit.inputs import Input
from upwatch.kit.languages import N_
from upwatch.probes import evidence
from upwatch.probes.fields import Host
from upwatch.probes.kind import FormField, MonitorKind
from upwatch.probes.outcome import ErrorKind, Outcome, Timings
from upwatch.probes.probe import ProbeKit
from upwatch.probes.spec import CheckSpec

# The resolver and record classes (9 MB) are imported when a check runs: the probe worker
# process holds only the libraries its monitors use (docs/architecture.md).
if TYPE_CHECKING:
    import dns.asyncresolver
    import dns.rdata

DEFAULT_RECORD_TYPE: Final = "A"
_ADDRESS_TYPES = frozenset({dns.rdatatype.A, dns.rdatatype.AAAA})


def _normalize(rdtype: dns.rdatatype.RdataType, text: str) -> str:
    """One spelling per value, so ``expected`` compares equal however it was typed."""
    if rdtype in _ADDRESS_TYPES:
        try:
            return str(ipaddress.ip_address(text.strip()))
        except ValueError:
            return text.strip()
    if rdtype == dns.rdatatype.TXT:
        return text
    # Names compare case-insensitively and with or without the root dot.
    return text.strip().lower().rstrip(".")


def _record_text(rdata: dns.rdata.Rdata) -> str:
    import dns.rdtypes.txtbase

    if isinstance(rdata, dns.rdtypes.txtbase.TXTBase):
        return b"".join(rdata.strings).decode("utf-8", "replace")
    return rdata.to_text()


def _resolver(nameserver: tuple[str, int] | None) -> dns.asyncresolver.Resolver:
    import dns.asyncresolver

    if nameserver is None:
        # dnspython's shared resolver reads the system configuration once.
        return dns.asyncresolver.get_default_resolver()
    resolver = dns.asyncresolver.Resolver(configure=False)
    resolver.nameservers = [nameserver[0]]
    resolver.port = nameserver[1]
    return resolver


async def probe_dns(
    host: str,
    record_type: str = "A",
    expected: str | None = None,
    timeout_seconds: float = 5,
    nameserver: tuple[str, int] | None = None,
) -> Outcome:
    """Query ``record_type`` records of ``host``; ``details["records"]`` lists what was found.

    Raises ``ValueError`` for an unknown record type (a configuration error, not a failure of
    the target). ``host`` is absolute: resolver search domains are never appended.
    """
    import dns.resolver

    try:
        rdtype = dns.rdatatype.RdataType.make(record_type.upper())
    except dns.rdatatype.UnknownRdatatype as exc:
        raise ValueError(f"unknown DNS record type {record_type!r}") from exc
    started = time.perf_counter()

    def failed(
        kind: ErrorKind,
        message: str,
        *,
        answered: bool,
        records: list[str] | None = None,
        error: BaseException | None = None,
    ) -> Outcome:
        total_ms = (time.perf_counter() - started) * 1000
        found = records if records is not None and rdtype in _ADDRESS_TYPES else ()
        return Outcome(
            ok=False,
            # A negative answer is still an answer: its time says how the server performs.
            response_time_ms=total_ms if answered else None,
            error_kind=kind,
            error=message,
            timings=Timings(dns_ms=total_ms, total_ms=total_ms),
            details={} if records is None else {"records": records},
            evidence=evidence.build("dns", error=error, addresses=found),
        )

    try:
        answer = await _resolver(nameserver).resolve(
            host, rdtype, lifetime=timeout_seconds, search=False
        )
    except dns.resolver.NXDOMAIN as exc:
        message = f"{host} does not exist (NXDOMAIN)"
        return failed(ErrorKind.DNS, message, answered=True, error=exc)
    except dns.resolver.NoAnswer as exc:
        message = f"{host} has no {rdtype.name} records"
        return failed(ErrorKind.DNS, message, answered=True, error=exc)
    except dns.exception.Timeout as exc:
        message = f"no DNS answer within {timeout_seconds:g}s"
        return failed(ErrorKind.TIMEOUT, message, answered=False, error=exc)
    except dns.resolver.NoNameservers as exc:
        message = f"no nameserver could answer: {exc}"
        return failed(ErrorKind.DNS, message, answered=False, error=exc)
    except dns.exception.DNSException as exc:
        message = f"DNS query failed: {exc}"
        return failed(ErrorKind.DNS, message, answered=False, error=exc)

    total_ms = (time.perf_counter() - started) * 1000
    # An RRset has no order; sorting keeps messages and stored details stable.
    records = sorted(_normalize(rdtype, _record_text(rdata)) for rdata in answer)
    if expected is not None and _normalize(rdtype, expected) not in records:
        shown = ", ".join(records)
        return failed(
            ErrorKind.DNS_MISMATCH,
            f"expected {expected}, got {shown}",
            answered=True,
            records=records,
        )
    return Outcome(
        ok=True,
        response_time_ms=total_ms,
        timings=Timings(dns_ms=total_ms, total_ms=total_ms),
        details={"records": records, "ttl": answer.rrset.ttl if answer.rrset else None},
    )


class DnsProbe:
    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        assert spec.host is not None
        if kit.guard.loopback_only:
            # A DNS check queries the system resolvers, which are not on this machine.
            return Outcome(
                ok=False,
                response_time_ms=None,
                error_kind=ErrorKind.REFUSED_TARGET,
                error="DNS checks are off where only loopback targets are reached",
            )
        return await probe_dns(
            spec.host,
            spec.record_type or DEFAULT_RECORD_TYPE,
            spec.expected_value,
            spec.timeout_seconds,
        )


RecordType = Literal["A", "AAAA", "CNAME", "MX", "TXT", "NS"]


class DnsConfig(Input):
    host: Host
    recordType: RecordType | None = DEFAULT_RECORD_TYPE
    expectedValue: Annotated[str, Field(max_length=500)] | None = None


KIND = MonitorKind(
    name="dns",
    label=N_("DNS record"),
    rank=3,
    config=DnsConfig,
    probe=DnsProbe(),
    form=(FormField("host", N_("Host")),),
)
