"""Prometheus metrics, one registry per app so several apps can live in one process."""

from __future__ import annotations

import hmac
import platform
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableMapping, Sequence
from datetime import datetime
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from upwatch import __version__
from upwatch.kit.targets import shown_target

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


# What each metric of the registry says it counts (its HELP line), by name.
_HELP = {
    "upwatch_build_info": "Always 1: the Upwatch version and the Python version this process runs",
    "upwatch_http_requests": "HTTP requests answered",
    "upwatch_http_request_duration_seconds": "Time to answer an HTTP request",
    "upwatch_checks": "Checks run, by monitor type and outcome (up, or the error kind)",
    "upwatch_check_lateness_seconds": "How long after its due time a check started",
    "upwatch_probe_duration_seconds": "Time one probe took",
    "upwatch_results_written": "Check results stored",
    "upwatch_results_pending": (
        "Results the ingester holds and has not stored yet (its batch, kept across retries)"
    ),
    "upwatch_ingest_failures": (
        "Failed attempts to store a batch of results (each is retried, never dropped)"
    ),
    "upwatch_queue_depth": "Jobs and results waiting",
    "upwatch_mail_deliveries": "E-mail delivery attempts by outcome",
    "upwatch_alert_deliveries": (
        "Alert delivery attempts by channel and outcome (sent, retry, failed, suppressed)"
    ),
    "upwatch_retention_rows_purged": "Rows deleted by data retention, by data type",
    "upwatch_retention_notices": (
        "Data-retention notices made (each announces one batch of one data type)"
    ),
    "upwatch_retention_last_success_timestamp_seconds": (
        "When the retention job last finished a pass over the due owners (Unix time)"
    ),
    "upwatch_role_restarts": "Background roles restarted by the supervisor after a failure",
}


