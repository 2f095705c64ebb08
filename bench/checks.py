"""Throughput of the monitoring engine: many HTTP monitors against a fast local target.

Starts a minimal HTTP target (its own process, answering 200 "ok" to any path) and the real
service (`upwatch serve`, one process, SQLite or PostgreSQL), creates one user, one project and
``--monitors`` HTTP monitors at ``--interval`` seconds through the API, waits one interval for
the schedule to settle, then measures for ``--seconds``:

- checks completed: rows in ``check_results`` whose ``checked_at`` falls in the window, read
  from the database after the run, against expected = monitors x seconds / interval;
- schedule lateness p50/p99/max: from the service's ``upwatch_check_lateness_seconds``
  histogram, scraped at both ends of the window (bucket resolution), and, at millisecond
  resolution, each check's delay against its monitor's most punctual check in the window
  (``checked_at - k x interval``; includes the probe's own duration);
- CPU seconds of the service process per 1,000 checks (/proc/<pid>/stat over the window),
  its peak RSS (VmHWM over its whole life, and, reset at the window's start, the window's
  own peak), and rows written per second.

Everything stays on 127.0.0.1 (UPWATCH_TARGETS_LOOPBACK_ONLY=true). The service is pinned to
core 0; the target, this driver (and PostgreSQL, which is not pinned) share the other core.
Prints JSON lines and a table; exits 1 when the run failed and 2 when a target was missed.

    .venv/bin/python bench/checks.py [--monitors 10000] [--interval 60] [--seconds 300]
                                     [--db sqlite|postgresql] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

UPWATCH = str(Path(sys.executable).parent / "upwatch")
TICKS = os.sysconf("SC_CLK_TCK")
TASKSET = shutil.which("taskset") or ""
TWO_CORES = bool(TASKSET) and (os.cpu_count() or 1) > 1
PIN_SERVICE: list[str] = [TASKSET, "-c", "0"] if TWO_CORES else []
PIN_OTHERS: list[str] = [TASKSET, "-c", "1"] if TWO_CORES else []
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"

# Targets of the issue "Monitoring engine" (10,000 monitors at 60 s, over 5 minutes).
TARGET_COMPLETION_PCT = 99.5
TARGET_P99_LATENESS_S = 1.0
TARGET_CPU_PER_1000 = 1.5
TARGET_PEAK_RSS_MB = 250.0


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime, all threads


def status_kib(pid: int, key: str) -> int:
    match = re.search(rf"^{key}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(match.group(1)) if match else 0


# --- the target: a raw asyncio HTTP/1.1 keep-alive server, 200 "ok" to anything -------------

_RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
    b"Connection: keep-alive\r\n\r\nok"
)


def serve_target(port: int) -> None:
    """Run in its own process (``--target-server PORT``); prints its request count on exit."""
    served = 0

    class Http(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport: asyncio.Transport = transport  # type: ignore[assignment]
            self.buffer = b""
            self.skip = 0  # body bytes still to discard

        def data_received(self, data: bytes) -> None:
            nonlocal served
            self.buffer += data
            while True:
                if self.skip:
                    dropped = min(self.skip, len(self.buffer))
                    self.buffer = self.buffer[dropped:]
                    self.skip -= dropped
                    if self.skip:
                        return
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(self.buffer) > 65536:
                        self.transport.close()
                    return
                head, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
                length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
                self.skip = int(length.group(1)) if length else 0
                served += 1
                self.transport.write(_RESPONSE)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        server = await loop.create_server(Http, "127.0.0.1", port, backlog=4096)
        print("ready", flush=True)
        await stop.wait()
        server.close()

    try:
        import uvloop

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())
    print(json.dumps({"requests": served}), flush=True)


def start_target(port: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [*PIN_OTHERS, sys.executable, __file__, "--target-server", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"http://127.0.0.1:{port}/probe", timeout=1).status_code == 200:
                return process
        time.sleep(0.1)
    process.kill()
    raise RuntimeError("the target server did not start")


def stop_target(process: subprocess.Popen[str]) -> int | None:
    process.send_signal(signal.SIGTERM)
    try:
        out, _ = process.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        return None
    for line in out.splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            return int(json.loads(line)["requests"])
    return None


# --- PostgreSQL: a fresh database per run -----------------------------------------------------


async def pg_admin(statement: str) -> None:
    import asyncpg  # type: ignore[import-untyped]

    connection = await asyncpg.connect(PG_ADMIN_URL, timeout=10)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


async def pg_fetch(database: str, query: str, *args: Any) -> list[Any]:
    import asyncpg

    connection = await asyncpg.connect(PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{database}", timeout=10)
    try:
        return list(await connection.fetch(query, *args))
    finally:
        await connection.close()


def pg_backend_pids(database: str) -> list[int]:
    rows = asyncio.run(
        pg_fetch(
            "postgres",
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            database,
        )
    )
    return [int(r["pid"]) for r in rows]


def cpu_of(pids: list[int]) -> dict[int, float]:
    seen = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            seen[pid] = cpu_seconds(pid)
    return seen


# --- the service ------------------------------------------------------------------------------


def start_service(
    workdir: Path, port: int, database_url: str | None
) -> tuple[subprocess.Popen[bytes], str, Path]:
    plans = workdir / "plans.toml"
    plans.write_text(
        "[plans.free]\n"
        'monitorCount = "unlimited"\n'
        "checkFrequencyMinutes = 0\n"
        'apiCallsPerDay = "unlimited"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("UPWATCH_")}
    env.update(
        UPWATCH_DATA_DIR=str(workdir / "data"),
        UPWATCH_ALLOW_PRIVATE_TARGETS="true",
        UPWATCH_TARGETS_LOOPBACK_ONLY="true",
        UPWATCH_PLANS_FILE=str(plans),
        UPWATCH_API_METERING="false",
    )
    if database_url:
        env["UPWATCH_DATABASE_URL"] = database_url
    log_path = workdir / "service.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [*PIN_SERVICE, UPWATCH, "serve", "--port", str(port), "--log-level", "warning"],
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return process, url, log_path
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"the service did not start:\n{log_tail(log_path)}")


def log_tail(path: Path, lines: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


def stop_service(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


# --- setup through the API ----------------------------------------------------------------


@dataclass
class Setup:
    seconds: float
    created: int
    failed: int
    first_error: str | None


async def create_monitors(
    url: str, target: str, count: int, interval: int, concurrency: int, allowed: float
) -> Setup:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as client:
        signup = await client.post(
            "/auth/signup", json={"email": "bench@example.com", "password": "bench password"}
        )
        signup.raise_for_status()
        client.headers["Authorization"] = f"Bearer {signup.json()['access_token']}"
        project = await client.post("/projects", json={"name": "bench"})
        project.raise_for_status()
        project_id = project.json()["id"]

        started = time.monotonic()
        deadline = started + allowed
        next_index = 0
        created = failed = 0
        first_error: str | None = None
        last_report = started

        async def one_worker() -> None:
            nonlocal next_index, created, failed, first_error, last_report
            while next_index < count and time.monotonic() < deadline:
                n = next_index
                next_index += 1
                try:
                    response = await client.post(
                        "/monitors",
                        json={
                            "projectId": project_id,
                            "name": f"m{n}",
                            "type": "http",
                            "url": f"{target}/m/{n}",
                            "intervalSeconds": interval,
                        },
                    )
                    ok = response.status_code == 201
                    error = None if ok else f"{response.status_code} {response.text[:300]}"
                except httpx.HTTPError as exc:
                    ok, error = False, f"{type(exc).__name__}: {exc}"
                if ok:
                    created += 1
                else:
                    failed += 1
                    first_error = first_error or error
                    if failed >= 50:
                        raise RuntimeError(f"creating monitors keeps failing: {first_error}")
                now = time.monotonic()
                if now - last_report >= 10:
                    last_report = now
                    done = created + failed
                    rate = done / (now - started)
                    emit(
                        "setup_progress",
                        created=created,
                        failed=failed,
                        elapsed_s=round(now - started, 1),
                        per_second=round(rate, 1),
                        projected_s=round(count / rate, 1) if rate else None,
                    )
                    # Stop early when the rest cannot finish within the time allowed.
                    if now - started >= 20 and rate and count / rate > allowed * 1.2:
                        raise RuntimeError(
                            f"setup too slow: {rate:.1f} monitors/s, {count} would take "
                            f"{count / rate:.0f} s (allowed {allowed:.0f} s)"
                        )

        await asyncio.gather(*(one_worker() for _ in range(concurrency)))
        seconds = time.monotonic() - started
        if created + failed < count:
            raise RuntimeError(f"setup did not finish in {allowed:.0f} s: {created} created")
        return Setup(seconds, created, failed, first_error)


# --- /metrics ---------------------------------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def scrape(url: str) -> dict[str, float]:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    samples: dict[str, float] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match:
            samples[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return samples


def family_sum(samples: dict[str, float], name: str, label: str = "") -> float:
    return sum(
        v for k, v in samples.items() if (k == name or k.startswith(name + "{")) and label in k
    )


def lateness_buckets(
    before: dict[str, float], after: dict[str, float]
) -> list[tuple[float, float]]:
    """(upper bound, cumulative count) of the histogram's growth between two scrapes."""
    name = "upwatch_check_lateness_seconds_bucket"
    buckets = []
    for key, value in after.items():
        match = re.fullmatch(rf'{name}\{{le="([^"]+)"\}}', key)
        if match:
            buckets.append((float(match.group(1)), value - before.get(key, 0.0)))
    return sorted(buckets)


