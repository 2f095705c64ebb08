"""What an alert says: the facts of one event, stored with the alert and rendered per channel.

The facts are captured when the alert is written (in the transaction of the state change), so
a retry hours later still tells what happened then, not what the monitor looks like now.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class EventKind(StrEnum):
    OPENED = "incident.opened"
    RESOLVED = "incident.resolved"
    # The incident is still open and no one acknowledged it (a provider's repeatEveryMinutes).
    REMINDER = "incident.reminder"
    TEST = "test"


# How each probe failure reads to the person on call.
FAILURE_WORDS = {
    "dns": "DNS lookup failed",
    "connect": "connection failed",
    "tls": "TLS handshake failed",
    "timeout": "timed out",
    "status_code": "unexpected HTTP status",
    "keyword": "keyword missing from the response",
    "assertion": "a response assertion failed",
    "certificate_expiry": "certificate expires soon",
    "response_too_large": "response too large",
    "too_many_redirects": "too many redirects",
    "refused_target": "target refused by policy",
    "dns_mismatch": "DNS answer differs from the expected value",
    "missed_heartbeat": "heartbeat missed",
    "degraded": "slower than expected",
    "unexpected_reply": "unexpected reply",
    "unhealthy": "the service reports itself unhealthy",
    "login": "the server refused the login",
    "packet_loss": "packets lost",
    "icmp_unavailable": "ICMP is not permitted on this host",
    "port_unreachable": "port unreachable",
    "domain_expiry": "domain registration expires soon",
    "domain_not_found": "the registry does not know the domain",
    "domain_lookup": "the registry did not answer",
    "auth": "login refused",
    "database": "the database server answered with an error",
    "protocol": "the server did not answer as expected",
}


@dataclass(frozen=True, slots=True)
class Failure:
    """What the confirming check found."""

    kind: str | None  # an ErrorKind value (dns, connect, tls, timeout, status_code, ...)
    message: str | None
    status_code: int | None
    # What the check saw, bounded and redacted by the probe (docs/failure-evidence.md).
    evidence: dict[str, Any] | None = None

    def describe(self) -> str:
        words = FAILURE_WORDS.get(self.kind or "", self.kind or "check failed")
        parts = [words]
        if self.status_code is not None:
            parts.append(f"HTTP {self.status_code}")
        if self.message:
            parts.append(self.message)
        return ": ".join([parts[0], ", ".join(parts[1:])]) if len(parts) > 1 else parts[0]

    def evidence_line(self) -> str | None:
        """One line of the evidence for text alerts: where it failed, what answered."""
        seen = self.evidence
        if not seen:
            return None
        parts = [f"failed at {seen.get('phase') or 'an unknown phase'}"]
        if seen.get("statusLine"):
            parts.append(str(seen["statusLine"]))
        addresses = seen.get("addresses")
        if isinstance(addresses, list) and addresses:
            parts.append(f"from {', '.join(str(a) for a in addresses[:3])}")
        if seen.get("errorClass"):
            parts.append(f"({seen['errorClass']})")
        return " ".join(parts)


def format_duration(seconds: float) -> str:
    """``3h 4m 5s`` style; seconds are dropped once the outage is longer than a day."""
    total = max(0, round(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days}d"] if days else []
    if hours:
        parts.append(f"{hours}h")
    if minutes:
        parts.append(f"{minutes}m")
    if (secs or not parts) and not days:
        parts.append(f"{secs}s")
    return " ".join(parts)


TEST_NOTICE = "This is a test message: the notification channel works."


def iso(value: datetime) -> str:
    """ISO 8601 with ``Z`` for UTC, as the API writes times."""
    return value.isoformat().replace("+00:00", "Z")


def _iso(value: datetime | None) -> str | None:
    return None if value is None else iso(value)


@dataclass(frozen=True, slots=True)
class AlertEvent:
    kind: EventKind
    delivery_id: str  # the alert's id: an idempotency key for receivers
    occurred_at: datetime
    project_id: str
    project_name: str
    monitor_id: str | None = None
    monitor_name: str | None = None
    monitor_type: str | None = None
    monitor_target: str | None = None  # URL or host[:port]
    incident_id: str | None = None
    incident_title: str | None = None
    incident_url: str | None = None  # link to the incident for the person on call
    severity: str = "high"
    failure: Failure | None = None
    since: datetime | None = None  # when the outage began (first failing check)
    resolved_at: datetime | None = None

    @property
    def duration_seconds(self) -> float | None:
        """Length of the outage, known once it is resolved."""
        if self.since is None or self.resolved_at is None:
            return None
        return max(0.0, (self.resolved_at - self.since).total_seconds())

    @property
    def down_seconds(self) -> float | None:
        """How long the outage had lasted when this was written."""
        if self.since is None:
            return None
        return max(0.0, (self.occurred_at - self.since).total_seconds())

    @property
    def headline(self) -> str:
        """One line, for subjects, notification previews and SMS."""
        name = self.monitor_name or self.incident_title or "Upwatch"
        if self.kind is EventKind.OPENED:
            return f"{self._state_word}: {name}"
        if self.kind is EventKind.REMINDER:
            down = self.down_seconds
            length = f" for {format_duration(down)}" if down is not None else ""
            return f"STILL {self._state_word}: {name}{length}, not acknowledged"
        if self.kind is EventKind.RESOLVED:
            duration = self.duration_seconds
            after = f" after {format_duration(duration)}" if duration is not None else ""
            return f"UP: {name} is back{after}"
        return f"Test alert from Upwatch ({self.project_name})"

    @property
    def _state_word(self) -> str:
        """A slow monitor is degraded, not down: its alerts must not say otherwise."""
        degraded = self.failure is not None and self.failure.kind == "degraded"
        return "DEGRADED" if degraded else "DOWN"

    def lines(self) -> list[str]:
        """The body as plain-text lines: what failed, since when, how long, where to look."""
        out: list[str] = []
        if self.kind is EventKind.TEST:
            out.append(TEST_NOTICE)
        if self.monitor_name:
            target = f" ({self.monitor_target})" if self.monitor_target else ""
            out.append(f"Monitor: {self.monitor_name}{target}")
        out.append(f"Project: {self.project_name}")
        if self.failure is not None and self.kind in (EventKind.OPENED, EventKind.REMINDER):
            out.append(f"What failed: {self.failure.describe()}")
            seen = self.failure.evidence_line()
            if seen is not None:
                out.append(f"Evidence: {seen}")
        if self.since is not None:
            out.append(f"{self._state_word.capitalize()} since: {_iso(self.since)}")
        if self.resolved_at is not None:
            out.append(f"Recovered at: {_iso(self.resolved_at)}")
        duration = self.duration_seconds
        if duration is not None:
            out.append(f"Outage length: {format_duration(duration)}")
        if self.incident_url:
            out.append(f"Incident: {self.incident_url}")
        return out

    @property
    def text(self) -> str:
        return "\n".join([self.headline, "", *self.lines()])

    def summary(self) -> str:
        """One sentence under the headline, for the rich formats: what happened."""
        if self.kind is EventKind.TEST:
            return TEST_NOTICE
        if self.kind is EventKind.RESOLVED:
            return "The monitor is passing its checks again."
        if self.kind is EventKind.REMINDER:
            return "The incident is still open and no one has acknowledged it."
        if self.failure is not None:
            return self.failure.describe()
        return "The monitor is failing its checks."

    def facts(self) -> list[tuple[str, str]]:
        """Name/value pairs for cards and fields; empty values are left out."""
        pairs: list[tuple[str, str | None]] = [
            ("Monitor", self.monitor_name),
            ("Target", self.monitor_target),
            ("Project", self.project_name),
        ]
        if self.kind in (EventKind.OPENED, EventKind.REMINDER) and self.incident_id is not None:
            pairs.append(("Severity", self.severity))
        pairs.append((f"{self._state_word.capitalize()} since", _iso(self.since)))
        pairs.append(("Recovered at", _iso(self.resolved_at)))
        duration = self.duration_seconds
        pairs.append(("Outage length", None if duration is None else format_duration(duration)))
        return [(name, value) for name, value in pairs if value]

    def to_json(self) -> dict[str, Any]:
        """The JSON body webhooks receive and the alert row stores."""
        data = asdict(self)
        data["kind"] = self.kind.value
        for key in ("occurred_at", "since", "resolved_at"):
            data[key] = _iso(data[key])
        return data

    def payload(self) -> dict[str, Any]:
        """The public webhook body (documented in docs/api.md), camelCase like the API."""
        failure = self.failure
        return {
            "event": self.kind.value,
            "deliveryId": self.delivery_id,
            "occurredAt": _iso(self.occurred_at),
            "summary": self.headline,
            "project": {"id": self.project_id, "name": self.project_name},
            "monitor": None
            if self.monitor_id is None
            else {
                "id": self.monitor_id,
                "name": self.monitor_name,
                "type": self.monitor_type,
                "target": self.monitor_target,
            },
            "incident": None
            if self.incident_id is None
            else {
                "id": self.incident_id,
                "title": self.incident_title,
                "severity": self.severity,
                "url": self.incident_url,
                "startedAt": _iso(self.since),
                "resolvedAt": _iso(self.resolved_at),
                "durationSeconds": self.duration_seconds,
            },
            "failure": None
            if failure is None
            else {
                "kind": failure.kind,
                "message": failure.message,
                "statusCode": failure.status_code,
                "description": failure.describe(),
                "evidence": failure.evidence,
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AlertEvent:
        values = dict(data)
        values["kind"] = EventKind(values["kind"])
        for key in ("occurred_at", "since", "resolved_at"):
            if values.get(key) is not None:
                values[key] = datetime.fromisoformat(values[key])
        if values.get("failure") is not None:
            values["failure"] = Failure(**values["failure"])
        return cls(**values)
