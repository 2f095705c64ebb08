"""Prometheus metrics, one registry per app so several apps can live in one process."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "upwatch_http_requests",
            "HTTP requests answered",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "upwatch_http_request_duration_seconds",
            "Time to answer an HTTP request",
            ["method", "route"],
            registry=self.registry,
        )
        self.checks = Counter(
            "upwatch_checks",
            "Checks run, by monitor type and outcome (up, or the error kind)",
            ["type", "outcome"],
            registry=self.registry,
        )
        self.lateness = Histogram(
            "upwatch_check_lateness_seconds",
            "How long after its due time a check started",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
            registry=self.registry,
        )
        self.probe_duration = Histogram(
            "upwatch_probe_duration_seconds",
            "Time one probe took",
            ["type"],
            registry=self.registry,
        )
        self.results_written = Counter(
            "upwatch_results_written", "Check results stored", registry=self.registry
        )
        self.results_pending = Gauge(
            "upwatch_results_pending",
            "Results the ingester holds and has not stored yet (its batch, kept across retries)",
            registry=self.registry,
        )
        self.ingest_failures = Counter(
            "upwatch_ingest_failures",
            "Failed attempts to store a batch of results (each is retried, never dropped)",
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "upwatch_queue_depth", "Jobs and results waiting", ["queue"], registry=self.registry
        )
        self.mail_deliveries = Counter(
            "upwatch_mail_deliveries",
            "E-mail delivery attempts by outcome",
            ["outcome"],
            registry=self.registry,
        )
        self.alert_deliveries = Counter(
            "upwatch_alert_deliveries",
            "Alert delivery attempts by channel and outcome (sent, retry, failed, suppressed)",
            ["channel", "outcome"],
            registry=self.registry,
        )
        self.retention_purged = Counter(
            "upwatch_retention_rows_purged",
            "Rows deleted by data retention, by data type",
            ["data_type"],
            registry=self.registry,
        )
        self.retention_notices = Counter(
            "upwatch_retention_notices",
            "Data-retention notices made (each announces one batch of one data type)",
            registry=self.registry,
        )
        self.retention_last_success = Gauge(
            "upwatch_retention_last_success_timestamp_seconds",
            "When the retention job last finished a pass over the due owners (Unix time)",
            registry=self.registry,
        )
        # prometheus_client adds the _total suffix: upwatch_role_restarts_total{role}.
        self.role_restarts = Counter(
            "upwatch_role_restarts",
            "Background roles restarted by the supervisor after a failure",
            ["role"],
            registry=self.registry,
        )

        # Per monitor, labelled by ids only (names are free text and change): one series per
        # monitor and metric, set by the ingester when it stores results and removed when the
        # monitor is deleted or paused. Kept as plain values and written by ``render`` itself:
        # prometheus_client's writer took a quarter of a second for 10,000 monitors, on the
        # event loop at every scrape, which delayed every check due meanwhile (p99 lateness
        # 0.2 s in bench/checks.py); in a thread, its contention for the interpreter cost
        # more than that at 1,000 checks a second.
        self._monitor_projects: dict[str, str] = {}
        self._monitor_up: dict[str, int] = {}
        self._monitor_response: dict[str, float] = {}

    def monitor_checked(
        self, monitor_id: str, project_id: str, status: str, response_ms: float | None
    ) -> None:
        """A monitor's status and response time after its latest stored check."""
        self._monitor_projects[monitor_id] = project_id  # moved to another project: one series
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

    def monitor_gone(self, monitor_id: str) -> None:
        """The monitor was deleted or paused: its series go."""
        for values in (self._monitor_projects, self._monitor_up, self._monitor_response):
            values.pop(monitor_id, None)

    def render(self) -> bytes:
        return generate_latest(self.registry) + self._monitor_series().encode()

    def _monitor_series(self) -> str:
        """The per-monitor gauges in the text format (ids need no escaping: they are UUIDs)."""
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
        return "".join(lines)


MONITOR_UP_HEADER = (
    "# HELP upwatch_monitor_up 1 when the monitor is up or degraded, 0 when down, as of its "
    "last stored check\n# TYPE upwatch_monitor_up gauge\n"
)
MONITOR_RESPONSE_HEADER = (
    "# HELP upwatch_monitor_response_seconds Response time of the monitor's last stored check "
    "(absent when it measured none)\n# TYPE upwatch_monitor_response_seconds gauge\n"
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
