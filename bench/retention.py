"""Data retention under load, and the reads it serves (issue 14).

Two phases, each against the real service (``upwatch serve``, SQLite or PostgreSQL) in a
fresh database:

1. Purge under load (``--phase purge``). A plans file keeps the free plan at
   ``retentionDays = 30`` (monitors, API calls and check frequency without limits). The
   service starts once without the retention role, to create the bench account and
   ``--monitors`` HTTP monitors through the API (pointing at a local target process, as
   ``bench/checks.py`` does), and stops. Then, with bulk inserts on the stopped database
   (SQLite: ``executemany`` in large transactions through the stdlib; PostgreSQL: asyncpg's
   COPY, then ``VACUUM ANALYZE`` as autovacuum would), it seeds ``--rows`` expired check
   results (checked 31 to 31 + ``--expired-days`` days ago, report ids ``x...``) and
   ``--retained`` results of the last 29 days (report ids ``k...``), spread evenly over the
   monitors, oldest first, with their ``daily_aggregates`` rows. The service starts again
   with the retention role (``UPWATCH_RETENTION_POLL_SECONDS=2``) and the engine checking
   ``--rate`` checks a second (interval = monitors / rate). After ``--warmup`` seconds
   (default two intervals) and the role's first pass over the account (``retention_runs.
   done_day`` is today), lateness is measured for ``--baseline`` seconds without a purge;
   then one due ``retention_notifications`` row is inserted for ``check_results`` (expiry a
   minute ago, cutoff now - 30 days) and the owner's ``done_day`` reset to NULL in the same
   transaction, so the role's next poll purges. Measured by polling ``/metrics`` every
   ``--poll`` seconds: wall time from the last scrape before the first purged row to the
   scrape that shows the last one (``upwatch_retention_rows_purged_total{data_type=
   "check_results"}``), the purge rate (and its pace in the first and last 10 s), schedule
   lateness p50/p99/max from the ``upwatch_check_lateness_seconds`` histogram between those
   two scrapes (bucket resolution; also per 10 s slice), CPU of the service (and of
   PostgreSQL's backends); checks stored in the whole intervals from the purge's start
   against monitors x intervals. After it, with the service stopped: expired rows left
   (target 0), seeded retained rows left (target: all ``--retained``; the retained window
   must hold exactly those and the engine's rows) and, on PostgreSQL, the server's
   autovacuum setting and the dead rows left in ``check_results``. Target: lateness p99
   < 1 s during the purge. The seeded results have no ``check_timings`` rows.
2. Read latency (``--phase reads``). An account on the pro plan (``POST
   /subscriptions/upgrade``) with 250 paused HTTP monitors (created through the API), 365 days
   of ``daily_aggregates`` for each (inserted directly), eight pending notices (four data
   types, the next two Mondays, retention 365 days) and a retention run done today over that
   data (``done_day`` reset once after the inserts, so ``usage.storage`` is read as in steady
   state). After ``--read-warmup`` requests each, ``--read-requests`` sequential requests
   alternate between ``GET /retention/notifications`` and ``GET /subscriptions/current``
   (one keep-alive httpx client, bearer token); p50/p99/max of each. Target: p99 < 20 ms.

The service runs on ``--service-cores`` (default 0,1), the target and this driver on core 1
(PostgreSQL is not pinned). The service's output goes to ``--log-dir`` (default: the run's
temporary directory) and is searched for "database is locked", warnings and tracebacks.
Prints JSON lines, then a table; exits 1 when the run failed and 2 when a target was missed.

    .venv/bin/python bench/retention.py [--db sqlite|postgresql] [--phase purge|reads|both]
                                        [--rows 10000000] [--retained 1000000] [--rate 500]
                                        [--monitors RATE x 10] [--read-requests 2000]
                                        [--service-cores 0,1] [--log-dir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

# Shared with the engine benchmark: the target server, /metrics and histogram helpers,
# /proc readings, PostgreSQL administration.
sys.path.insert(0, str(Path(__file__).resolve().parent))
import checks

RETENTION_DAYS = 30
READ_MONITORS = 250
READ_DAYS = 365
PRO_RETENTION_DAYS = 365
EXPIRED = "x"  # report_id prefixes of the seeded rows: never a hex digit, unlike the engine's
KEPT = "k"
DATA_TYPES = ("check_results", "monitoring_data", "alert_history", "incident_data")
PURGED = "upwatch_retention_rows_purged_total"
CHECKS = "upwatch_checks_total"
TARGET_P99_LATENESS_S = 1.0
TARGET_READ_P99_MS = 20.0
CHECK_RESULT_BYTES = 140  # repository.CHECK_RESULT_BYTES, for the notice's sizeBytes
DOWN_MESSAGE = "unexpected status code 503"
RESULT_COLUMNS = (
    "monitor_id",
    "report_id",
    "region_id",
    "status",
    "status_code",
    "response_time_ms",
    "error_kind",
    "error",
    "checked_at",
)
AGGREGATE_COLUMNS = (
    "monitor_id",
    "region_id",
    "day",
    "total",
    "up",
    "down",
    "degraded",
    "response_ms_sum",
    "response_count",
    "response_ms_min",
    "response_ms_max",
)
# Logged by every run of a service without SMTP: not counted as warnings.
BENIGN = ("SMTP is not configured",)
emit = checks.emit


def today() -> str:
    return datetime.now(UTC).date().isoformat()


# --- the database, seen from outside the service ----------------------------------------------


@dataclass
class Store:
    """The run's database: a SQLite file or a PostgreSQL database. Queries use ``?``."""

    sqlite_path: Path | None = None
    pg_database: str | None = None

    @property
    def url(self) -> str | None:
        if self.pg_database is None:
            return None
        return checks.PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{self.pg_database}"

    def stamp(self, moment: datetime) -> Any:
        """A UTC moment as the column holds it (SQLite: naive text, as SQLAlchemy writes)."""
        if self.sqlite_path is not None:
            return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        return moment

    def fetch(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        if self.sqlite_path is not None:
            connection = sqlite3.connect(self.sqlite_path, timeout=30)
            try:
                return list(connection.execute(query, args).fetchall())
            finally:
                connection.close()
        assert self.pg_database is not None
        records = asyncio.run(checks.pg_fetch(self.pg_database, _dollars(query), *args))
        return [tuple(r) for r in records]

    def scalar(self, query: str, *args: Any) -> Any:
        rows = self.fetch(query, *args)
        return rows[0][0] if rows else None

    def write(self, statements: list[tuple[str, list[tuple[Any, ...]]]]) -> None:
        """Each statement with its rows (executemany), all in one transaction; on SQLite it
        takes the write lock up front, as the service's writers do."""
        if self.sqlite_path is not None:
            connection = sqlite3.connect(self.sqlite_path, timeout=30, isolation_level=None)
            try:
                connection.execute("BEGIN IMMEDIATE")
                for query, rows in statements:
                    connection.executemany(query, rows)
                connection.execute("COMMIT")
            finally:
                connection.close()
            return
        asyncio.run(self._pg_write(statements))

    async def _pg_write(self, statements: list[tuple[str, list[tuple[Any, ...]]]]) -> None:
        import asyncpg  # type: ignore[import-untyped]

        connection = await asyncpg.connect(self.url, timeout=10)
        try:
            async with connection.transaction():
                for query, rows in statements:
                    await connection.executemany(_dollars(query), rows)
        finally:
            await connection.close()


def _dollars(query: str) -> str:
    """``?`` placeholders as asyncpg's ``$1, $2, ...``."""
    numbers = itertools.count(1)
    return re.sub(r"\?", lambda _: f"${next(numbers)}", query)


INSERTS = {
    "check_results": "INSERT INTO check_results (monitor_id, report_id, region_id, status, "
    "status_code, response_time_ms, error_kind, error, checked_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "daily_aggregates": "INSERT INTO daily_aggregates (monitor_id, region_id, day, total, up, "
    "down, degraded, response_ms_sum, response_count, response_ms_min, response_ms_max) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "retention_notifications": "INSERT INTO retention_notifications (id, user_id, data_type, "
    "expiry_date, cutoff, retention_days, count, size_bytes, earlier_attempts, created_at, "
    "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
}


def chunks(rows: Iterable[tuple[Any, ...]], size: int) -> Iterator[list[tuple[Any, ...]]]:
    iterator = iter(rows)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def bulk_insert(
    store: Store, table: str, columns: tuple[str, ...], rows: Iterable[tuple[Any, ...]]
) -> int:
    """Rows into a table of the stopped service's database, fast; how many. SQLite: one
    connection, transactions of 200,000 rows, no fsync (a seed, not data to keep safe);
    PostgreSQL: COPY in chunks of 200,000 rows."""
    started = last = time.monotonic()
    done = 0

    def progress() -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= 10:
            last = now
            emit("seed_progress", table=table, rows=done, per_second=round(done / (now - started)))

    if store.sqlite_path is not None:
        connection = sqlite3.connect(store.sqlite_path, isolation_level=None)
        try:
            connection.execute("PRAGMA synchronous=OFF")
            connection.execute("PRAGMA cache_size=-1048576")  # 1 GiB
            query = INSERTS[table]
            for chunk in chunks(rows, 200_000):
                connection.execute("BEGIN")
                connection.executemany(query, chunk)
                connection.execute("COMMIT")
                done += len(chunk)
                progress()
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            connection.close()
        return done

    async def copy() -> None:
        nonlocal done
        import asyncpg

        connection = await asyncpg.connect(store.url, timeout=10)
        try:
            for chunk in chunks(rows, 200_000):
                await connection.copy_records_to_table(table, records=chunk, columns=columns)
                done += len(chunk)
                progress()
        finally:
            await connection.close()

    asyncio.run(copy())
    return done


def pg_maintain(store: Store, tables: tuple[str, ...]) -> float:
    """VACUUM ANALYZE after the seed, as autovacuum would before the data is a month old."""

    async def run() -> None:
        import asyncpg

        connection = await asyncpg.connect(store.url, timeout=10)
        try:
            await connection.execute("VACUUM ANALYZE " + ", ".join(tables))
        finally:
            await connection.close()

    started = time.monotonic()
    asyncio.run(run())
    return time.monotonic() - started


# --- seeded data ----------------------------------------------------------------------------


@dataclass
class Seed:
    """What the seed wrote, and the day aggregates of its rows as it goes."""

    monitor_ids: list[str]
    region_id: str
    text_timestamps: bool
    aggregates: dict[tuple[int, int], list[float]] = field(default_factory=dict)

    def results(
        self, prefix: str, count: int, start: float, end: float
    ) -> Iterator[tuple[Any, ...]]:
        """``count`` results evenly over [start, end) (epoch seconds), oldest first, the
        monitors in turn; one in a hundred down (503)."""
        step = (end - start) / count
        monitors = self.monitor_ids
        n_monitors = len(monitors)
        aggregates = self.aggregates
        region = self.region_id
        as_text = self.text_timestamps
        for i in range(count):
            at = start + (i + 0.5) * step
            m = i % n_monitors
            down = i % 100 == 37
            ms = 20.0 + (i * 7919 % 4000) / 10
            moment = datetime.fromtimestamp(at, UTC)
            key = (m, int(at // 86400))
            day = aggregates.get(key)
            if day is None:
                day = aggregates[key] = [0, 0, 0, 0.0, ms, ms]
            day[0] += 1
            day[2 if down else 1] += 1
            day[3] += ms
            day[4] = min(day[4], ms)
            day[5] = max(day[5], ms)
            yield (
                monitors[m],
                f"{prefix}{i:031x}",
                region,
                "down" if down else "up",
                503 if down else 200,
                ms,
                "status_code" if down else None,
                DOWN_MESSAGE if down else None,
                moment.strftime("%Y-%m-%d %H:%M:%S.%f") if as_text else moment,
            )

    def aggregate_records(self) -> Iterator[tuple[Any, ...]]:
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        for (m, day_number), (total, up, down, ms_sum, low, high) in sorted(
            self.aggregates.items()
        ):
            day = (epoch + timedelta(days=day_number)).date().isoformat()
            yield (
                self.monitor_ids[m],
                self.region_id,
                day,
                int(total),
                int(up),
                int(down),
                0,
                float(ms_sum),
                int(total),
                float(low),
                float(high),
            )


# --- the service ------------------------------------------------------------------------------


def write_plans(workdir: Path) -> Path:
    plans = workdir / "plans.toml"
    plans.write_text(
        "[plans.free]\n"
        f"retentionDays = {RETENTION_DAYS}\n"
        'monitorCount = "unlimited"\n'
        "checkFrequencyMinutes = 0\n"
        'apiCallsPerDay = "unlimited"\n'
    )
    return plans


def start_service(
    workdir: Path,
    store: Store,
    pinning: list[str],
    log_path: Path,
    extra: dict[str, str],
    ready_within: float = 300,
) -> tuple[subprocess.Popen[bytes], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UPWATCH_")}
    env.update(
        UPWATCH_DATA_DIR=str(workdir / "data"),
        UPWATCH_ALLOW_PRIVATE_TARGETS="true",
        UPWATCH_TARGETS_LOOPBACK_ONLY="true",
        UPWATCH_API_METERING="false",
        UPWATCH_METRICS_PUBLIC="true",  # scraped without a token
        **extra,
    )
    if store.url:
        env["UPWATCH_DATABASE_URL"] = store.url
    port = checks.free_port()
    with log_path.open("ab") as log:
        log.write(f"--- upwatch serve, {json.dumps(extra)}\n".encode())
        log.flush()
        process = subprocess.Popen(
            [*pinning, checks.UPWATCH, "serve", "--port", str(port), "--log-level", "warning"],
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + ready_within
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return process, url
        time.sleep(0.2)
    process.kill()
    process.wait(timeout=10)
    raise RuntimeError(f"the service did not start:\n{checks.log_tail(log_path)}")


def alive(process: subprocess.Popen[bytes], log_path: Path) -> None:
    checks.wait_service_alive(process, log_path)


def wait_for(
    what: str,
    condition: Any,
    limit: float,
    process: subprocess.Popen[bytes],
    log_path: Path,
    every: float = 0.5,
) -> float:
    """Poll ``condition()`` until true (a busy database only means "not yet"); its wait."""
    started = time.monotonic()
    while True:
        alive(process, log_path)
        with contextlib.suppress(sqlite3.OperationalError, OSError):
            if condition():
                return time.monotonic() - started
        if time.monotonic() - started > limit:
            raise RuntimeError(f"{what}: not within {limit:.0f} s\n{checks.log_tail(log_path)}")
        time.sleep(every)


def run_done(store: Store, user_id: str) -> bool:
    """The owner's retention run for today is finished and nobody holds it."""
    rows = store.fetch(
        "SELECT done_day, claim FROM retention_runs WHERE user_id = ?",
        user_id,
    )
    return bool(rows) and rows[0][0] == today() and rows[0][1] is None


def log_findings(log_path: Path) -> dict[str, Any]:
    """What the service logged that matters here: locks, warnings, errors, tracebacks."""
    text = log_path.read_text(errors="replace") if log_path.exists() else ""
    lines = text.splitlines()
    lower = [line.lower() for line in lines]
    notable: list[str] = []
    benign = 0
    for line, low in zip(lines, lower, strict=True):
        if any(b in line for b in BENIGN):
            benign += 1
        elif any(w in low for w in ("warning", "error", "locked", "traceback")):
            short = line[:240]
            if short not in notable:
                notable.append(short)
    return {
        "log": str(log_path),
        "lines": len(lines),
        "database_is_locked": sum("database is locked" in low for low in lower),
        "busy": sum("busy" in low for low in lower),
        "warnings": sum("warning" in low for low in lower) - benign,
        "benign_warnings": benign,
        "errors": sum(" error" in low or low.startswith("error") for low in lower),
        "tracebacks": sum("traceback" in low for low in lower),
        "first_notable": notable[:8],
    }


# --- phase 1: purge under load ----------------------------------------------------------------


def purge_phase(args: argparse.Namespace, workdir: Path, log_path: Path) -> dict[str, Any]:
    result: dict[str, Any] = {
        "rows": args.rows,
        "retained": args.retained,
        "monitors": args.monitors,
        "interval_s": args.interval,
        "rate": args.monitors / args.interval,
    }
    store = make_store(args, workdir)
    plans = write_plans(workdir)
    common = {"UPWATCH_PLANS_FILE": str(plans)}
    target = service = None
    try:
        tport = checks.free_port()
        target = checks.start_target(tport)
        target_url = f"http://127.0.0.1:{tport}"
        # 1. The account and its monitors, through the API; no retention yet.
        service, url = start_service(
            workdir, store, pin(args), log_path, {**common, "UPWATCH_RETENTION": "false"}
        )
        setup = asyncio.run(
            checks.create_monitors(
                url, target_url, args.monitors, args.interval, 16, args.setup_timeout
            )
        )
        result.update(setup_s=round(setup.seconds, 1), created=setup.created)
        emit("setup", seconds=round(setup.seconds, 1), created=setup.created, failed=setup.failed)
        if setup.created != args.monitors:
            raise RuntimeError(f"{setup.failed} monitors not created: {setup.first_error}")
        checks.stop_service(service)
        service = None

        # 2. The seed, on the stopped database.
        user_id = store.scalar("SELECT id FROM users WHERE email = ?", "bench@example.com")
        monitor_ids = owned_monitors(store, user_id)
        region_id = store.scalar("SELECT id FROM regions WHERE code = 'local'")
        if not (user_id and region_id and len(monitor_ids) == args.monitors):
            raise RuntimeError("the account, its monitors or region 'local' are missing")
        seeded_at = time.time()
        day = 86400.0
        midnight = seeded_at - seeded_at % day
        seed = Seed(monitor_ids, region_id, text_timestamps=store.sqlite_path is not None)
        expired_span = (seeded_at - (31 + args.expired_days) * day, seeded_at - 31 * day)
        kept_span = (seeded_at - 29 * day, min(midnight, seeded_at - 3600))
        started = time.monotonic()
        written = bulk_insert(
            store,
            "check_results",
            RESULT_COLUMNS,
            itertools.chain(
                seed.results(EXPIRED, args.rows, *expired_span),
                seed.results(KEPT, args.retained, *kept_span),
            ),
        )
        results_s = time.monotonic() - started
        aggregates = bulk_insert(
            store, "daily_aggregates", AGGREGATE_COLUMNS, seed.aggregate_records()
        )
        seed_s = time.monotonic() - started
        vacuum_s = (
            pg_maintain(store, ("check_results", "daily_aggregates")) if store.pg_database else 0
        )
        result.update(
            seed_rows=written,
            seed_aggregates=aggregates,
            seed_s=round(seed_s, 1),
            seed_rows_per_s=round(written / results_s),
            vacuum_analyze_s=round(vacuum_s, 1),
        )
        emit(
            "seeded",
            rows=written,
            aggregates=aggregates,
            seconds=round(seed_s, 1),
            rows_per_second=round(written / results_s),
            vacuum_analyze_s=round(vacuum_s, 1),
            expired_from=_iso(expired_span[0]),
            expired_to=_iso(expired_span[1]),
            kept_from=_iso(kept_span[0]),
            kept_to=_iso(kept_span[1]),
        )

        # 3. The service with the engine and the retention role.
        extra = {
            **common,
            "UPWATCH_RETENTION": "true",
            "UPWATCH_RETENTION_POLL_SECONDS": str(args.retention_poll),
        }
        if args.batch_rows:
            extra["UPWATCH_RETENTION_BATCH_ROWS"] = str(args.batch_rows)
        if args.batch_pause is not None:
            extra["UPWATCH_RETENTION_BATCH_PAUSE_SECONDS"] = str(args.batch_pause)
        service_started = time.time()
        service, url = start_service(workdir, store, pin(args), log_path, extra)
        ready_s = time.time() - service_started
        emit("started", service_pid=service.pid, url=url, ready_s=round(ready_s, 1))
        # The role's first pass (nothing due yet: it announces next Monday's batch) and
        # the warm-up, so the schedule runs at its steady rate.
        first_pass_s = wait_for(
            "the retention role's first pass",
            lambda: run_done(store, user_id),
            args.first_pass_timeout,
            service,
            log_path,
        )
        emit("first_pass_done", seconds_after_ready=round(first_pass_s, 1))
        warm_until = service_started + ready_s + args.warmup
        while time.time() < warm_until:
            alive(service, log_path)
            time.sleep(min(1.0, max(0.0, warm_until - time.time())))
        result.update(ready_s=round(ready_s, 1), first_pass_s=round(first_pass_s, 1))

        result.update(measure_purge(args, store, service, url, log_path, user_id))
        result["service_started_at"] = service_started
        drain_purge(args, store, service, url, log_path, result)
        checks.stop_service(service)
        service = None
        result.update(final_counts(args, store, result))
        if store.pg_database:
            result.update(pg_figures(store))
    finally:
        if service is not None:
            checks.stop_service(service)
        if target is not None:
            checks.stop_target(target)
        drop_store(args, store)
    result["log"] = log_findings(log_path)
    return result


def measure_purge(
    args: argparse.Namespace,
    store: Store,
    service: subprocess.Popen[bytes],
    url: str,
    log_path: Path,
    user_id: str,
) -> dict[str, Any]:
    """Insert the due notice, then follow the purge on /metrics until its last row."""
    tree = checks.process_tree(service.pid)
    pg_pids = checks.pg_backend_pids(store.pg_database) if store.pg_database else []
    # The same service without a purge, just before: what the purge adds to lateness.
    quiet = checks.scrape(url)
    quiet_t = time.time()
    quiet_cpu = checks.tree_cpu_seconds(tree)
    while time.time() < quiet_t + args.baseline:
        alive(service, log_path)
        time.sleep(min(1.0, max(0.0, quiet_t + args.baseline - time.time())))
    now = datetime.now(UTC)
    cutoff = now - timedelta(days=RETENTION_DAYS)
    notice = (
        uuid.uuid4().hex,
        user_id,
        "check_results",
        store.stamp(now - timedelta(minutes=1)),
        store.stamp(cutoff),
        RETENTION_DAYS,
        args.rows,
        # As the job measures: a fixed size per row plus the error texts (one row in 100).
        args.rows * CHECK_RESULT_BYTES + len(range(37, args.rows, 100)) * len(DOWN_MESSAGE),
        0,
        store.stamp(now),
        store.stamp(now),
    )
    before = checks.scrape(url)
    base = checks.family_sum(before, PURGED, 'data_type="check_results"')
    prev_m, prev_t = before, time.time()
    prev_cpu, prev_pg = checks.tree_cpu_seconds(tree), checks.cpu_of(pg_pids)
    quiet_buckets = checks.lateness_buckets(quiet, before)
    quiet_p50 = checks.bucket_quantile(quiet_buckets, 0.50)
    quiet_p99 = checks.bucket_quantile(quiet_buckets, 0.99)
    baseline = {
        "baseline_s": round(prev_t - quiet_t, 1),
        "baseline_lateness_p50_s": round(quiet_p50[0], 4) if quiet_p50 else None,
        "baseline_lateness_p99_s": round(quiet_p99[0], 4) if quiet_p99 else None,
        "baseline_lateness_max_bucket_le": checks.bucket_max(quiet_buckets),
        "baseline_checks_per_s": round(
            (checks.family_sum(before, CHECKS) - checks.family_sum(quiet, CHECKS))
            / (prev_t - quiet_t),
            1,
        ),
        "baseline_service_cpu_pct": round((prev_cpu - quiet_cpu) / (prev_t - quiet_t) * 100, 1),
    }
    emit("baseline", **baseline)
    store.write(
        [
            (INSERTS["retention_notifications"], [notice]),
            ("UPDATE retention_runs SET done_day = NULL WHERE user_id = ?", [(user_id,)]),
        ]
    )
    inserted_t = time.time()
    emit("notice_inserted", cutoff=cutoff.isoformat(), due_rows=args.rows)

    start_m = start_t = first_t = None
    start_cpu = 0.0
    start_pg: dict[int, float] = {}
    end_m = end_t = None
    last_change_t, last_value = inserted_t, 0.0
    report_m, report_t = before, inserted_t
    slices: list[dict[str, Any]] = []
    tick = 0
    deadline = inserted_t + args.purge_timeout
    while True:
        tick += 1
        checks.pause_until(inserted_t + tick * args.poll)
        alive(service, log_path)
        sample = checks.scrape(url)
        t = time.time()
        purged = checks.family_sum(sample, PURGED, 'data_type="check_results"') - base
        if start_m is None and purged > 0:
            start_m, start_t, first_t = prev_m, prev_t, t
            start_cpu, start_pg = prev_cpu, prev_pg
            report_m, report_t = prev_m, prev_t  # slices start with the purge
            slices.clear()
            emit("purge_started", after_notice_s=round(t - inserted_t, 2))
        if purged != last_value:
            last_change_t, last_value = t, purged
        if start_m is not None and purged >= args.rows:
            end_m, end_t = sample, t
            break
        if t - report_t >= 10:
            slices.append(slice_figures(report_m, sample, report_t, t))
            emit("purge_progress", t_s=round(t - inserted_t, 1), purged=int(purged), **slices[-1])
            report_m, report_t = sample, t
        if t - last_change_t >= 30:
            # No progress for 30 s: finished short of the seed (notice marked purged) or stuck.
            purged_at = store.scalar(
                "SELECT purged_at FROM retention_notifications WHERE id = ?", notice[0]
            )
            if purged_at is not None or (start_m is None and t - inserted_t > 300):
                end_m, end_t = sample, t
                if start_m is None:
                    raise RuntimeError(
                        f"the purge did not start within {t - inserted_t:.0f} s "
                        f"(notice purged_at {purged_at})\n{checks.log_tail(log_path)}"
                    )
                emit("purge_stopped_short", purged=int(purged), expected=args.rows)
                break
        if t > deadline:
            raise RuntimeError(f"the purge did not finish within {args.purge_timeout:.0f} s")
        prev_m, prev_t = sample, t
        prev_cpu, prev_pg = checks.tree_cpu_seconds(tree), checks.cpu_of(pg_pids)
    end_cpu, end_pg = checks.tree_cpu_seconds(tree), checks.cpu_of(pg_pids)
    assert start_m is not None
    assert start_t is not None
    assert first_t is not None
    slices.append(slice_figures(report_m, end_m, report_t, end_t))

    seconds = end_t - start_t
    purged = checks.family_sum(end_m, PURGED, 'data_type="check_results"') - base
    buckets = checks.lateness_buckets(start_m, end_m)
    p50 = checks.bucket_quantile(buckets, 0.50)
    p99 = checks.bucket_quantile(buckets, 0.99)
    late_n = buckets[-1][1] if buckets else 0
    checks_metric = checks.family_sum(end_m, CHECKS) - checks.family_sum(start_m, CHECKS)
    pg_used = sum(end_pg[p] - start_pg[p] for p in end_pg if p in start_pg)
    worst = max(
        (s for s in slices if s["lateness_p99_s"] is not None),
        key=lambda s: s["lateness_p99_s"],
        default=None,
    )
    return {
        **baseline,
        "cutoff": cutoff.isoformat(),
        "notice_id": notice[0],
        "purge_start_after_notice_s": round(first_t - inserted_t, 2),
        "purge_s": round(seconds, 2),
        "purge_s_lower_bound": round(end_t - first_t, 2),
        "purged_metric": int(purged),
        "purge_rows_per_s": round(purged / seconds) if seconds > 0 else None,
        "window_start": start_t,
        "window_end": end_t,
        # Checks are counted over whole intervals from the purge's start (each monitor once
        # an interval), covering the purge: a short purge's window meets the schedule's
        # uneven phases otherwise.
        "intervals": max(1, math.ceil(seconds / args.interval)),
        "checks_total_at_end": checks.family_sum(end_m, CHECKS),
        "checks_run_metric": int(checks_metric),
        "lateness_observations": int(late_n),
        "lateness_p50_s": round(p50[0], 4) if p50 else None,
        "lateness_p50_bucket_le": p50[1] if p50 else None,
        "lateness_p99_s": round(p99[0], 4) if p99 else None,
        "lateness_p99_bucket_le": p99[1] if p99 else None,
        "lateness_max_bucket_le": checks.bucket_max(buckets),
        "lateness_buckets": {str(le): int(c) for le, c in buckets},
        "worst_10s_lateness_p99_s": worst["lateness_p99_s"] if worst else None,
        # The purge's pace at its start and at its end (10 s slices; the last may be short).
        "purge_rows_per_s_first_slice": slices[0]["purged_per_s"],
        "purge_rows_per_s_last_full_slice": (slices[-2] if len(slices) > 1 else slices[-1])[
            "purged_per_s"
        ],
        "service_cpu_pct": round((end_cpu - start_cpu) / seconds * 100, 1) if seconds else None,
        "postgres_cpu_pct": round(pg_used / seconds * 100, 1) if pg_pids and seconds else None,
    }


def slice_figures(
    before: dict[str, float], after: dict[str, float], t0: float, t1: float
) -> dict[str, Any]:
    """Rates and lateness between two scrapes (the progress lines)."""
    span = max(t1 - t0, 1e-9)
    p99 = checks.bucket_quantile(checks.lateness_buckets(before, after), 0.99)
    purged = checks.family_sum(after, PURGED, 'data_type="check_results"') - checks.family_sum(
        before, PURGED, 'data_type="check_results"'
    )
    ran = checks.family_sum(after, CHECKS) - checks.family_sum(before, CHECKS)
    return {
        "slice_s": round(span, 1),
        "purged_per_s": round(purged / span),
        "checks_per_s": round(ran / span, 1),
        "lateness_p99_s": round(p99[0], 4) if p99 else None,
    }


def drain_purge(
    args: argparse.Namespace,
    store: Store,
    service: subprocess.Popen[bytes],
    url: str,
    log_path: Path,
    result: dict[str, Any],
) -> None:
    """After the purge: the role's pass finishes (notice purged, run done); the intervals
    counted for completion end, and the ingester stores every check counted by then."""
    result["pass_done_after_purge_s"] = round(
        wait_for(
            "the purging pass to finish",
            lambda: (
                run_done(store, result_user(store))
                and store.scalar(
                    "SELECT purged_at FROM retention_notifications WHERE id = ?",
                    result["notice_id"],
                )
                is not None
            ),
            args.first_pass_timeout,
            service,
            log_path,
        ),
        2,
    )
    counted_until = result["window_start"] + result["intervals"] * args.interval
    while time.time() < counted_until:
        alive(service, log_path)
        time.sleep(min(1.0, max(0.0, counted_until - time.time())))
    wanted = checks.family_sum(checks.scrape(url), CHECKS)
    since = store.stamp(datetime.fromtimestamp(result["service_started_at"], UTC))
    try:
        result["drain_s"] = round(
            wait_for(
                "the ingester to store the checks counted",
                lambda: (
                    store.scalar("SELECT count(*) FROM check_results WHERE checked_at >= ?", since)
                    >= wanted
                ),
                args.drain,
                service,
                log_path,
                every=0.25,
            ),
            2,
        )
        result["drained"] = True
    except RuntimeError:
        result["drained"] = False


def pg_figures(store: Store) -> dict[str, Any]:
    """What decides how PostgreSQL copes with mass deletes: autovacuum, and the dead rows
    the purge left in check_results."""
    settings = dict(
        store.fetch(
            "SELECT name, setting FROM pg_settings WHERE name IN "
            "('autovacuum', 'shared_buffers', 'autovacuum_vacuum_scale_factor')"
        )
    )
    dead, vacuums = store.fetch(
        "SELECT n_dead_tup, autovacuum_count FROM pg_stat_user_tables "
        "WHERE relname = 'check_results'"
    )[0]
    return {
        "pg_autovacuum": settings.get("autovacuum"),
        "pg_autovacuum_vacuum_scale_factor": settings.get("autovacuum_vacuum_scale_factor"),
        "pg_shared_buffers_8k": settings.get("shared_buffers"),
        "pg_dead_rows_after": int(dead),
        "pg_autovacuums_of_check_results": int(vacuums),
    }


def result_user(store: Store) -> str:
    return str(store.scalar("SELECT id FROM users WHERE email = ?", "bench@example.com"))


def final_counts(args: argparse.Namespace, store: Store, result: dict[str, Any]) -> dict[str, Any]:
    """With the service stopped: what the purge left, and the checks of its window."""
    cutoff = store.stamp(datetime.fromisoformat(result["cutoff"]))
    start = store.stamp(datetime.fromtimestamp(result["window_start"], UTC))
    end = store.stamp(datetime.fromtimestamp(result["window_end"], UTC))
    expired_left = store.scalar("SELECT count(*) FROM check_results WHERE checked_at < ?", cutoff)
    seeded_expired_left = store.scalar(
        "SELECT count(*) FROM check_results WHERE report_id LIKE 'x%'"
    )
    kept = store.scalar("SELECT count(*) FROM check_results WHERE report_id LIKE 'k%'")
    window_rows = store.scalar("SELECT count(*) FROM check_results WHERE checked_at >= ?", cutoff)
    engine_rows = store.scalar(
        "SELECT count(*) FROM check_results WHERE report_id NOT LIKE 'k%' "
        "AND report_id NOT LIKE 'x%'"
    )
    in_purge = store.scalar(
        "SELECT count(*) FROM check_results WHERE checked_at >= ? AND checked_at < ?", start, end
    )
    counted_until = result["window_start"] + result["intervals"] * args.interval
    counted = store.scalar(
        "SELECT count(*) FROM check_results WHERE checked_at >= ? AND checked_at < ?",
        start,
        store.stamp(datetime.fromtimestamp(counted_until, UTC)),
    )
    expected = args.monitors * result["intervals"]
    return {
        "expired_left": int(expired_left),
        "seeded_expired_left": int(seeded_expired_left),
        "seeded_retained_left": int(kept),
        "retained_window_rows": int(window_rows),
        "engine_rows": int(engine_rows),
        "retained_window_consistent": int(window_rows) == int(kept) + int(engine_rows),
        "checks_in_purge_window": int(in_purge),
        "checks_counted_s": result["intervals"] * args.interval,
        "checks_counted": int(counted),
        "checks_expected": expected,
        "checks_completion_pct": round(counted / expected * 100, 2),
    }


# --- phase 2: read latency --------------------------------------------------------------------


def owned_monitors(store: Store, user_id: str) -> list[str]:
    """Ids of ``user_id``'s monitors, in order."""
    return [
        r[0]
        for r in store.fetch(
            "SELECT m.id FROM monitors m JOIN projects p ON p.id = m.project_id "
            "WHERE p.owner_id = ? ORDER BY m.id",
            user_id,
        )
    ]


def reads_phase(args: argparse.Namespace, workdir: Path, log_path: Path) -> dict[str, Any]:
    result: dict[str, Any] = {"read_monitors": READ_MONITORS, "read_days": READ_DAYS}
    store = make_store(args, workdir)
    service = None
    try:
        extra = {"UPWATCH_RETENTION": "true", "UPWATCH_RETENTION_POLL_SECONDS": "2"}
        service, url = start_service(workdir, store, pin(args), log_path, extra)
        token, user_id = asyncio.run(read_account(url))
        region_id = store.scalar("SELECT id FROM regions WHERE code = 'local'")
        monitor_ids = owned_monitors(store, user_id)
        if len(monitor_ids) != READ_MONITORS or not region_id:
            raise RuntimeError(f"{len(monitor_ids)} monitors, region {region_id}")
        # The role's first pass over the new account, then a year of aggregates, notices,
        # and the run of "the next day" over them.
        wait_for(
            "the first retention pass",
            lambda: run_done(store, user_id),
            120,
            service,
            log_path,
        )
        now = datetime.now(UTC)
        first_day = now.date() - timedelta(days=READ_DAYS - 1)
        aggregates = [
            (
                monitor_id,
                region_id,
                (first_day + timedelta(days=d)).isoformat(),
                1440,
                1440 - d % 5,
                d % 5,
                0,
                1440 * 80.0,
                1440,
                20.0,
                900.0,
            )
            for monitor_id in monitor_ids
            for d in range(READ_DAYS)
        ]
        monday = now.date() + timedelta(days=7 + (-now.date().weekday()) % 7)
        notices = []
        for week in range(2):
            expiry = datetime(monday.year, monday.month, monday.day, tzinfo=UTC) + timedelta(
                weeks=week
            )
            for n, data_type in enumerate(DATA_TYPES):
                notices.append(
                    (
                        uuid.uuid4().hex,
                        user_id,
                        data_type,
                        store.stamp(expiry),
                        store.stamp(expiry - timedelta(days=PRO_RETENTION_DAYS)),
                        PRO_RETENTION_DAYS,
                        1000 * (n + 1),
                        140_000 * (n + 1),
                        0,
                        store.stamp(now),
                        store.stamp(now),
                    )
                )
        store.write(
            [
                (INSERTS["daily_aggregates"], aggregates),
                (INSERTS["retention_notifications"], notices),
                ("UPDATE retention_runs SET done_day = NULL WHERE user_id = ?", [(user_id,)]),
            ]
        )
        run_s = wait_for(
            "the retention run over a year of aggregates",
            lambda: run_done(store, user_id),
            300,
            service,
            log_path,
        )
        through = store.fetch(
            "SELECT result_rows, through_day FROM retention_runs WHERE user_id = ?", user_id
        )[0]
        result.update(
            read_aggregates=len(aggregates),
            read_notices_inserted=len(notices),
            read_run_s=round(run_s, 2),
            read_run_result_rows=int(through[0]),
            read_run_through_day=through[1],
        )
        emit("reads_seeded", **{k: v for k, v in result.items() if k.startswith("read_")})
        result.update(time_reads(args, url, token))
        checks.stop_service(service)
        service = None
    finally:
        if service is not None:
            checks.stop_service(service)
        drop_store(args, store)
    result["log"] = log_findings(log_path)
    return result


async def read_account(url: str) -> tuple[str, str]:
    """A pro account with 250 paused HTTP monitors; its token and id."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        signup = await client.post(
            "/auth/signup", json={"email": "reads@example.com", "password": "bench password"}
        )
        signup.raise_for_status()
        client.headers["Authorization"] = f"Bearer {signup.json()['access_token']}"
        (await client.post("/subscriptions/upgrade", json={})).raise_for_status()
        project = await client.post("/projects", json={"name": "reads"})
        project.raise_for_status()
        me = await client.get("/users/me")
        me.raise_for_status()
        todo = iter(range(READ_MONITORS))

        async def worker() -> None:
            for n in todo:
                response = await client.post(
                    "/monitors",
                    json={
                        "projectId": project.json()["id"],
                        "name": f"r{n}",
                        "type": "http",
                        "url": f"http://127.0.0.1:9/r/{n}",
                        "intervalSeconds": 60,
                        "isActive": False,
                    },
                )
                if response.status_code != 201:
                    raise RuntimeError(f"monitor {n}: {response.status_code} {response.text}")

        await asyncio.gather(*(worker() for _ in range(8)))
        return signup.json()["access_token"], me.json()["id"]


def time_reads(args: argparse.Namespace, url: str, token: str) -> dict[str, Any]:
    paths = {"notifications": "/retention/notifications", "subscription": "/subscriptions/current"}
    timings: dict[str, list[float]] = {name: [] for name in paths}
    headers = {"Authorization": f"Bearer {token}"}
    figures: dict[str, Any] = {}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        for n in range(args.read_warmup + args.read_requests):
            for name, path in paths.items():
                started = time.perf_counter()
                response = client.get(path)
                body = response.content
                elapsed = (time.perf_counter() - started) * 1000
                if response.status_code != 200:
                    raise RuntimeError(f"GET {path}: {response.status_code} {body[:300]!r}")
                if n >= args.read_warmup:
                    timings[name].append(elapsed)
        notices = client.get(paths["notifications"]).json()
        usage = client.get(paths["subscription"]).json()
    figures["read_notices_listed"] = len(notices)
    figures["read_storage_mb"] = usage["usage"]["storage"]["current"]
    figures["read_plan"] = usage.get("currentPlan")
    for name, values in timings.items():
        values.sort()
        figures[f"{name}_p50_ms"] = round(checks.quantile(values, 0.50) or 0, 3)
        figures[f"{name}_p99_ms"] = round(checks.quantile(values, 0.99) or 0, 3)
        figures[f"{name}_max_ms"] = round(values[-1], 3)
        figures[f"{name}_requests"] = len(values)
    return figures


# --- the run ----------------------------------------------------------------------------------


def pin(args: argparse.Namespace) -> list[str]:
    return checks.pin(args.service_cores)


def make_store(args: argparse.Namespace, workdir: Path) -> Store:
    (workdir / "data").mkdir(mode=0o700, parents=True, exist_ok=True)
    if args.db == "sqlite":
        return Store(sqlite_path=workdir / "data" / "upwatch.db")
    database = f"upwatch_bench_{uuid.uuid4().hex[:12]}"
    asyncio.run(checks.pg_admin(f'CREATE DATABASE "{database}"'))
    emit("database", name=database)
    return Store(pg_database=database)


def drop_store(args: argparse.Namespace, store: Store) -> None:
    if store.pg_database and not args.keep:
        with contextlib.suppress(Exception):
            asyncio.run(
                checks.pg_admin(f'DROP DATABASE IF EXISTS "{store.pg_database}" WITH (FORCE)')
            )


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"db": args.db, "phase": args.phase}
    tmp = Path(tempfile.mkdtemp(prefix="upwatch-bench-retention-"))
    logs = Path(args.log_dir) if args.log_dir else tmp
    logs.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    try:
        if args.phase in ("purge", "both"):
            log_path = logs / f"retention-{args.db}-purge-{stamp}.log"
            result["purge"] = purge_phase(args, tmp / "purge", log_path)
            emit("purge", **result["purge"])
        if args.phase in ("reads", "both"):
            log_path = logs / f"retention-{args.db}-reads-{stamp}.log"
            result["reads"] = reads_phase(args, tmp / "reads", log_path)
            emit("reads", **result["reads"])
    finally:
        if args.keep:
            emit("kept", directory=str(tmp))
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return result


def verdicts(result: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    rows: list[tuple[str, str, str, bool | None]] = []
    purge = result.get("purge")
    if purge:
        p99, le = purge["lateness_p99_s"], purge["lateness_p99_bucket_le"]
        rows += [
            (
                "lateness p99 in the purge",
                "n/a" if p99 is None else f"{p99:.3f} s (bucket <= {le:g} s)",
                f"< {TARGET_P99_LATENESS_S:g} s",
                le is not None and le <= TARGET_P99_LATENESS_S,
            ),
            (
                "expired rows left",
                f"{purge['expired_left']}",
                "0",
                purge["expired_left"] == 0 and purge["seeded_expired_left"] == 0,
            ),
            (
                "seeded retained rows left",
                f"{purge['seeded_retained_left']} of {purge['retained']}",
                "all",
                purge["seeded_retained_left"] == purge["retained"]
                and purge["retained_window_consistent"],
            ),
            (
                "purge rate",
                f"{purge['purge_rows_per_s']} rows/s",
                "(info)",
                None,
            ),
            (
                "checks stored (whole intervals)",
                f"{purge['checks_counted']} of {purge['checks_expected']} "
                f"({purge['checks_completion_pct']} %)",
                "(info)",
                None,
            ),
        ]
    reads = result.get("reads")
    if reads:
        for name, label in (
            ("notifications", "GET /retention/notifications"),
            ("subscription", "GET /subscriptions/current"),
        ):
            p99 = reads[f"{name}_p99_ms"]
            rows.append(
                (
                    f"{label} p99",
                    f"{p99:.2f} ms",
                    f"< {TARGET_READ_P99_MS:g} ms",
                    p99 < TARGET_READ_P99_MS,
                )
            )
    return rows


def print_table(result: dict[str, Any], command: str) -> bool:
    print()
    print(f"command: {command}")
    purge = result.get("purge")
    if purge:
        print(
            f"purge on {result['db']}: {purge['rows']:,} expired + {purge['retained']:,} retained "
            f"results over {purge['monitors']} monitors, engine at {purge['rate']:g} checks/s "
            f"({purge['monitors']} HTTP monitors every {purge['interval_s']} s)"
        )
        rows = [
            (
                "seed",
                f"{purge['seed_rows']:,} results + {purge['seed_aggregates']:,} day aggregates "
                f"in {purge['seed_s']} s ({purge['seed_rows_per_s']:,} rows/s)"
                + (
                    f", VACUUM ANALYZE {purge['vacuum_analyze_s']} s"
                    if result["db"] != "sqlite"
                    else ""
                ),
            ),
            (
                "service ready / first pass",
                f"{purge['ready_s']} s / {purge['first_pass_s']} s after ready",
            ),
            (
                "purge start after notice",
                f"{purge['purge_start_after_notice_s']} s",
            ),
            (
                "purge wall time",
                f"{purge['purge_s']} s (>= {purge['purge_s_lower_bound']} s), "
                f"{purge['purged_metric']:,} rows",
            ),
            (
                "purge rate",
                f"{purge['purge_rows_per_s']:,} rows/s (first 10 s "
                f"{purge['purge_rows_per_s_first_slice']:,}/s, last 10 s "
                f"{purge['purge_rows_per_s_last_full_slice']:,}/s)",
            ),
            (
                "lateness before the purge",
                f"{checks._fmt(purge['baseline_lateness_p50_s'])} / "
                f"{checks._fmt(purge['baseline_lateness_p99_s'])} / <= "
                f"{checks._fmt(purge['baseline_lateness_max_bucket_le'])} s over "
                f"{purge['baseline_s']} s, {purge['baseline_checks_per_s']} checks/s, service "
                f"{purge['baseline_service_cpu_pct']} % of a core",
            ),
            (
                "lateness in the purge",
                f"{checks._fmt(purge['lateness_p50_s'])} / {checks._fmt(purge['lateness_p99_s'])}"
                f" / <= {checks._fmt(purge['lateness_max_bucket_le'])} s "
                f"({purge['lateness_observations']} checks; worst 10 s p99 "
                f"{checks._fmt(purge['worst_10s_lateness_p99_s'])} s)",
            ),
            (
                "checks",
                f"{purge['checks_counted']:,} stored of {purge['checks_expected']:,} expected "
                f"({purge['checks_completion_pct']} %) in the {purge['checks_counted_s']} s from "
                f"the purge's start; {purge['checks_in_purge_window']:,} stored and "
                f"{purge['checks_run_metric']:,} run in the purge",
            ),
            (
                "CPU in the purge",
                f"service {purge['service_cpu_pct']} % of a core"
                + (
                    f", PostgreSQL {purge['postgres_cpu_pct']} %"
                    if purge["postgres_cpu_pct"] is not None
                    else ""
                ),
            ),
            (
                "after the purge",
                f"expired left {purge['expired_left']}, seeded retained "
                f"{purge['seeded_retained_left']:,} of {purge['retained']:,}, retained window "
                f"{purge['retained_window_rows']:,} = seeded + {purge['engine_rows']:,} engine "
                f"rows: {purge['retained_window_consistent']}",
            ),
            ("pass done after purge", f"{purge['pass_done_after_purge_s']} s"),
            *(
                [
                    (
                        "PostgreSQL",
                        f"autovacuum {purge['pg_autovacuum']} (scale factor "
                        f"{purge['pg_autovacuum_vacuum_scale_factor']}); check_results: "
                        f"{purge['pg_dead_rows_after']:,} dead rows after the purge, "
                        f"{purge['pg_autovacuums_of_check_results']} autovacuums",
                    )
                ]
                if "pg_autovacuum" in purge
                else []
            ),
            ("service log", _log_line(purge["log"])),
        ]
        for label, value in rows:
            print(f"  {label:<28}{value}")
    reads = result.get("reads")
    if reads:
        print(
            f"reads on {result['db']}: {READ_MONITORS} monitors x {READ_DAYS} days of aggregates "
            f"({reads['read_aggregates']:,} rows), {reads['read_notices_listed']} notices listed, "
            f"storage {reads['read_storage_mb']} MB; {reads['notifications_requests']} "
            "sequential requests each, one keep-alive client"
        )
        for name, label in (
            ("notifications", "GET /retention/notifications"),
            ("subscription", "GET /subscriptions/current"),
        ):
            print(
                f"  {label:<32}p50 {reads[f'{name}_p50_ms']:.2f} ms  "
                f"p99 {reads[f'{name}_p99_ms']:.2f} ms  max {reads[f'{name}_max_ms']:.2f} ms"
            )
        print(f"  {'service log':<32}{_log_line(reads['log'])}")
    print()
    print(f"  {'target':<34}{'measured':<40}{'goal':<14}verdict")
    met = True
    for label, value, goal, ok in verdicts(result):
        if ok is not None:
            met &= ok
        verdict = "info" if ok is None else "PASS" if ok else "MISS"
        print(f"  {label:<34}{value:<40}{goal:<14}{verdict}")
    return met


def _log_line(found: dict[str, Any]) -> str:
    return (
        f"{found['database_is_locked']} 'database is locked', {found['warnings']} warnings, "
        f"{found['errors']} errors, {found['tracebacks']} tracebacks ({found['log']})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--phase", choices=("purge", "reads", "both"), default="both")
    parser.add_argument("--rows", type=int, default=10_000_000, help="expired results seeded")
    parser.add_argument("--retained", type=int, default=1_000_000, help="retained results")
    parser.add_argument(
        "--expired-days", type=int, default=55, help="days the expired results spread over"
    )
    parser.add_argument("--rate", type=int, default=500, help="checks a second in the purge")
    parser.add_argument(
        "--monitors", type=int, help="HTTP monitors (default: rate x 10, at a 10 s interval)"
    )
    parser.add_argument("--warmup", type=float, help="seconds after start (default 2 intervals)")
    parser.add_argument(
        "--baseline", type=float, default=20, help="seconds measured just before the purge"
    )
    parser.add_argument("--poll", type=float, default=0.5, help="/metrics every, in the purge")
    parser.add_argument("--retention-poll", type=float, default=2.0)
    parser.add_argument("--batch-rows", type=int, help="UPWATCH_RETENTION_BATCH_ROWS")
    parser.add_argument("--batch-pause", type=float, help="UPWATCH_RETENTION_BATCH_PAUSE_SECONDS")
    parser.add_argument("--setup-timeout", type=float, default=1200)
    parser.add_argument("--first-pass-timeout", type=float, default=1800)
    parser.add_argument(
        "--purge-timeout", type=float, default=3600, help="give up on the purge after"
    )
    parser.add_argument("--drain", type=float, default=30)
    parser.add_argument("--read-requests", type=int, default=2000, help="per endpoint")
    parser.add_argument("--read-warmup", type=int, default=100, help="per endpoint")
    parser.add_argument("--service-cores", type=checks.cores_list, default="0,1")
    parser.add_argument("--log-dir", help="where the service's output goes")
    parser.add_argument("--keep", action="store_true", help="keep the data (and database)")
    args = parser.parse_args()
    if args.monitors is None:
        args.monitors = args.rate * 10
    args.interval = args.monitors / args.rate
    if args.interval != int(args.interval) or args.interval < 10:
        parser.error("--monitors / --rate must be a whole interval of at least 10 s")
    args.interval = int(args.interval)
    if args.warmup is None:
        args.warmup = 2 * args.interval
    command = shlex.join([sys.executable, *sys.argv])
    if checks.TWO_CORES:
        os.sched_setaffinity(0, {1})  # the driver stays off the service's core 0
    emit("command", command=command, pinned=checks.TWO_CORES)
    try:
        result = run(args)
    except Exception as exc:
        emit("failed", error=f"{type(exc).__name__}: {exc}")
        sys.exit(1)
    met = print_table(result, command)
    sys.exit(0 if met else 2)


if __name__ == "__main__":
    main()
