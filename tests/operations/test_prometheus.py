"""Prometheus and Grafana: the shipped alert rules and dashboard against a running service, a
real Prometheus scraping it, and /metrics of the processes that answer no API.

Prometheus and promtool come from Debian's ``prometheus`` package; without them these tests
skip with the reason, or fail with ``UPWATCH_REQUIRE_PROMETHEUS=1`` (as in CI).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import PASSWORD, forget_redis_keys, free_port
from tests.factories import FAST_PLANS, bearer
from tests.live_server import COMMAND_SECONDS, UPWATCH, LiveServer, ThreadedTarget, clean_env
from upwatch.config import Settings
from upwatch.engine.ingester import certificate_expiry
from upwatch.engine.series import SeriesSweep
from upwatch.kit.metrics import Metrics
from upwatch.kit.metricsport import ROLE, start_metrics_port
from upwatch.kit.supervisor import Supervisor

# Long, and needs no test database: run in the shorter lane (scripts/test).
pytestmark = [pytest.mark.db_independent, pytest.mark.second_lane]

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "upwatch-dashboard.json"
# A bound, not a speed check: how long Prometheus may take to start, scrape and fire.
PROMETHEUS_SECONDS = float(os.environ.get("UPWATCH_TEST_PROMETHEUS_SECONDS", "60"))
TOKEN = "scrape-token-for-prometheus-0123456789"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
# Series Prometheus makes itself for every target, which rules may use as well.
PROMETHEUS_OWN = {"up"}


def prometheus_tool(name: str) -> str:
    """The path of Debian's ``prometheus`` or ``promtool``, else skip (or fail in CI)."""
    found = shutil.which(name) or shutil.which(name, path="/usr/bin")
    if found:
        return found
    reason = f"{name} is not installed (Debian's prometheus package: apt-get install prometheus)"
    if os.environ.get("UPWATCH_REQUIRE_PROMETHEUS") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


# --- Reading PromQL and the text format ---------------------------------------------------

_STRING = re.compile(r""""(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`""")
_LABEL_LIST = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"(?<![\w$:.])([A-Za-z_:][\w:]*)(\s*\()?")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}