def bucket_quantile(buckets: list[tuple[float, float]], q: float) -> tuple[float, float] | None:
    """(interpolated estimate as Prometheus' histogram_quantile, bucket upper bound)."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for upper, cumulative in buckets:
        if cumulative >= rank:
            if math.isinf(upper):
                return lower, upper
            inside = cumulative - below
            share = (rank - below) / inside if inside else 1.0
            return lower + (upper - lower) * share, upper
        lower, below = upper, cumulative
    return None


def bucket_max(buckets: list[tuple[float, float]]) -> float | None:
    """Upper bound of the highest bucket that received an observation."""
    previous = 0.0
    top = None
    for upper, cumulative in buckets:
        if cumulative > previous:
            top = upper
        previous = cumulative
    return top


# --- results from the database ------------------------------------------------------------


@dataclass
class Rows:
    total: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    monitors_seen: int = 0
    times: dict[str, list[float]] = field(default_factory=dict)  # monitor -> epoch seconds


def _naive_utc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def rows_sqlite(path: Path, start: float, end: float) -> Rows:
    # Read-only, after the service stopped (its WAL is checkpointed then).
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        cursor = connection.execute(
            "SELECT monitor_id, status, error_kind, checked_at FROM check_results "
            "WHERE checked_at >= ? AND checked_at < ?",
            (_naive_utc(start), _naive_utc(end)),
        )
        raw = [
            (m, s, e, datetime.fromisoformat(c).replace(tzinfo=UTC).timestamp())
            for m, s, e, c in cursor
        ]
    finally:
        connection.close()
    return summarise(raw)


def rows_postgresql(database: str, start: float, end: float) -> Rows:
    records = asyncio.run(
        pg_fetch(
            database,
            "SELECT monitor_id, status, error_kind, checked_at FROM check_results "
            "WHERE checked_at >= $1 AND checked_at < $2",
            datetime.fromtimestamp(start, UTC),
            datetime.fromtimestamp(end, UTC),
        )
    )
    return summarise(
        [
            (r["monitor_id"], r["status"], r["error_kind"], r["checked_at"].timestamp())
            for r in records
        ]
    )


def summarise(raw: list[tuple[str, str, str | None, float]]) -> Rows:
    rows = Rows(total=len(raw))
    by_status: dict[str, int] = defaultdict(int)
    errors: dict[str, int] = defaultdict(int)
    times: dict[str, list[float]] = defaultdict(list)
    for monitor_id, status, error_kind, at in raw:
        by_status[status] += 1
        if error_kind:
            errors[error_kind] += 1
        times[monitor_id].append(at)
    rows.by_status, rows.errors, rows.times = dict(by_status), dict(errors), dict(times)
    rows.monitors_seen = len(times)
    return rows


def relative_delays(times: dict[str, list[float]], interval: float) -> list[float]:
    """Per check: seconds later than its monitor's most punctual check in the window.

    Checks run at a fixed rate (due, due + interval, ...), so ``checked_at - k * interval`` is
    the same for every check of a monitor save for lateness and probe time; the smallest one
    stands for the due time. It cannot see a delay every check of a monitor shared.
    """
    delays: list[float] = []
    for stamps in times.values():
        if len(stamps) < 2:
            continue
        stamps.sort()
        first = stamps[0]
        phases = [t - round((t - first) / interval) * interval for t in stamps]
        best = min(phases)
        delays.extend(p - best for p in phases)
    return sorted(delays)


def quantile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


# --- the run ------------------------------------------------------------------------------


def wait_service_alive(process: subprocess.Popen[bytes], log_path: Path) -> None:
    if process.poll() is not None:
        raise RuntimeError(f"the service exited ({process.returncode}):\n{log_tail(log_path)}")


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {
        "db": args.db,
        "monitors": args.monitors,
        "interval_s": args.interval,
        "window_s": args.seconds,
    }
    database = f"upwatch_bench_{uuid.uuid4().hex[:12]}" if args.db == "postgresql" else None
    with tempfile.TemporaryDirectory(prefix="upwatch-bench-") as tmp:
        workdir = Path(tmp)
        tport, sport = free_port(), free_port()
        target = start_target(tport)
        target_cpu0 = cpu_seconds(target.pid)
        service = None
        try:
            database_url = None
            if database:
                asyncio.run(pg_admin(f'CREATE DATABASE "{database}"'))
                database_url = f"postgresql://postgres@127.0.0.1:5432/{database}"
            service, url, log_path = start_service(workdir, sport, database_url)
            pid = service.pid
            emit("started", service_pid=pid, target_pid=target.pid, url=url, database=database)

            setup = asyncio.run(
                create_monitors(
                    url,
                    f"http://127.0.0.1:{tport}",
                    args.monitors,
                    args.interval,
                    args.concurrency,
                    args.setup_timeout,
                )
            )
            result.update(
                setup_s=round(setup.seconds, 1),
                setup_per_second=round(setup.created / setup.seconds, 1),
                created=setup.created,
                create_failures=setup.failed,
            )
            emit(
                "setup",
                **{k: result[k] for k in ("setup_s", "setup_per_second", "created")},
                failed=setup.failed,
                first_error=setup.first_error,
            )
            if setup.created == 0:
                raise RuntimeError(f"no monitor was created: {setup.first_error}")

            # Warm-up: one interval, so every monitor has had its first check and the
            # schedule runs at its steady rate.
            warm_until = time.monotonic() + args.interval
            while time.monotonic() < warm_until:
                wait_service_alive(service, log_path)
                time.sleep(min(5.0, max(0.0, warm_until - time.monotonic())))
            # VmHWM so far: it includes the Argon2 hashes (64 MiB each by default) of startup's
            # dummy hash and of the signup. Then reset it so the window's own peak shows too
            # ("5" > clear_refs, Linux 4.0+).
            peak_before_kib = status_kib(pid, "VmHWM")
            try:
                Path(f"/proc/{pid}/clear_refs").write_text("5")
                window_peak = True
            except OSError:
                window_peak = False
            emit(
                "warm",
                rss_mb=round(status_kib(pid, "VmRSS") / 1024, 1),
                peak_rss_so_far_mb=round(peak_before_kib / 1024, 1),
                peak_reset=window_peak,
            )

            pg_pids = pg_backend_pids(database) if database else []
            pg_cpu0 = cpu_of(pg_pids)
            metrics0 = scrape(url)
            cpu0 = cpu_seconds(pid)
            start = time.time()
            end = start + args.seconds
            last_cpu, last_t = cpu0, time.monotonic()
            while time.time() < end:
                time.sleep(min(15.0, max(0.0, end - time.time())))
                wait_service_alive(service, log_path)
                now_cpu, now_t = cpu_seconds(pid), time.monotonic()
                sample = scrape(url)
                emit(
                    "sample",
                    t_s=round(time.time() - start, 1),
                    cpu_pct=round((now_cpu - last_cpu) / (now_t - last_t) * 100, 1),
                    rss_mb=round(status_kib(pid, "VmRSS") / 1024, 1),
                    checks_run=int(
                        family_sum(sample, "upwatch_checks_total")
                        - family_sum(metrics0, "upwatch_checks_total")
                    ),
                    jobs_queued=family_sum(sample, "upwatch_queue_depth", 'queue="jobs:'),
                    results_queued=family_sum(sample, "upwatch_queue_depth", 'queue="results"'),
                )
                last_cpu, last_t = now_cpu, now_t
            cpu1 = cpu_seconds(pid)
            metrics1 = scrape(url)
            pg_cpu1 = cpu_of(pg_pids)
            window_peak_kib = status_kib(pid, "VmHWM")
            peak_rss_mb = max(peak_before_kib, window_peak_kib) / 1024
            end_rss_mb = status_kib(pid, "VmRSS") / 1024
            target_cpu = cpu_seconds(target.pid) - target_cpu0

            # Let the ingester store what was checked before the end of the window.
            time.sleep(args.drain)
            wait_service_alive(service, log_path)
            stop_service(service)

            rows = (
                rows_sqlite(workdir / "data" / "upwatch.db", start, end)
                if database is None
                else rows_postgresql(database, start, end)
            )
        finally:
            if service is not None:
                stop_service(service)
            target_requests = stop_target(target)
            if database:
                with contextlib.suppress(Exception):
                    asyncio.run(pg_admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))

    expected = args.monitors * args.seconds / args.interval
    buckets = lateness_buckets(metrics0, metrics1)
    late_count = buckets[-1][1] if buckets else 0
    late_sum = metrics1.get("upwatch_check_lateness_seconds_sum", 0) - metrics0.get(
        "upwatch_check_lateness_seconds_sum", 0
    )
    p50 = bucket_quantile(buckets, 0.50)
    p99 = bucket_quantile(buckets, 0.99)
    delays = relative_delays(rows.times, args.interval)
    used = cpu1 - cpu0
    checks_run = family_sum(metrics1, "upwatch_checks_total") - family_sum(
        metrics0, "upwatch_checks_total"
    )
    result.update(
        expected_checks=round(expected),
        rows_in_window=rows.total,
        completion_pct=round(rows.total / expected * 100, 2),
        monitors_checked=rows.monitors_seen,
        rows_by_status=rows.by_status,
        rows_by_error=rows.errors,
        checks_run_metric=int(checks_run),
        results_per_second=round(rows.total / args.seconds, 1),
        lateness_observations=int(late_count),
        lateness_mean_s=round(late_sum / late_count, 4) if late_count else None,
        lateness_p50_s=round(p50[0], 4) if p50 else None,
        lateness_p50_bucket_le=p50[1] if p50 else None,
        lateness_p99_s=round(p99[0], 4) if p99 else None,
        lateness_p99_bucket_le=p99[1] if p99 else None,
        lateness_max_bucket_le=bucket_max(buckets),
        lateness_buckets={str(le): int(c) for le, c in buckets},
        relative_delay_p50_s=_round(quantile(delays, 0.50)),
        relative_delay_p99_s=_round(quantile(delays, 0.99)),
        relative_delay_max_s=_round(delays[-1] if delays else None),
        service_cpu_s=round(used, 2),
        service_cpu_pct=round(used / args.seconds * 100, 1),
        cpu_s_per_1000_checks=round(used / rows.total * 1000, 3) if rows.total else None,
        peak_rss_mb=round(peak_rss_mb, 1),
        peak_rss_before_window_mb=round(peak_before_kib / 1024, 1),
        window_peak_rss_mb=round(window_peak_kib / 1024, 1) if window_peak else None,
        end_rss_mb=round(end_rss_mb, 1),
        target_cpu_s=round(target_cpu, 2),
        target_requests_total=target_requests,
    )
    if database:
        pg_used = sum(pg_cpu1[p] - pg_cpu0[p] for p in pg_cpu1 if p in pg_cpu0)
        result.update(postgres_backends=len(pg_cpu0), postgres_cpu_s=round(pg_used, 2))
    return result


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def verdicts(result: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    p99 = result["lateness_p99_s"]
    p99_le = result["lateness_p99_bucket_le"]
    cpu = result["cpu_s_per_1000_checks"]
    return [
        (
            "checks completed",
            f"{result['completion_pct']:.2f} %",
            f">= {TARGET_COMPLETION_PCT} %",
            result["completion_pct"] >= TARGET_COMPLETION_PCT,
        ),
        (
            "lateness p99",
            "n/a" if p99 is None else f"{p99:.3f} s (bucket <= {p99_le:g} s)",
            f"< {TARGET_P99_LATENESS_S:g} s",
            p99_le is not None and p99_le <= TARGET_P99_LATENESS_S,
        ),
        (
            "CPU per 1,000 checks",
            "n/a" if cpu is None else f"{cpu:.3f} s",
            f"<= {TARGET_CPU_PER_1000} s",
            cpu is not None and cpu <= TARGET_CPU_PER_1000,
        ),
        (
            "peak RSS",
            f"{result['peak_rss_mb']:.1f} MB",
            f"< {TARGET_PEAK_RSS_MB:g} MB",
            result["peak_rss_mb"] < TARGET_PEAK_RSS_MB,
        ),
    ]


def print_table(result: dict[str, Any], command: str) -> bool:
    print()
    print(f"command: {command}")
    print(
        f"{result['monitors']} HTTP monitors every {result['interval_s']} s on {result['db']}, "
        f"window {result['window_s']} s after one interval of warm-up; "
        f"setup {result['setup_s']} s ({result['setup_per_second']}/s)"
    )
    rows = [
        ("expected checks", f"{result['expected_checks']}"),
        ("rows in window", f"{result['rows_in_window']} ({result['rows_by_status']})"),
        ("checks run (metric)", f"{result['checks_run_metric']}"),
        ("results written / s", f"{result['results_per_second']}"),
        (
            "lateness p50 / p99 / max",
            f"{_fmt(result['lateness_p50_s'])} / {_fmt(result['lateness_p99_s'])} / "
            f"<= {_fmt(result['lateness_max_bucket_le'])} s (histogram buckets)",
        ),
        (
            "rel. delay p50 / p99 / max",
            f"{_fmt(result['relative_delay_p50_s'])} / {_fmt(result['relative_delay_p99_s'])} / "
            f"{_fmt(result['relative_delay_max_s'])} s (vs. each monitor's best check)",
        ),
        (
            "service CPU",
            f"{result['service_cpu_s']} s ({result['service_cpu_pct']} % of a core)",
        ),
        (
            "RSS peak before / in window",
            f"{result['peak_rss_before_window_mb']} / {result['window_peak_rss_mb']} MB "
            f"(end {result['end_rss_mb']} MB)",
        ),
        ("target CPU", f"{result['target_cpu_s']} s, {result['target_requests_total']} requests"),
    ]
    if "postgres_cpu_s" in result:
        rows.append(
            (
                "PostgreSQL CPU",
                f"{result['postgres_cpu_s']} s ({result['postgres_backends']} backends)",
            )
        )
    for label, value in rows:
        print(f"  {label:<28}{value}")
    print()
    print(f"  {'target':<24}{'measured':<36}{'goal':<14}verdict")
    met = True
    for label, value, goal, ok in verdicts(result):
        met &= ok
        print(f"  {label:<24}{value:<36}{goal:<14}{'met' if ok else 'MISSED'}")
    return met


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--target-server":
        serve_target(int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--monitors", type=int, default=10_000)
    parser.add_argument("--interval", type=int, default=60)
    parser.add_argument("--seconds", type=int, default=300)
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent API calls")
    parser.add_argument(
        "--setup-timeout", type=float, default=300, help="give up creating monitors after this"
    )
    parser.add_argument(
        "--drain", type=float, default=5, help="seconds to let the ingester catch up at the end"
    )
    args = parser.parse_args()
    command = shlex.join([sys.executable, *sys.argv])
    if TWO_CORES:
        os.sched_setaffinity(0, {1})  # this driver stays off the service's core
    emit("command", command=command, pinned=TWO_CORES)
    try:
        result = run(args)
    except Exception as exc:
        emit("failed", error=f"{type(exc).__name__}: {exc}")
        sys.exit(1)
    emit("result", **result)
    met = print_table(result, command)
    sys.exit(0 if met else 2)


if __name__ == "__main__":
    main()
