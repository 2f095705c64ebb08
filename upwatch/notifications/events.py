"""What an alert says: the facts of one event, stored with the alert and rendered per channel.

The facts are captured when the alert is written (in the transaction of the state change), so
a retry hours later still tells what happened then, not what the monitor looks like now. They
carry the language of the one who reads them (a project's providers: the project's
``alertLanguage``; a member's personal channel: the member's ``language``), and every text made
from them speaks it (docs/languages.md). Times stay ISO 8601 in UTC: one unambiguous time for
people on call in different zones.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import datetime
from enum import StrEnum
from typing import Any

from upwatch.kit import languages
from upwatch.kit.languages import N_


class EventKind(StrEnum):
    OPENED = "incident.opened"
    RESOLVED = "incident.resolved"
    # The incident is still open and no one acknowledged it (a provider's repeatEveryMinutes).
    REMINDER = "incident.reminder"
    TEST = "test"


# How each probe failure reads to the person on call.
FAILURE_WORDS = {
    "dns": N_("DNS lookup failed"),
    "connect": N_("connection failed"),
    "tls": N_("TLS handshake failed"),
    "timeout": N_("timed out"),
    "status_code": N_("unexpected HTTP status"),
    "keyword": N_("keyword missing from the response"),
    "assertion": N_("a response assertion failed"),
    "certificate_expiry": N_("certificate expires soon"),
    "response_too_large": N_("response too large"),
    "too_many_redirects": N_("too many redirects"),
    "refused_target": N_("target refused by policy"),
    "dns_mismatch": N_("DNS answer differs from the expected value"),
    "missed_heartbeat": N_("heartbeat missed"),
    "degraded": N_("slower than expected"),
    "unexpected_reply": N_("unexpected reply"),
    "unhealthy": N_("the service reports itself unhealthy"),
    "login": N_("the server refused the login"),
    "packet_loss": N_("packets lost"),
    "icmp_unavailable": N_("ICMP is not permitted on this host"),
    "port_unreachable": N_("port unreachable"),
    "domain_expiry": N_("domain registration expires soon"),
    "domain_not_found": N_("the registry does not know the domain"),
    "domain_lookup": N_("the registry did not answer"),
    "auth": N_("login refused"),
    "database": N_("the database server answered with an error"),
    "protocol": N_("the server did not answer as expected"),
}


@dataclass(frozen=True, slots=True)
class Failure:
    """What the confirming check found."""

    kind: str | None  # an ErrorKind value (dns, connect, tls, timeout, status_code, ...)
    message: str | None
    status_code: int | None
    # What the check saw, bounded and redacted by the probe (docs/failure-evidence.md).
    evidence: dict[str, Any] | None = None

    def describe(self, language: str = languages.SOURCE) -> str:
        _ = languages.gettext_in(language)
        known = FAILURE_WORDS.get(self.kind or "")
        words = _(known) if known else (self.kind or _("check failed"))
        parts = [words]
        if self.status_code is not None:
            parts.append(f"HTTP {self.status_code}")
        if self.message:
            parts.append(self.message)
        return ": ".join([parts[0], ", ".join(parts[1:])]) if len(parts) > 1 else parts[0]

    def evidence_line(self, language: str = languages.SOURCE) -> str | None:
        """One line of the evidence for text alerts: where it failed, what answered."""
        seen = self.evidence
        if not seen:
            return None
        _ = languages.gettext_in(language)
        phase = seen.get("phase") or _("an unknown phase")
        parts = [_("failed at %(phase)s") % {"phase": phase}]
        if seen.get("statusLine"):
            parts.append(str(seen["statusLine"]))
        addresses = seen.get("addresses")
        if isinstance(addresses, list) and addresses:
            listed = ", ".join(str(a) for a in addresses[:3])
            parts.append(_("from %(addresses)s") % {"addresses": listed})
        if seen.get("errorClass"):
            parts.append(f"({seen['errorClass']})")
        return " ".join(parts)


def format_duration(seconds: float, language: str = languages.SOURCE) -> str:
    """``3h 4m 5s`` style (in ``language``, its own short units); seconds are dropped once the
    outage is longer than a day."""
    total = max(0, round(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [("days", days)] if days else []
    if hours:
        parts.append(("hours", hours))
    if minutes:
        parts.append(("minutes", minutes))
    if (secs or not parts) and not days:
        parts.append(("seconds", secs))
    return languages.duration(parts, language)


TEST_NOTICE = N_("This is a test message: the notification channel works.")


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
    # Whom it is written for: the texts made from it speak this language.
    language: str = languages.SOURCE

    def _(self, text: str) -> str:
        return languages.gettext_in(self.language)(text)

    def _length(self, seconds: float) -> str:
        return format_duration(seconds, self.language)

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
        _ = self._
        name = self.monitor_name or self.incident_title or "Upwatch"
        if self.kind is EventKind.OPENED:
            return (_("DEGRADED: %(name)s") if self._degraded else _("DOWN: %(name)s")) % {
                "name": name
            }
        if self.kind is EventKind.REMINDER:
            down = self.down_seconds
            if down is None:
                still = (
                    _("STILL DEGRADED: %(name)s, not acknowledged")
                    if self._degraded
                    else _("STILL DOWN: %(name)s, not acknowledged")
                )
                return still % {"name": name}
            still = (
                _("STILL DEGRADED: %(name)s for %(length)s, not acknowledged")
                if self._degraded
                else _("STILL DOWN: %(name)s for %(length)s, not acknowledged")
            )
            return still % {"name": name, "length": self._length(down)}
        if self.kind is EventKind.RESOLVED:
            duration = self.duration_seconds
            if duration is None:
                return _("UP: %(name)s is back") % {"name": name}
            back = _("UP: %(name)s is back after %(length)s")
            return back % {"name": name, "length": self._length(duration)}
        return _("Test alert from Upwatch (%(project)s)") % {"project": self.project_name}

    @property
    def _degraded(self) -> bool:
        """A slow monitor is degraded, not down: its alerts must not say otherwise."""
        return self.failure is not None and self.failure.kind == "degraded"

    @property
    def _since_label(self) -> str:
        return self._("Degraded since") if self._degraded else self._("Down since")

    def lines(self) -> list[str]:
        """The body as plain-text lines: what failed, since when, how long, where to look."""
        _ = self._
        out: list[str] = []
        if self.kind is EventKind.TEST:
            out.append(_(TEST_NOTICE))
        if self.monitor_name:
            target = f" ({self.monitor_target})" if self.monitor_target else ""
            out.append(_("Monitor: %(monitor)s") % {"monitor": f"{self.monitor_name}{target}"})
        out.append(_("Project: %(project)s") % {"project": self.project_name})
        if self.failure is not None and self.kind in (EventKind.OPENED, EventKind.REMINDER):
            out.append(_("What failed: %(what)s") % {"what": self.failure.describe(self.language)})
            seen = self.failure.evidence_line(self.language)
            if seen is not None:
                out.append(_("Evidence: %(evidence)s") % {"evidence": seen})
        if self.since is not None:
            since = (
                self._("Degraded since: %(moment)s")
                if self._degraded
                else self._("Down since: %(moment)s")
            )
            out.append(since % {"moment": _iso(self.since)})
        if self.resolved_at is not None:
            out.append(_("Recovered at: %(moment)s") % {"moment": _iso(self.resolved_at)})
        duration = self.duration_seconds
        if duration is not None:
            out.append(_("Outage length: %(length)s") % {"length": self._length(duration)})
        if self.incident_line is not None:
            out.append(self.incident_line)
        return out

    @property
    def incident_line(self) -> str | None:
        """The line that links the incident (a rich channel draws it as a link instead)."""
        if not self.incident_url:
            return None
        return self._("Incident: %(url)s") % {"url": self.incident_url}

    @property
    def text(self) -> str:
        return "\n".join([self.headline, "", *self.lines()])

    def summary(self) -> str:
        """One sentence under the headline, for the rich formats: what happened."""
        _ = self._
        if self.kind is EventKind.TEST:
            return _(TEST_NOTICE)
        if self.kind is EventKind.RESOLVED:
            return _("The monitor is passing its checks again.")
        if self.kind is EventKind.REMINDER:
            return _("The incident is still open and no one has acknowledged it.")
        if self.failure is not None:
            return self.failure.describe(self.language)
        return _("The monitor is failing its checks.")

    def facts(self) -> list[tuple[str, str]]:
        """Name/value pairs for cards and fields; empty values are left out."""
        _ = self._
        pairs: list[tuple[str, str | None]] = [
            (_("Monitor"), self.monitor_name),
            (_("Target"), self.monitor_target),
            (_("Project"), self.project_name),
        ]
        if self.kind in (EventKind.OPENED, EventKind.REMINDER) and self.incident_id is not None:
            # The severity's word (marked with the incident words, statuspages/render.py).
            pairs.append((_("Severity"), _(self.severity)))
        pairs.append((self._since_label, _iso(self.since)))
        pairs.append((_("Recovered at"), _iso(self.resolved_at)))
        duration = self.duration_seconds
        pairs.append((_("Outage length"), None if duration is None else self._length(duration)))
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
            "language": self.language,
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
                "description": failure.describe(self.language),
                "evidence": failure.evidence,
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AlertEvent:
        # Facts a later version wrote may hold fields this one does not know: left out.
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        values["kind"] = EventKind(values["kind"])
        for key in ("occurred_at", "since", "resolved_at"):
            if values.get(key) is not None:
                values[key] = datetime.fromisoformat(values[key])
        if values.get("failure") is not None:
            values["failure"] = Failure(**values["failure"])
        return cls(**values)
