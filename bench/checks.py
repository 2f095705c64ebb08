"""Throughput of the monitoring engine against a bare aiohttp client, in one run (issue 19).

Starts a minimal HTTP target (its own process, answering 200 "ok" to any path) and the real
service (`upwatch serve`, SQLite or PostgreSQL), creates one user, one project and
``--monitors`` HTTP monitors at ``--interval`` seconds through the API, waits one interval for
the schedule to settle, then measures for ``--seconds``:

- checks completed: rows in ``check_results`` whose ``checked_at`` falls in the window, read
  from the database after the run (once it holds every check counted by the window's end,
  ``--drain`` seconds at most), against expected = monitors x seconds / interval;
- schedule lateness p50/p99/max: from the service's ``upwatch_check_lateness_seconds``
  histogram, scraped at both ends of the window (bucket resolution), and, at millisecond
  resolution, each check's delay against its monitor's most punctual check in the window
  (``checked_at - k x interval``; includes the probe's own duration);
- recorded response time p50/p90/p99: ``check_results.response_time_ms`` in the window;
- CPU seconds per 1,000 checks and RSS of every service process (``upwatch serve`` and its
  descendants, from /proc): RSS summed every ``--sample-seconds``, its start, peak and end and
  its least-squares slope after ``--warmup-seconds`` (default: the window's first 20 %); the
  peak RSS (VmHWM) over the service's whole life and, reset at the window's start, in it;
- the load average (/proc/loadavg) at both ends of the window.

Then, with the service stopped so the two never compete, ``bench/bare_client.py`` (its own
process, pinned like the service) sends GET requests at the same rate to the same URLs for
``--bare-seconds`` (default: ``--seconds``) through one ``aiohttp.ClientSession`` (uvloop when
installed), and reports its CPU per 1,000 requests, response time p50/p90/p99 (perf_counter
around the request and its body), lateness and completion. Printed side by side, with the
targets of issue 19: CPU ratio (Upwatch / bare) <= 1.5, recorded p50 and p90 within 0.5 and
1 ms of the bare client's, completion >= 99.5 %, p99 lateness < 1 s, peak RSS < 250 MB, RSS
slope < 1 MB per 10 min (counted only for a window of 10 minutes or more).

Everything stays on 127.0.0.1 (UPWATCH_TARGETS_LOOPBACK_ONLY=true). The service and the bare
client run on ``--service-cores`` (default core 0; ``0,1`` lets worker processes spread); the
target, this driver (and PostgreSQL, which is not pinned) run on core 1. Prints JSON lines
and two tables; exits 1 when the run failed and 2 when a target was missed.

    .venv/bin/python bench/checks.py [--monitors 10000] [--interval 60] [--seconds 300]
                                     [--db sqlite|postgresql] [--concurrency 16]
                                     [--service-cores 0] [--bare-seconds S] [--bare-warmup 5]
                                     [--warmup-seconds W] [--sample-seconds 5] [--drain 30]
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
BARE_CLIENT = str(Path(__file__).with_name("bare_client.py"))
TWO_CORES = bool(TASKSET) and (os.cpu_count() or 1) > 1
PIN_OTHERS: list[str] = [TASKSET, "-c", "1"] if TWO_CORES else []
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"

# Targets of issue 19 (10,000 monitors at 60 s): CPU and response time are stated against a
# bare aiohttp client run on the same machine in the same run, so they travel across machines.
TARGET_COMPLETION_PCT = 99.5
TARGET_P99_LATENESS_S = 1.0
TARGET_CPU_RATIO = 1.5  # Upwatch CPU-s per 1,000 checks / the bare client's per 1,000 requests
TARGET_P50_DIFF_MS = 0.5
TARGET_P90_DIFF_MS = 1.0
TARGET_PEAK_RSS_MB = 250.0
TARGET_RSS_SLOPE_MB_PER_10_MIN = 1.0
TARGET_BYTES_PER_CHECK_SQLITE = 60.0  # issue 39: check_results with its key, on SQLite
SLOPE_MIN_WINDOW_S = 600  # a shorter window cannot tell allocator settling from a leak
# The absolute figure earlier records were held to; printed for comparison, not a target.
ABSOLUTE_CPU_PER_1000 = 1.5


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pin(cores: str) -> list[str]:
    return [TASKSET, "-c", cores] if TWO_CORES else []


def stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: [0] state, [1] ppid, [11] utime, ..."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    fields = stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime, all threads


def status_kib(pid: int, key: str) -> int:
    match = re.search(rf"^{key}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(match.group(1)) if match else 0


def process_tree(root: int) -> list[int]:
    """``root`` and all its descendants, found through each process's parent in /proc."""
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):  # gone meanwhile
                children[int(stat_fields(int(entry.name))[1])].append(int(entry.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    return tree


def tree_cpu_seconds(pids: list[int]) -> float:
    """CPU of a process tree, children included: utime + stime + cutime + cstime.

    A child its parent has reaped moves its CPU into the parent's cutime/cstime, so the
    difference of two readings also counts children that exited in between. Only processes
    that left the tree (re-parented, never reaped by it) are missed.
    """
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat_fields(pid)
            total += sum(int(fields[i]) for i in (11, 12, 13, 14))
    return total / TICKS


def tree_kib(pids: list[int], key: str) -> dict[int, int]:
    """``key`` of /proc/<pid>/status (VmRSS, VmHWM) per process still alive."""
    seen = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            seen[pid] = status_kib(pid, key)
    return seen


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def slope_per_minute(samples: list[tuple[float, float]], after: float) -> tuple[float, int] | None:
    """Least-squares slope (units per minute) of (seconds, value) samples from ``after`` on."""
    points = [(t, v) for t, v in samples if t >= after]
    if len(points) < 3:
        return None
    mean_t = sum(t for t, _ in points) / len(points)
    mean_v = sum(v for _, v in points) / len(points)
    sxx = sum((t - mean_t) ** 2 for t, _ in points)
    if sxx == 0:
        return None
    sxy = sum((t - mean_t) * (v - mean_v) for t, v in points)
    return sxy / sxx * 60, len(points)


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
    workdir: Path, port: int, database_url: str | None, pinning: list[str]
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
        UPWATCH_METRICS_PUBLIC="true",  # scraped without a token
    )
    if database_url:
        env["UPWATCH_DATABASE_URL"] = database_url
    log_path = workdir / "service.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [*pinning, UPWATCH, "serve", "--port", str(port), "--log-level", "warning"],
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
    response_ms: list[float] = field(default_factory=list)  # sorted; rows that have a time


def _naive_utc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


# The stored status numbers (upwatch/models/compact.py).
STATUS_NAMES = {0: "up", 1: "down", 2: "degraded"}
RESULT_COLUMNS = (
    "monitor_number, status, error_kind, checked_at_ms, response_us FROM check_results "
    "WHERE checked_at_ms >= {} AND checked_at_ms < {}"
)


def _row(
    m: int, s: int, e: str | None, at_ms: int, us: int | None
) -> tuple[str, str, str | None, float, float | None]:
    return (str(m), STATUS_NAMES[s], e, at_ms / 1000, None if us is None else us / 1000)


def rows_sqlite(path: Path, start: float, end: float) -> Rows:
    # Read-only, after the service stopped (its WAL is checkpointed then).
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        cursor = connection.execute(
            "SELECT " + RESULT_COLUMNS.format("?", "?"),
            (int(start * 1000), int(end * 1000)),
        )
        raw = [_row(*row) for row in cursor]
    finally:
        connection.close()
    return summarise(raw)


def rows_postgresql(database: str, start: float, end: float) -> Rows:
    records = asyncio.run(
        pg_fetch(
            database,
            "SELECT " + RESULT_COLUMNS.format("$1", "$2"),
            int(start * 1000),
            int(end * 1000),
        )
    )
    return summarise([_row(*r) for r in records])


def bytes_per_check(workdir: Path, database: str | None) -> dict[str, Any]:
    """The result table's size on disk, indexes included, over its rows: SQLite's ``dbstat``
    (pages of the table and its indexes), PostgreSQL's ``pg_total_relation_size``."""
    if database:
        size, rows = asyncio.run(
            pg_fetch(
                database,
                "SELECT pg_total_relation_size('check_results'), "
                "(SELECT count(*) FROM check_results)",
            )
        )[0]
    else:
        path = workdir / "data" / "upwatch.db"
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            size = connection.execute(
                "SELECT sum(pgsize) FROM dbstat WHERE name = 'check_results' "
                "OR name IN (SELECT name FROM sqlite_master WHERE tbl_name = 'check_results')"
            ).fetchone()[0]
            rows = connection.execute("SELECT count(*) FROM check_results").fetchone()[0]
        finally:
            connection.close()
    return {
        "result_table_bytes": int(size or 0),
        "result_rows": int(rows),
        "bytes_per_check": round(int(size or 0) / rows, 1) if rows else None,
    }


def summarise(raw: list[tuple[str, str, str | None, float, float | None]]) -> Rows:
    rows = Rows(total=len(raw))
    by_status: dict[str, int] = defaultdict(int)
    errors: dict[str, int] = defaultdict(int)
    times: dict[str, list[float]] = defaultdict(list)
    for monitor_id, status, error_kind, at, response_ms in raw:
        by_status[status] += 1
        if error_kind:
            errors[error_kind] += 1
        times[monitor_id].append(at)
        if response_ms is not None:
            rows.response_ms.append(response_ms)
    rows.by_status, rows.errors, rows.times = dict(by_status), dict(errors), dict(times)
    rows.monitors_seen = len(times)
    rows.response_ms.sort()
    return rows


def stored_results(workdir: Path, database: str | None) -> int:
    """Rows in check_results, read while the service runs (WAL lets a reader in)."""
    if database:
        return int(asyncio.run(pg_fetch(database, "SELECT count(*) FROM check_results"))[0][0])
    path = workdir / "data" / "upwatch.db"
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return int(connection.execute("SELECT count(*) FROM check_results").fetchone()[0])
    finally:
        connection.close()


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


def pause_until(moment: float) -> None:
    time.sleep(max(0.0, moment - time.time()))


def wait_stored(
    workdir: Path,
    database: str | None,
    wanted: float,
    limit: float,
    process: subprocess.Popen[bytes],
    log_path: Path,
) -> bool:
    """Wait (at most ``limit`` s) until check_results holds ``wanted`` rows in all."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        wait_service_alive(process, log_path)
        # A busy or half-written database only means "not yet".
        with contextlib.suppress(Exception):
            if stored_results(workdir, database) >= wanted:
                return True
        time.sleep(0.25)
    return False


def tree_mb(pids: list[int]) -> float:
    return sum(tree_kib(pids, "VmRSS").values()) / 1024


def measure_service(
    args: argparse.Namespace, workdir: Path, target: str, target_pid: int, database: str | None
) -> dict[str, Any]:
    """Setup, warm-up and window of the service; its figures, read after it stopped."""
    result: dict[str, Any] = {}
    service = None
    try:
        database_url = None
        if database:
            asyncio.run(pg_admin(f'CREATE DATABASE "{database}"'))
            database_url = f"postgresql://postgres@127.0.0.1:5432/{database}"
        service, url, log_path = start_service(
            workdir, free_port(), database_url, pin(args.service_cores)
        )
        pid = service.pid
        emit("started", service_pid=pid, target_pid=target_pid, url=url, database=database)

        setup = asyncio.run(
            create_monitors(
                url, target, args.monitors, args.interval, args.concurrency, args.setup_timeout
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
        # dummy hash and of the signup. Then reset it, per process of the service's tree, so
        # the window's own peak shows too ("5" > clear_refs, Linux 4.0+).
        tree = process_tree(pid)
        peak_before = tree_kib(tree, "VmHWM")
        window_peak = True
        for member in tree:
            try:
                Path(f"/proc/{member}/clear_refs").write_text("5")
            except OSError:
                window_peak = False
        emit(
            "warm",
            rss_mb=round(tree_mb(tree), 1),
            peak_rss_so_far_mb=round(sum(peak_before.values()) / 1024, 1),
            peak_reset=window_peak,
            processes=len(tree),
        )

        pg_pids = pg_backend_pids(database) if database else []
        pg_cpu0 = cpu_of(pg_pids)
        metrics0 = scrape(url)
        target_cpu0 = cpu_seconds(target_pid)
        load0 = loadavg()
        # CPU and RSS of the whole tree: `upwatch serve` and any worker processes it runs.
        cpu0 = tree_cpu_seconds(tree)
        # The split: the service process (API, scheduler, ingester) and its probe workers.
        parent_cpu0 = cpu_seconds(pid)
        start = time.time()
        end = start + args.seconds
        rss = [(0.0, tree_mb(tree))]
        processes = len(tree)
        # /metrics costs the service CPU (10 ms at 10,000 monitors): scraped every 15 s only.
        scrape_every = max(1, round(15 / args.sample_seconds))
        last_cpu, last_t = cpu0, time.monotonic()
        tick = 0
        while (at := start + (tick + 1) * args.sample_seconds) < end:
            tick += 1
            pause_until(at)
            wait_service_alive(service, log_path)
            tree = process_tree(pid)
            processes = max(processes, len(tree))
            rss.append((time.time() - start, tree_mb(tree)))
            if tick % scrape_every:
                continue
            now_cpu, now_t = tree_cpu_seconds(tree), time.monotonic()
            sample = scrape(url)
            emit(
                "sample",
                t_s=round(time.time() - start, 1),
                cpu_pct=round((now_cpu - last_cpu) / (now_t - last_t) * 100, 1),
                rss_mb=round(rss[-1][1], 1),
                processes=len(tree),
                checks_run=int(
                    family_sum(sample, "upwatch_checks_total")
                    - family_sum(metrics0, "upwatch_checks_total")
                ),
                jobs_queued=family_sum(sample, "upwatch_queue_depth", 'queue="jobs:'),
                results_queued=family_sum(sample, "upwatch_queue_depth", 'queue="results"'),
            )
            last_cpu, last_t = now_cpu, now_t
        pause_until(end)
        wait_service_alive(service, log_path)
        tree = process_tree(pid)
        cpu1 = tree_cpu_seconds(tree)
        parent_cpu = cpu_seconds(pid) - parent_cpu0
        load1 = loadavg()
        rss.append((time.time() - start, tree_mb(tree)))
        metrics1 = scrape(url)
        pg_cpu1 = cpu_of(pg_pids)
        window_hwm = tree_kib(tree, "VmHWM")
        target_cpu = cpu_seconds(target_pid) - target_cpu0

        # Let the ingester store what was checked before the end of the window: done once
        # the table holds as many rows as checks were counted by then.
        checked = family_sum(metrics1, "upwatch_checks_total")
        drain_started = time.monotonic()
        drained = wait_stored(workdir, database, checked, args.drain, service, log_path)
        drain_s = time.monotonic() - drain_started
        stop_service(service)

        rows = (
            rows_sqlite(workdir / "data" / "upwatch.db", start, end)
            if database is None
            else rows_postgresql(database, start, end)
        )
        result.update(bytes_per_check(workdir, database))
    finally:
        if service is not None:
            stop_service(service)
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
    checks_run = checked - family_sum(metrics0, "upwatch_checks_total")
    # Peak: each process's own (VmHWM) summed, an upper bound of the tree's peak, against the
    # highest sampled sum; with one process both are that process's peak.
    lifetime_kib = sum(max(peak_before.get(p, 0), kib) for p, kib in window_hwm.items())
    sampled_peak = max(mb for _, mb in rss)
    warmup = args.warmup_seconds if args.warmup_seconds is not None else 0.2 * args.seconds
    slope = slope_per_minute(rss, warmup)
    result.update(
        expected_checks=round(expected),
        rows_in_window=rows.total,
        completion_pct=round(rows.total / expected * 100, 2),
        monitors_checked=rows.monitors_seen,
        rows_by_status=rows.by_status,
        rows_by_error=rows.errors,
        checks_run_metric=int(checks_run),
        results_per_second=round(rows.total / args.seconds, 1),
        drained=drained,
        drain_s=round(drain_s, 2),
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
        response_ms_p50=_round(quantile(rows.response_ms, 0.50)),
        response_ms_p90=_round(quantile(rows.response_ms, 0.90)),
        response_ms_p99=_round(quantile(rows.response_ms, 0.99)),
        service_processes_max=processes,
        service_cpu_s=round(used, 2),
        service_cpu_pct=round(used / args.seconds * 100, 1),
        cpu_s_per_1000_checks=round(used / rows.total * 1000, 4) if rows.total else None,
        parent_cpu_s_per_1000_checks=(
            round(parent_cpu / rows.total * 1000, 4) if rows.total else None
        ),
        workers_cpu_s_per_1000_checks=(
            round((used - parent_cpu) / rows.total * 1000, 4) if rows.total else None
        ),
        rss_start_mb=round(rss[0][1], 1),
        rss_sampled_peak_mb=round(sampled_peak, 1),
        rss_end_mb=round(rss[-1][1], 1),
        rss_samples=len(rss),
        rss_slope_warmup_s=round(warmup, 1),
        rss_slope_points=slope[1] if slope else 0,
        rss_slope_mb_per_min=_round(slope[0] if slope else None),
        rss_slope_mb_per_10_min=_round(slope[0] * 10 if slope else None, 3),
        peak_rss_mb=round(max(lifetime_kib / 1024, sampled_peak), 1),
        peak_rss_before_window_mb=round(sum(peak_before.values()) / 1024, 1),
        window_peak_rss_mb=round(sum(window_hwm.values()) / 1024, 1) if window_peak else None,
        loadavg_start=load0,
        loadavg_end=load1,
        target_cpu_s=round(target_cpu, 2),
    )
    if database:
        pg_used = sum(pg_cpu1[p] - pg_cpu0[p] for p in pg_cpu1 if p in pg_cpu0)
        result.update(postgres_backends=len(pg_cpu0), postgres_cpu_s=round(pg_used, 2))
    return result


def run_bare(args: argparse.Namespace, target: str) -> dict[str, Any]:
    """The bare client in its own process, pinned like the service; its JSON report."""
    command = [
        *pin(args.service_cores),
        sys.executable,
        BARE_CLIENT,
        *("--target", target, "--monitors", str(args.monitors)),
        *("--interval", str(args.interval), "--seconds", str(args.bare_seconds)),
        *("--warmup", str(args.bare_warmup)),
    ]
    emit("bare_started", command=shlex.join(command))
    # Its window, warm-up, start-up, and the 30 s timeout of requests still in flight.
    limit = args.bare_warmup + args.bare_seconds + 90
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=limit, check=False)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"the bare client did not finish within {limit:.0f} s") from exc
    for line in reversed(done.stdout.splitlines()):
        with contextlib.suppress(ValueError):
            report = json.loads(line)
            if isinstance(report, dict):
                return report
    raise RuntimeError(f"the bare client failed ({done.returncode}):\n{done.stderr[-2000:]}")


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {
        "db": args.db,
        "monitors": args.monitors,
        "interval_s": args.interval,
        "window_s": args.seconds,
        "service_cores": args.service_cores if TWO_CORES else None,
    }
    database = f"upwatch_bench_{uuid.uuid4().hex[:12]}" if args.db == "postgresql" else None
    with tempfile.TemporaryDirectory(prefix="upwatch-bench-") as tmp:
        tport = free_port()
        target = start_target(tport)
        target_url = f"http://127.0.0.1:{tport}"
        try:
            result.update(measure_service(args, Path(tmp), target_url, target.pid, database))
            emit("service", **result)
            # The service has stopped, so the two never compete for the pinned core(s).
            target_cpu0 = cpu_seconds(target.pid)
            bare = run_bare(args, target_url)
            bare_target_cpu = cpu_seconds(target.pid) - target_cpu0
        finally:
            target_requests = stop_target(target)
    emit("bare", **bare)
    result.update({f"bare_{k}": v for k, v in bare.items()})
    up_cpu, bare_cpu = result["cpu_s_per_1000_checks"], bare["cpu_s_per_1000"]
    result.update(
        bare_target_cpu_s=round(bare_target_cpu, 2),
        target_requests_total=target_requests,
        cpu_ratio=round(up_cpu / bare_cpu, 3) if up_cpu and bare_cpu else None,
    )
    for q in ("p50", "p90", "p99"):
        up, base = result[f"response_ms_{q}"], bare[f"response_ms_{q}"]
        both = up is not None and base is not None
        result[f"response_ms_{q}_diff"] = round(up - base, 4) if both else None
    return result


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def verdicts(result: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    """(target, measured, goal, met); met is None for a figure printed but not counted."""
    p99 = result["lateness_p99_s"]
    p99_le = result["lateness_p99_bucket_le"]
    ratio = result["cpu_ratio"]
    slope = result["rss_slope_mb_per_10_min"]
    cpu = result["cpu_s_per_1000_checks"]

    def within(q: str, limit: float) -> tuple[str, str, str, bool | None]:
        diff = result[f"response_ms_{q}_diff"]
        return (
            f"response {q} vs bare",
            "n/a"
            if diff is None
            else f"{diff:+.3f} ms ({result[f'response_ms_{q}']:.3f} vs "
            f"{result[f'bare_response_ms_{q}']:.3f})",
            f"within {limit:g} ms",
            diff is not None and abs(diff) <= limit,
        )

    per_check = result.get("bytes_per_check")
    return [
        (
            "disk per check",
            "n/a" if per_check is None else f"{per_check:.1f} B",
            f"<= {TARGET_BYTES_PER_CHECK_SQLITE:g} B on SQLite",
            (per_check is not None and per_check <= TARGET_BYTES_PER_CHECK_SQLITE)
            if result["db"] == "sqlite"
            else None,
        ),
        (
            "CPU Upwatch / bare",
            "n/a"
            if ratio is None
            else f"{ratio:.2f} ({cpu:.3f} / {result['bare_cpu_s_per_1000']:.3f} s)",
            f"<= {TARGET_CPU_RATIO:g}",
            ratio is not None and ratio <= TARGET_CPU_RATIO,
        ),
        within("p50", TARGET_P50_DIFF_MS),
        within("p90", TARGET_P90_DIFF_MS),
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
            "peak RSS (all processes)",
            f"{result['peak_rss_mb']:.1f} MB",
            f"< {TARGET_PEAK_RSS_MB:g} MB",
            result["peak_rss_mb"] < TARGET_PEAK_RSS_MB,
        ),
        (
            "RSS slope",
            "n/a" if slope is None else f"{slope:+.2f} MB per 10 min",
            f"< {TARGET_RSS_SLOPE_MB_PER_10_MIN:g} MB/10 min",
            (slope is not None and slope < TARGET_RSS_SLOPE_MB_PER_10_MIN)
            if result["window_s"] >= SLOPE_MIN_WINDOW_S
            else None,
        ),
        (
            "CPU per 1,000 checks",
            "n/a" if cpu is None else f"{cpu:.3f} s",
            f"(was <= {ABSOLUTE_CPU_PER_1000:g} s)",
            None,
        ),
    ]


def print_table(result: dict[str, Any], command: str) -> bool:
    print()
    print(f"command: {command}")
    cores = result["service_cores"]
    print(
        f"{result['monitors']} HTTP monitors every {result['interval_s']} s on {result['db']}, "
        f"window {result['window_s']} s after one interval of warm-up; "
        f"setup {result['setup_s']} s ({result['setup_per_second']}/s); "
        + (
            f"service and bare client on core(s) {cores}, target and driver on core 1"
            if cores
            else "not pinned"
        )
    )
    rows = [
        ("expected checks", f"{result['expected_checks']}"),
        ("rows in window", f"{result['rows_in_window']} ({result['rows_by_status']})"),
        ("checks run (metric)", f"{result['checks_run_metric']}"),
        ("results written / s", f"{result['results_per_second']}"),
        (
            "disk per check",
            f"{_fmt(result.get('bytes_per_check'))} B (check_results with its key, "
            f"{result.get('result_table_bytes')} B over {result.get('result_rows')} rows)",
        ),
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
            f"{result['service_cpu_s']} s ({result['service_cpu_pct']} % of a core), "
            f"up to {result['service_processes_max']} process(es)",
        ),
        (
            "CPU-s per 1,000 checks",
            f"service process {_fmt(result['parent_cpu_s_per_1000_checks'])}, "
            f"worker processes {_fmt(result['workers_cpu_s_per_1000_checks'])}",
        ),
        (
            "RSS start / peak / end",
            f"{result['rss_start_mb']} / {result['rss_sampled_peak_mb']} / "
            f"{result['rss_end_mb']} MB (all processes, {result['rss_samples']} samples)",
        ),
        (
            "RSS slope",
            f"{_fmt(result['rss_slope_mb_per_min'])} MB/min = "
            f"{_fmt(result['rss_slope_mb_per_10_min'])} MB per 10 min "
            f"(least squares, {result['rss_slope_points']} samples after "
            f"{result['rss_slope_warmup_s']:g} s)",
        ),
        (
            "VmHWM before / in window",
            f"{result['peak_rss_before_window_mb']} / {result['window_peak_rss_mb']} MB",
        ),
        (
            "load average (1/5/15 min)",
            f"service window {_load(result['loadavg_start'])} -> "
            f"{_load(result['loadavg_end'])}; bare window "
            f"{_load(result['bare_loadavg_start'])} -> {_load(result['bare_loadavg_end'])}",
        ),
        (
            "target CPU",
            f"{result['target_cpu_s']} s (service window), {result['bare_target_cpu_s']} s "
            f"(bare window), {result['target_requests_total']} requests",
        ),
    ]
    if not result["drained"]:
        rows.append(("drain", f"rows still missing after {result['drain_s']} s"))
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
    print(f"  {'Upwatch vs bare client':<28}{'Upwatch':<22}bare ({result['bare_loop']})")
    comparison = [
        (
            "CPU-s per 1,000",
            _fmt(result["cpu_s_per_1000_checks"]),
            _fmt(result["bare_cpu_s_per_1000"]),
            f"ratio {_fmt(result['cpu_ratio'])}",
        ),
        (
            "CPU-s in window",
            f"{result['service_cpu_s']}",
            f"{result['bare_cpu_s']}",
            f"bare window {result['bare_window_s']:g} s",
        ),
    ]
    for q in ("p50", "p90", "p99"):
        diff = result[f"response_ms_{q}_diff"]
        comparison.append(
            (
                f"response {q} (ms)",
                _fmt(result[f"response_ms_{q}"]),
                _fmt(result[f"bare_response_ms_{q}"]),
                "n/a" if diff is None else f"{diff:+.3f} ms",
            )
        )
    comparison += [
        (
            "lateness p50/p99/max (s)",
            f"{_fmt(result['lateness_p50_s'])}/{_fmt(result['lateness_p99_s'])}/"
            f"<={_fmt(result['lateness_max_bucket_le'])}",
            f"{_fmt(result['bare_lateness_p50_s'])}/{_fmt(result['bare_lateness_p99_s'])}/"
            f"{_fmt(result['bare_lateness_max_s'])}",
            "",
        ),
        (
            "completed",
            f"{result['rows_in_window']} ({result['completion_pct']} %)",
            f"{result['bare_completed']} ({result['bare_completion_pct']} %)",
            f"of {result['expected_checks']} / {result['bare_expected']}",
        ),
    ]
    for label, upwatch, bare, note in comparison:
        print(f"  {label:<28}{upwatch:<22}{bare:<22}{note}".rstrip())
    if result["bare_failures"]:
        print(f"  {'bare client failures':<28}{result['bare_failures']}")

    print()
    print(f"  {'target':<26}{'measured':<40}{'goal':<20}verdict")
    met = True
    for label, value, goal, ok in verdicts(result):
        if ok is None:
            verdict = "info"
            if label == "RSS slope":
                verdict = f"info (window < {SLOPE_MIN_WINDOW_S // 60} min)"
        else:
            met &= ok
            verdict = "PASS" if ok else "MISS"
        print(f"  {label:<26}{value:<40}{goal:<20}{verdict}")
    return met


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _load(values: list[float] | None) -> str:
    return "n/a" if not values else " ".join(f"{v:.2f}" for v in values)


def cores_list(text: str) -> str:
    """``--service-cores``: a list taskset takes (0 or 0,1), of cores this machine has."""
    try:
        cores = {int(c) for c in text.split(",")}
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of cores: {text}") from None
    if not cores <= os.sched_getaffinity(0):
        raise argparse.ArgumentTypeError(f"cores {sorted(cores)} are not all available")
    return ",".join(str(c) for c in sorted(cores))


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
        "--drain",
        type=float,
        default=30,
        help="at most this many seconds for the ingester to store the window's checks",
    )
    parser.add_argument(
        "--service-cores",
        type=cores_list,
        default="0",
        help="cores of the service and the bare client (0,1 lets worker processes spread)",
    )
    parser.add_argument(
        "--bare-seconds", type=float, help="window of the bare client (default: --seconds)"
    )
    parser.add_argument(
        "--bare-warmup", type=float, default=5, help="seconds the bare client runs unmeasured"
    )
    parser.add_argument(
        "--warmup-seconds",
        type=float,
        help="samples left out of the RSS slope (default: the first 20 %% of the window)",
    )
    parser.add_argument(
        "--sample-seconds", type=float, default=5, help="RSS of all service processes every"
    )
    args = parser.parse_args()
    if args.bare_seconds is None:
        args.bare_seconds = args.seconds
    command = shlex.join([sys.executable, *sys.argv])
    if TWO_CORES:
        os.sched_setaffinity(0, {1})  # this driver stays off the service's (default) core
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