class RoleStalls(Collector):
    """``upwatch_role_stalled{role}``, asked of the process's supervisor at each scrape (the
    rule of ``/readyz``), so a busy loop pays nothing for it."""

    def __init__(self) -> None:
        self.source: Callable[[], Iterable[tuple[str, bool]]] | None = None

    def describe(self) -> Iterable[Metric]:
        return ()  # registered before any supervisor exists: nothing to ask yet

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "upwatch_role_stalled",
            "1 while a background role is stalled (made no progress for several of its periods "
            "while it had work, or is not running): what /readyz reports",
            labels=["role"],
        )
        for role, stalled in self.source() if self.source is not None else ():
            family.add_metric([role], 1.0 if stalled else 0.0)
        yield family


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        # The process (CPU, memory, open files), the interpreter and its garbage collector,
        # as prometheus_client's default registry would have them: process_*, python_*.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)  # collects nothing on other interpreters
        self.build_info = self._gauge("upwatch_build_info", "version", "python")
        self.build_info.labels(__version__, platform.python_version()).set(1)
        self.role_stalls = RoleStalls()
        self.registry.register(self.role_stalls)
        self.requests = self._counter("upwatch_http_requests", "method", "route", "status")
        self.latency = self._histogram("upwatch_http_request_duration_seconds", "method", "route")
        self.checks = self._counter("upwatch_checks", "type", "outcome")
        self.lateness = self._histogram(
            "upwatch_check_lateness_seconds",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
        )
        self.probe_duration = self._histogram("upwatch_probe_duration_seconds", "type")
        self.results_written = self._counter("upwatch_results_written")
        self.results_pending = self._gauge("upwatch_results_pending")
        self.ingest_failures = self._counter("upwatch_ingest_failures")
        self.queue_depth = self._gauge("upwatch_queue_depth", "queue")
        self.mail_deliveries = self._counter("upwatch_mail_deliveries", "outcome")
        self.alert_deliveries = self._counter("upwatch_alert_deliveries", "channel", "outcome")
        self.retention_purged = self._counter("upwatch_retention_rows_purged", "data_type")
        self.retention_notices = self._counter("upwatch_retention_notices")
        self.retention_last_success = self._gauge(
            "upwatch_retention_last_success_timestamp_seconds"
        )
        # prometheus_client adds the _total suffix: upwatch_role_restarts_total{role}.
        self.role_restarts = self._counter("upwatch_role_restarts", "role")

        # Per monitor, labelled by ids (names are free text and change; they are the labels
        # of the one info series per monitor, to join on): one series per monitor and
        # metric, set by the ingester when it stores results and removed when the monitor is
        # deleted or paused. Kept as plain values and written by ``render`` itself:
        # prometheus_client's writer took a quarter of a second for 10,000 monitors, on the
        # event loop at every scrape, which delayed every check due meanwhile (p99 lateness
        # 0.2 s in bench/checks.py); in a thread, its contention for the interpreter cost
        # more than that at 1,000 checks a second.
        self._monitor_projects: dict[str, str] = {}
        self._monitor_up: dict[str, int] = {}
        self._monitor_response: dict[str, float] = {}
        # The described monitor (name, type, target as given) and its labels, escaped once.
        self._monitor_info: dict[str, tuple[tuple[str, str, str | None], str]] = {}
        self._monitor_certificate: dict[str, float] = {}
        # The last check time this process wrote for each monitor (ingester processes compare
        # it with the database's, engine/series.py).
        self._monitor_checked_at: dict[str, datetime | None] = {}

    # Each labelled by ``labels``, in this app's registry.
    def _counter(self, name: str, *labels: str) -> Counter:
        return Counter(name, _HELP[name], labels, registry=self.registry)

    def _gauge(self, name: str, *labels: str) -> Gauge:
        return Gauge(name, _HELP[name], labels, registry=self.registry)

    def _histogram(
        self, name: str, *labels: str, buckets: Sequence[float] = Histogram.DEFAULT_BUCKETS
    ) -> Histogram:
        return Histogram(name, _HELP[name], labels, buckets=buckets, registry=self.registry)

    def monitor_checked(
        self,
        monitor_id: str,
        project_id: str,
        status: str,
        response_ms: float | None,
        checked_at: datetime | None = None,
    ) -> None:
        """A monitor's status and response time after its latest stored check."""
        self._monitor_projects[monitor_id] = project_id  # moved to another project: one series
        self._monitor_checked_at[monitor_id] = checked_at
        if status in ("up", "degraded"):
            self._monitor_up[monitor_id] = 1
        elif status == "down":
            self._monitor_up[monitor_id] = 0
        else:  # pending: no verdict yet
            self._monitor_up.pop(monitor_id, None)
        if response_ms is None:
            self._monitor_response.pop(monitor_id, None)
        else:
            self._monitor_response[monitor_id] = response_ms / 1000

    def monitor_described(
        self, monitor_id: str, name: str, monitor_type: str, target: str | None
    ) -> None:
        """What ``upwatch_monitor_info`` says of a monitor: its name, type and target (shown
        without credentials, query or fragment). Called with each stored check; the labels
        are made again only when something changed."""
        given = (name, monitor_type, target)
        known = self._monitor_info.get(monitor_id)
        if known is not None and known[0] == given:
            return
        labels = (
            f',name="{_escaped(name)}",type="{_escaped(monitor_type)}"'
            f',target="{_escaped(shown_target(target))}"'
        )
        self._monitor_info[monitor_id] = (given, labels)

    def monitor_certificate(self, monitor_id: str, expires_at: float | None) -> None:
        """When the certificate its last check saw expires (Unix time); None: it has none
        (any more)."""
        if expires_at is None:
            self._monitor_certificate.pop(monitor_id, None)
        else:
            self._monitor_certificate[monitor_id] = expires_at

    def monitor_gone(self, monitor_id: str) -> None:
        """The monitor was deleted or paused: its series go."""
        for values in self._monitor_values():
            values.pop(monitor_id, None)

    def monitors_shown(self) -> dict[str, datetime | None]:
        """The monitors with series here, and the last check time this process wrote of each."""
        return dict(self._monitor_checked_at)

    def monitor_checked_at(self, monitor_id: str) -> datetime | None:
        return self._monitor_checked_at.get(monitor_id)

    def _monitor_values(self) -> tuple[dict[str, Any], ...]:
        return (
            self._monitor_projects,
            self._monitor_up,
            self._monitor_response,
            self._monitor_info,
            self._monitor_certificate,
            self._monitor_checked_at,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry) + self._monitor_series().encode()

    def _monitor_series(self) -> str:
        """The per-monitor gauges in the text format (ids need no escaping: they are UUIDs;
        the info series' free text is escaped when it is set)."""
        projects = self._monitor_projects
        lines = [MONITOR_UP_HEADER]
        lines += [
            f'upwatch_monitor_up{{monitor="{m}",project="{projects[m]}"}} {value}.0\n'
            for m, value in self._monitor_up.items()
        ]
        lines.append(MONITOR_RESPONSE_HEADER)
        lines += [
            f'upwatch_monitor_response_seconds{{monitor="{m}",project="{projects[m]}"}} {value!r}\n'
            for m, value in self._monitor_response.items()
        ]
        lines.append(MONITOR_INFO_HEADER)
        lines += [
            f'upwatch_monitor_info{{monitor="{m}",project="{projects.get(m, "")}"{labels}}} 1.0\n'
            for m, (_given, labels) in self._monitor_info.items()
        ]
        lines.append(MONITOR_CERTIFICATE_HEADER)
        lines += [
            f"upwatch_monitor_certificate_expiry_timestamp_seconds"
            f'{{monitor="{m}",project="{projects.get(m, "")}"}} {value!r}\n'
            for m, value in self._monitor_certificate.items()
        ]
        return "".join(lines)


