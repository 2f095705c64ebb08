"""Domain probe: how many days the domain's registration has left, asked of its registry by
RDAP (WHOIS where the TLD has no RDAP server).

A registry that does not answer (an error, a timeout, an answer without an expiry date) says
nothing about the domain: such a result is ``inconclusive`` and never makes a monitor down.

Settings read from the environment at each check (``upwatch.config.Settings`` documents them):
``UPWATCH_RDAP_BASE_URL`` sends every RDAP lookup to one server instead of the bootstrap's,
``UPWATCH_WHOIS_SERVER`` (``host`` or ``host:port``) every WHOIS query to one server, and
``UPWATCH_DATA_DIR`` is where ``upwatch rdap-refresh`` keeps a newer bootstrap file.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator

from upwatch.kit.inputs import Input
from upwatch.kit.languages import N_
from upwatch.probes.connect import CONNECT_ERRORS, CheckClock, classify
from upwatch.probes.fields import Host
from upwatch.probes.kind import FormField, MonitorKind
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.probe import ProbeKit
from upwatch.probes.rdap import (
    RDAP_ERRORS,
    LookupFailed,
    NotRegistered,
    Registration,
    load_bootstrap,
    rdap_lookup,
)
from upwatch.probes.spec import CheckSpec
from upwatch.probes.whois import WHOIS_PORT, parse_whois, whois_query, whois_server

DEFAULT_WARNING_DAYS = (30, 14, 7)
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


@dataclass(frozen=True)
class LookupSettings:
    rdap_base_url: str | None
    whois_server: str | None
    whois_port: int
    data_dir: Path


def lookup_settings() -> LookupSettings:
    """Where lookups go, from the environment: cheap enough to read at every check, and
    workers in other processes or hosts read their own."""
    whois = os.environ.get("UPWATCH_WHOIS_SERVER", "").strip()
    host, _, port = whois.rpartition(":") if ":" in whois else (whois, "", "")
    return LookupSettings(
        rdap_base_url=os.environ.get("UPWATCH_RDAP_BASE_URL", "").strip() or None,
        whois_server=host or None,
        whois_port=int(port) if port.isdigit() else WHOIS_PORT,
        data_dir=Path(os.environ.get("UPWATCH_DATA_DIR", "data")),
    )


def registrable_problem(name: str) -> str | None:
    """Why ``name`` cannot be a registered domain name, or None."""
    labels = name.lower().split(".")
    if len(labels) < 2:
        return "a domain name has at least two labels, as example.com"
    if not all(_LABEL.match(label) for label in labels):
        return "each label is 1 to 63 letters, digits or inner hyphens (no empty label)"
    if labels[-1].isdigit():
        return "a domain name, not an IP address"
    return None


def _inconclusive(message: str, clock: CheckClock, source: str) -> Outcome:
    return Outcome(
        ok=False,
        response_time_ms=None,
        error_kind=ErrorKind.DOMAIN_LOOKUP,
        error=message,
        timings=clock.timings(),
        details={"source": source},
        inconclusive=True,
    )


def judge(
    registration: Registration, domain: str, warning_days: tuple[int, ...], now: datetime
) -> tuple[bool, str | None, dict[str, object]]:
    """Whether the registration is fine, why not, and the details to show."""
    days = registration.days_left(now)
    assert registration.expires_at is not None
    assert days is not None
    expires = registration.expires_at.isoformat().replace("+00:00", "Z")
    details: dict[str, object] = {
        "expiresAt": expires,
        "daysToExpiry": days,
        "registrar": registration.registrar,
        "source": registration.source,
    }
    if days < 0:
        return False, f"the registration of {domain} expired {-days} days ago ({expires})", details
    crossed = [limit for limit in warning_days if days < limit]
    if crossed:
        details["threshold"] = min(crossed)
        return (
            False,
            f"the registration of {domain} expires in {days} days ({expires}), "
            f"under {max(crossed)}",
            details,
        )
    return True, None, details


async def probe_domain(
    domain: str,
    warning_days: tuple[int, ...],
    timeout_seconds: float,
    kit: ProbeKit,
    now: datetime,
    settings: LookupSettings,
) -> Outcome:
    """Look ``domain`` up by RDAP (or WHOIS, for a TLD the bootstrap does not list) and judge
    its expiry against ``warning_days``: fewer days left than the largest fails the check."""
    domain = domain.lower().rstrip(".")
    clock = CheckClock()
    source = "rdap"
    base_url = settings.rdap_base_url or load_bootstrap(settings.data_dir).base_url(domain)
    try:
        if base_url is not None:
            registration = await rdap_lookup(kit.http, base_url, domain, timeout_seconds)
        else:
            source = "whois"
            server = settings.whois_server or whois_server(domain.rsplit(".", 1)[-1])
            async with asyncio.timeout(timeout_seconds):
                answer = await whois_query(domain, server, settings.whois_port, kit.guard, clock)
            registration = parse_whois(answer, domain)
    except NotRegistered as exc:
        return Outcome(
            ok=False,
            response_time_ms=clock.elapsed_ms(),
            error_kind=ErrorKind.DOMAIN_NOT_FOUND,
            error=str(exc),
            timings=clock.timings(),
            details={"source": source},
        )
    except LookupFailed as exc:
        return _inconclusive(f"no answer about {domain}: {exc}", clock, source)
    except CONNECT_ERRORS + RDAP_ERRORS as exc:
        if isinstance(exc, OSError) and source == "whois":
            _kind, reason = classify(exc, clock.phase, "WHOIS answer", timeout_seconds)
        elif isinstance(exc, TimeoutError):
            reason = f"no answer within {timeout_seconds:g}s"
        else:
            reason = str(exc) or type(exc).__name__
        return _inconclusive(
            f"the {source.upper()} server did not answer about {domain}: {reason}", clock, source
        )
    timings = clock.timings()
    if registration.expires_at is None:
        return _inconclusive(
            f"the registry's answer gives no expiry date for {domain}", clock, source
        )
    ok, error, details = judge(registration, domain, warning_days, now)
    return Outcome(
        ok=ok,
        response_time_ms=timings.total_ms,
        error_kind=None if ok else ErrorKind.DOMAIN_EXPIRY,
        error=error,
        timings=timings,
        details=details,
    )


class DomainProbe:
    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        assert spec.host is not None
        given = spec.settings.get("warningDays")
        warning_days = (
            tuple(int(d) for d in given) if isinstance(given, list) else DEFAULT_WARNING_DAYS
        )
        return await probe_domain(
            spec.host, warning_days, spec.timeout_seconds, kit, now, lookup_settings()
        )


WarningDay = Annotated[int, Field(ge=1, le=3650)]


class DomainConfig(Input):
    host: Annotated[Host, Field(description="The registered domain name, as example.com.")]
    warningDays: Annotated[
        list[WarningDay],
        Field(
            default_factory=lambda: list(DEFAULT_WARNING_DAYS),
            max_length=10,
            description="Days before the registration expires when the check starts failing: "
            "it fails with fewer days left than the largest.",
        ),
    ]

    @field_validator("host")
    @classmethod
    def _registrable(cls, host: str) -> str:
        problem = registrable_problem(host.rstrip("."))
        if problem is not None:
            raise ValueError(problem)
        return host


KIND = MonitorKind(
    name="domain",
    label=N_("Domain expiry"),
    rank=16,
    config=DomainConfig,
    probe=DomainProbe(),
    form=(
        FormField("host", N_("Domain"), hint="The registered name, as example.com"),
        FormField("warningDays", N_("Warning days")),
    ),
)