def metric_names(expression: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers left once strings, label
    matchers, ranges (``[5m]``, ``[$__rate_interval]``) and label lists (``by (le)``,
    ``group_left (name)``) are out, except function calls and keywords."""
    text = _STRING.sub('""', expression)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = _LABEL_LIST.sub(" ", text)
    return {
        match[1]
        for match in _IDENTIFIER.finditer(text)
        if not match[2] and match[1] not in _KEYWORDS
    }


def served_names(page: str) -> set[str]:
    """The series names a /metrics page serves, from its samples and its declared families
    (a labelled family with no child yet has only its ``# TYPE`` line): a counter as
    ``_total``, a histogram as ``_bucket``, ``_sum`` and ``_count``, never by its bare name."""
    names: set[str] = set()
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_sum", "_count", "_created"),
        "summary": ("", "_sum", "_count", "_created"),
    }
    for line in page.splitlines():
        if line.startswith("# TYPE "):
            _hash, _type, name, kind = line.split(" ", 3)
            base = name.removesuffix("_total") if kind == "counter" else name
            names.update(base + suffix for suffix in suffixes.get(kind, ("",)))
        elif line and not line.startswith("#"):
            found = re.match(r"[A-Za-z_:][\w:]*", line)
            assert found is not None, line
            names.add(found[0])
    return names


def expressions_in(value: Any) -> Iterator[str]:
    """Every ``expr`` of a dashboard, at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "expr" and isinstance(item, str):
                yield item
            else:
                yield from expressions_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from expressions_in(item)


def shipped_expressions() -> dict[str, str]:
    """Every expression of the alert rules and of the dashboard, by where it is."""
    found = {}
    for group in yaml.safe_load(ALERTS.read_text())["groups"]:
        for rule in group["rules"]:
            found[f"alert {rule['alert']}"] = rule["expr"]
    for number, expression in enumerate(expressions_in(json.loads(DASHBOARD.read_text()))):
        found[f"dashboard expression {number + 1}"] = expression
    return found


def test_the_promql_reader_finds_metric_names_and_leaves_functions_labels_and_ranges() -> None:
    expression = (
        "histogram_quantile(0.99, sum by (le) ("
        'rate(a_bucket{x="b c", y=~"d.*"}[$__rate_interval])))'
        " > 5 and on (instance, monitor) group_left (name, type) b_info"
        ' or count(c == 0) or vector(0) unless d{job="up"} offset 5m - time() < 14 * 86400'
    )
    assert metric_names(expression) == {"a_bucket", "b_info", "c", "d"}
    served = served_names(
        '# TYPE h histogram\nh_bucket{le="1"} 0\n# TYPE k_total counter\n# TYPE g gauge\n'
    )
    assert {"h_bucket", "h_count", "k_total", "g"} <= served
    assert not {"h", "k"} & served


# --- A running service --------------------------------------------------------------------


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """`upwatch serve` with every role, monitors checked every 10 s, metrics behind TOKEN."""
    cwd = tmp_path_factory.mktemp("prometheus-service")
    plans = cwd / "plans.toml"
    plans.write_text(FAST_PLANS)
    env = clean_env(
        UPWATCH_ALLOW_PRIVATE_TARGETS="true",
        UPWATCH_PLANS_FILE=str(plans),
        UPWATCH_METRICS_TOKEN=TOKEN,
    )
    server = LiveServer(cwd, env).start()
    try:
        yield server
    finally:
        server.stop()


def test_the_shipped_alert_rules_pass_promtool() -> None:
    checked = subprocess.run(  # noqa: S603
        [prometheus_tool("promtool"), "check", "rules", str(ALERTS)],
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout


def test_every_metric_the_alert_rules_and_the_dashboard_read_is_served_by_a_running_service(
    service: LiveServer,
) -> None:
    page = httpx.get(f"{service.url}/metrics", headers=BEARER, timeout=COMMAND_SECONDS)
    assert page.status_code == 200, page.text
    served = served_names(page.text) | PROMETHEUS_OWN
    used = {where: metric_names(expression) for where, expression in shipped_expressions().items()}
    assert all(used.values()), used  # every expression reads a metric the reader found
    read = set().union(*used.values())
    assert {"upwatch_monitor_up", "upwatch_role_stalled", "upwatch_checks_total"} <= read
    missing = {where: names - served for where, names in used.items() if names - served}
    assert missing == {}


T = TypeVar("T")


async def until(check: Callable[[], Awaitable[T | None]], what: str) -> T:
    """``check``'s first answer that is not None (or False), polled within
    UPWATCH_TEST_PROMETHEUS_SECONDS."""
    deadline = asyncio.get_running_loop().time() + PROMETHEUS_SECONDS
    while True:
        found = await check()
        if found:
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(
                f"not within {PROMETHEUS_SECONDS:g} s (UPWATCH_TEST_PROMETHEUS_SECONDS): {what}"
            )
        await asyncio.sleep(0.2)


@pytest.fixture
def prometheus(service: LiveServer, tmp_path: Path) -> Iterator[str]:
    """A real Prometheus scraping ``service`` every second with the bearer token and
    evaluating the shipped rules every second; its URL. The monitor-down rule waits 1 s
    instead of its shipped minute, so its firing is seen within the test's time."""
    binary = prometheus_tool("prometheus")
    rules = yaml.safe_load(ALERTS.read_text())
    down = [r for g in rules["groups"] for r in g["rules"] if r["alert"] == "UpwatchMonitorDown"]
    assert len(down) == 1
    down[0]["for"] = "1s"
    (tmp_path / "alerts.yml").write_text(yaml.safe_dump(rules))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp_path / "alerts.yml")],
        "scrape_configs": [
            {
                "job_name": "upwatch",
                "authorization": {"credentials": TOKEN},
                "static_configs": [{"targets": [service.url.removeprefix("http://")]}],
            }
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    address = f"127.0.0.1:{free_port()}"
    log = tmp_path / "prometheus.log"
    with log.open("ab") as output:
        process = subprocess.Popen(  # noqa: S603
            [
                binary,
                f"--config.file={tmp_path / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address={address}",
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://{address}"
        _wait_ready(process, url, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_ready(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + PROMETHEUS_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"prometheus exited:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"prometheus not ready within {PROMETHEUS_SECONDS:g} s:\n{log.read_text()}")


async def test_prometheus_scraping_the_service_fires_the_monitor_down_rule_when_a_monitor_fails(
    service: LiveServer, prometheus: str
) -> None:
    with ThreadedTarget() as target:
        async with (
            httpx.AsyncClient(base_url=service.url, timeout=COMMAND_SECONDS) as api,
            httpx.AsyncClient(base_url=prometheus, timeout=COMMAND_SECONDS) as scraper,
        ):
            email = f"ops-{uuid.uuid4().hex[:8]}@example.com"
            signed = await api.post("/auth/signup", json={"email": email, "password": PASSWORD})
            headers = bearer(signed, 201)
            project = await api.post("/projects", headers=headers, json={"name": "Shop"})
            assert project.status_code == 201, project.text
            # A name with quotes, and a URL with credentials and a secret query: the labels
            # carry the one escaped and the other without its secrets.
            port = target.base.rsplit(":", 1)[1]
            made = await api.post(
                "/monitors",
                headers=headers,
                json={
                    "projectId": project.json()["id"],
                    "name": 'Shop "front"',
                    "type": "http",
                    "url": f"http://shop:s3cret@127.0.0.1:{port}/health?key=s3cret",
                    "intervalSeconds": 10,
                },
            )
            assert made.status_code == 201, made.text
            monitor_id = made.json()["id"]

            async def value(query: str) -> float | None:
                answer = await scraper.get("/api/v1/query", params={"query": query})
                result = answer.json()["data"]["result"]
                return float(result[0]["value"][1]) if result else None

            async def scraped_up() -> bool:
                return await value(f'upwatch_monitor_up{{monitor="{monitor_id}"}}') == 1

            await until(scraped_up, "Prometheus scraped the monitor up")

            target.status = 500
            checked = await api.post(f"/monitors/{monitor_id}/check", headers=headers)
            assert checked.status_code == 200, checked.text

            async def firing() -> dict[str, Any] | None:
                alerts = (await scraper.get("/api/v1/alerts")).json()["data"]["alerts"]
                return next(
                    (
                        alert
                        for alert in alerts
                        if alert["labels"].get("alertname") == "UpwatchMonitorDown"
                        and alert["labels"].get("monitor") == monitor_id
                        and alert["state"] == "firing"
                    ),
                    None,
                )

            alert = await until(firing, "the UpwatchMonitorDown alert fired")
    assert alert["labels"] == {
        "alertname": "UpwatchMonitorDown",
        "severity": "critical",
        "instance": service.url.removeprefix("http://"),
        "job": "upwatch",
        "monitor": monitor_id,
        "project": project.json()["id"],
        "name": 'Shop "front"',
        "type": "http",
        "target": f"http://127.0.0.1:{port}/health",
    }
    assert alert["annotations"]["summary"] == 'Shop "front" is down'


# --- Role processes -----------------------------------------------------------------------


async def test_a_worker_process_serves_its_metrics_on_its_port_to_the_bearer_token_only(
    redis_url: str, tmp_path: Path
) -> None:
    # `upwatch worker` needs only Redis: a role process that answers no API. It serves its
    # metrics while it still waits for its region to be defined.
    prefix = f"test-{uuid.uuid4().hex}"
    port = free_port()
    env = clean_env(
        UPWATCH_REDIS_URL=redis_url,
        UPWATCH_BROKER_PREFIX=prefix,
        UPWATCH_METRICS_PORT=str(port),
        UPWATCH_METRICS_TOKEN=TOKEN,
    )
    with (tmp_path / "worker.log").open("ab") as log:
        worker = await asyncio.create_subprocess_exec(
            UPWATCH, "worker", "--region", "eu", cwd=tmp_path, env=env, stdout=log, stderr=log
        )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:

            async def answered() -> httpx.Response | None:
                try:
                    return await client.get("/metrics", headers=BEARER)
                except httpx.TransportError:
                    assert worker.returncode is None, (tmp_path / "worker.log").read_text()
                    return None

            page = await until(answered, "the worker served /metrics")
            assert page.status_code == 200
            assert page.headers["content-type"].startswith("text/plain")
            families = {f.name: f for f in text_string_to_metric_families(page.text)}
            assert {
                "upwatch_build_info",
                "process_resident_memory_bytes",
                "python_gc_objects_collected",
            } <= (families.keys())
            stalls = {s.labels["role"]: s.value for s in families["upwatch_role_stalled"].samples}
            assert stalls == {ROLE: 0.0}
            assert not families["upwatch_monitor_up"].samples  # a worker stores no results
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
                refused = await client.get("/metrics", headers=headers)
                assert refused.status_code == 401
                assert refused.headers["content-type"] == "application/problem+json"
                assert refused.headers["WWW-Authenticate"] == "Bearer"
                assert "UPWATCH_METRICS_TOKEN" in refused.json()["detail"]
                assert "upwatch_" not in refused.text
    finally:
        if worker.returncode is None:
            worker.send_signal(signal.SIGTERM)
            await asyncio.wait_for(worker.wait(), COMMAND_SECONDS)
        await forget_redis_keys(redis_url, prefix)
    assert worker.returncode == 0, (tmp_path / "worker.log").read_text()


async def test_a_metrics_port_that_is_taken_is_retried_and_closed_without_a_token() -> None:
    metrics = Metrics()
    supervisor = Supervisor(metrics, first_backoff_seconds=0.05, max_backoff_seconds=0.1)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        start_metrics_port(supervisor, metrics, Settings(metrics_port=port))

        async def failed_twice() -> bool:
            return supervisor.roles[ROLE].restarts >= 2

        await until(failed_twice, "the taken port made the role fail and restart")
    restarts = metrics.registry.get_sample_value("upwatch_role_restarts_total", {"role": ROLE})
    assert restarts is not None
    assert restarts >= 2
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:

            async def served() -> httpx.Response | None:
                try:
                    return await client.get("/metrics")
                except httpx.TransportError:
                    return None

            closed = await until(served, "the port was bound once free")
            assert closed.status_code == 401
            assert "UPWATCH_METRICS_PUBLIC" in closed.json()["detail"]
            # Other paths and methods answer problem documents too.
            for method, path, status in (("GET", "/nope", 404), ("POST", "/metrics", 405)):
                other = await client.request(method, path)
                assert other.status_code == status
                assert other.headers["content-type"].startswith("application/problem+json")
                assert other.json()["status"] == status
    finally:
        for task in supervisor.tasks:
            task.cancel()
        await asyncio.gather(*supervisor.tasks, return_exceptions=True)


# --- What the per-monitor series say ------------------------------------------------------


def test_the_info_series_escapes_the_name_and_shows_the_target_without_its_secrets() -> None:
    metrics = Metrics()
    metrics.monitor_checked("m-1", "p-1", "up", 12.5)
    metrics.monitor_described(
        "m-1", 'Shop "front"\\\nline', "http", "https://u:pw@shop.test:8443/a?k=1#f"
    )
    metrics.monitor_checked("m-2", "p-1", "down", None)
    metrics.monitor_described("m-2", "Database", "tcp", "db.internal:5432")
    metrics.monitor_certificate("m-1", 1_800_000_000.0)
    families = {f.name: f for f in text_string_to_metric_families(metrics.render().decode())}
    info = {
        s.labels["monitor"]: (s.labels, s.value) for s in families["upwatch_monitor_info"].samples
    }
    assert info["m-1"] == (
        {
            "monitor": "m-1",
            "project": "p-1",
            "name": 'Shop "front"\\\nline',
            "type": "http",
            "target": "https://shop.test:8443/a",
        },
        1.0,
    )
    assert info["m-2"][0]["target"] == "db.internal:5432"
    expiry = families["upwatch_monitor_certificate_expiry_timestamp_seconds"].samples
    assert [(s.labels, s.value) for s in expiry] == [
        ({"monitor": "m-1", "project": "p-1"}, 1_800_000_000.0)
    ]
    metrics.monitor_gone("m-1")
    families = {f.name: f for f in text_string_to_metric_families(metrics.render().decode())}
    assert [s.labels["monitor"] for s in families["upwatch_monitor_info"].samples] == ["m-2"]
    assert not families["upwatch_monitor_certificate_expiry_timestamp_seconds"].samples


def test_a_certificate_expiry_is_read_from_a_tls_checks_not_after_and_nothing_else() -> None:
    assert certificate_expiry({"notAfter": "2027-01-15T12:00:00Z"}) == (
        datetime(2027, 1, 15, 12, tzinfo=UTC).timestamp()
    )
    for details in ({}, {"notAfter": 5}, {"notAfter": "soon"}, {"notAfter": "2027-01-15T12:00"}):
        assert certificate_expiry(details) is None


async def test_an_ingester_keeps_only_the_series_of_monitors_whose_latest_check_it_stored() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    metrics = Metrics()
    for monitor_id in ("mine", "taken", "paused", "unchecked"):
        metrics.monitor_checked(monitor_id, "p", "up", 1.0, now)
    in_database = {"mine": now, "taken": now + timedelta(seconds=10), "unchecked": None}

    async def latest(monitor_ids: Any) -> dict[str, datetime | None]:
        # Meanwhile this process stores a newer check of "mine" than the database said.
        metrics.monitor_checked("mine", "p", "up", 1.0, now + timedelta(seconds=20))
        return {m: in_database[m] for m in monitor_ids if m in in_database}

    dropped = await SeriesSweep(metrics, latest).sweep()
    assert sorted(dropped) == ["paused", "taken"]
    assert sorted(metrics.monitors_shown()) == ["mine", "unchecked"]


def test_a_password_with_a_slash_or_hash_does_not_reach_the_target_label() -> None:
    from upwatch.kit.targets import shown_target

    assert shown_target("https://user:pa/ss@host.test/health") == "https://host.test/health"
    assert shown_target("https://user:p#w@host.test/x?k=1") == "https://host.test/x"
    assert shown_target("https://user:p?w@host.test:8443/") == "https://host.test:8443/"