def _escaped(value: str) -> str:
    """A label value in the text format: backslash, double quote and line feed escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def metrics_refusal(authorization: bytes, token: str, public: bool) -> str | None:
    """Why a request for the metrics with this ``Authorization`` header (its bytes as sent)
    is refused, or None when it is answered: with a token set, only ``Bearer <token>``
    (compared in constant time: how much of a guess matched must not show in the timing);
    without one, no one unless the operator opened the metrics. Every port that serves
    them applies this rule."""
    if token:
        scheme, _, given = authorization.strip().partition(b" ")
        if scheme.lower() != b"bearer":
            given = b""
        if not hmac.compare_digest(given.strip(), token.encode()):
            return "a bearer token (UPWATCH_METRICS_TOKEN) is required"
        return None
    if not public:
        # Every tenant's monitors are listed there: closed unless the operator decides.
        return (
            "the metrics are closed: set UPWATCH_METRICS_TOKEN and send it as a bearer "
            "token, or open them with UPWATCH_METRICS_PUBLIC=true"
        )
    return None


MONITOR_UP_HEADER = (
    "# HELP upwatch_monitor_up 1 when the monitor is up or degraded, 0 when down, as of its "
    "last stored check\n# TYPE upwatch_monitor_up gauge\n"
)
MONITOR_RESPONSE_HEADER = (
    "# HELP upwatch_monitor_response_seconds Response time of the monitor's last stored check "
    "(absent when it measured none)\n# TYPE upwatch_monitor_response_seconds gauge\n"
)
MONITOR_INFO_HEADER = (
    "# HELP upwatch_monitor_info Always 1: a monitor's name, type and target (a URL without "
    "credentials, query or fragment), to join on monitor\n# TYPE upwatch_monitor_info gauge\n"
)
MONITOR_CERTIFICATE_HEADER = (
    "# HELP upwatch_monitor_certificate_expiry_timestamp_seconds When the certificate the "
    "monitor's last TLS check saw expires (Unix time)\n"
    "# TYPE upwatch_monitor_certificate_expiry_timestamp_seconds gauge\n"
)


class MetricsMiddleware:
    """Counts and times requests by route template (not raw path, to bound label sets)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            method = scope.get("method", "")
            if method not in KNOWN_METHODS:
                method = "OTHER"  # any token is a valid method; keep the label set bounded
            self.metrics.requests.labels(method, template, str(status)).inc()
            self.metrics.latency.labels(method, template).observe(time.perf_counter() - started)
