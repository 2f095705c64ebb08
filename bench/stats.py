"""Latency of GET /monitors/{id}/stats?period=90d (or, with --report sla, of GET
/monitors/{id}/sla over the whole seeded period, under a weekly maintenance window) for a
monitor with days of one-minute results.

Seeds the results through the service's own ingester (so day aggregates and histograms are
built exactly as in production), then starts the real service on that database and times
sequential requests over loopback.

    .venv/bin/python bench/stats.py [--days 90] [--requests 300] [--db sqlite|postgresql]
        [--report stats|sla]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from asgi_lifespan import LifespanManager

UPWATCH = str(Path(sys.executable).parent / "upwatch")
PASSWORD = "bench password"


def environment(workdir: Path, database_url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UPWATCH_")}
    plans = workdir / "plans.toml"
    plans.write_text(
        '[plans.free]\napiCallsPerDay = "unlimited"\ncheckFrequencyMinutes = 0\nmonitorCount = 10\n'
    )
    env.update(
        UPWATCH_DATA_DIR=str(workdir / "data"),
        UPWATCH_PLANS_FILE=str(plans),
        UPWATCH_SECRET_KEY="bench-secret-key-that-is-long-enough-1234",
        UPWATCH_TARGETS_LOOPBACK_ONLY="true",
        UPWATCH_ALLOW_PRIVATE_TARGETS="true",
    )
    if database_url:
        env["UPWATCH_DATABASE_URL"] = database_url
    return env


async def seed(env: dict[str, str], days: int, maintenance: bool) -> tuple[str, str, int]:
    """Create an account and a monitor, then ingest one result a minute for ``days`` days;
    with ``maintenance``, under a weekly two-hour window over the whole period (as an SLA
    report must leave out)."""
    os.environ.update(env)
    from upwatch.app import create_app
    from upwatch.config import Settings
    from upwatch.engine.broker import CheckReport
    from upwatch.probes.outcome import ErrorKind, Outcome

    app = create_app(Settings())
    async with LifespanManager(app):
        engine = app.state.engine
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            signup = await client.post(
                "/auth/signup", json={"email": "bench@example.com", "password": PASSWORD}
            )
            headers = {"Authorization": f"Bearer {signup.json()['access_token']}"}
            project = await client.post("/projects", headers=headers, json={"name": "Bench"})
            # A long interval, paused afterwards: the engine must not add checks of its own.
            monitor = await client.post(
                "/monitors",
                headers=headers,
                json={
                    "projectId": project.json()["id"],
                    "name": "seeded",
                    "type": "http",
                    "url": "http://127.0.0.1:9/",
                    "intervalSeconds": 86400,
                },
            )
            monitor_id = monitor.json()["id"]
            end = datetime.now(UTC).replace(second=0, microsecond=0)
            start = end - timedelta(days=days)
            if maintenance:
                window = await client.post(
                    "/maintenance-windows",
                    headers=headers,
                    json={
                        "projectId": project.json()["id"],
                        "title": "Weekly upgrade",
                        "startsAt": start.isoformat(),
                        "endsAt": (start + timedelta(hours=2)).isoformat(),
                        "rrule": "FREQ=WEEKLY",
                    },
                )
                assert window.status_code == 201, window.text
        await engine.ready.wait()
        region = engine.local_region_id
        rng = random.Random(7)
        batch: list[CheckReport] = []
        total = 0
        moment = start
        while moment < end:
            ok = rng.random() > 0.002
            outcome = Outcome(
                ok=ok,
                response_time_ms=rng.lognormvariate(4.0, 0.5) if ok else None,
                status_code=200 if ok else None,
                error_kind=None if ok else ErrorKind.TIMEOUT,
                error=None if ok else "timed out",
            )
            batch.append(
                CheckReport(
                    monitor_id, region, moment.timestamp(), moment.timestamp(), moment, outcome
                )
            )
            if len(batch) == 1000:
                await engine.ingester.ingest(batch)
                total += len(batch)
                batch = []
            moment += timedelta(minutes=1)
        if batch:
            await engine.ingester.ingest(batch)
            total += len(batch)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            await client.patch(f"/monitors/{monitor_id}", headers=headers, json={"isActive": False})
    return monitor_id, headers["Authorization"], total


def serve(env: dict[str, str], workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [UPWATCH, "serve", "--port", str(port), "--log-level", "warning"],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the service did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--report", choices=["stats", "sla"], default="stats")
    args = parser.parse_args()

    database_url = None
    database = f"upwatch_bench_{uuid.uuid4().hex[:8]}"
    if args.db == "postgresql":
        subprocess.run(
            [
                "psql",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-qc",
                f'CREATE DATABASE "{database}"',
            ],
            check=True,
        )
        database_url = f"postgresql://postgres@127.0.0.1:5432/{database}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            env = environment(workdir, database_url)
            started = time.perf_counter()
            monitor_id, authorization, seeded = asyncio.run(
                seed(env, args.days, maintenance=args.report == "sla")
            )
            print(
                json.dumps(
                    {
                        "seeded_results": seeded,
                        "seed_seconds": round(time.perf_counter() - started, 1),
                    }
                )
            )
            process, url = serve(env, workdir)
            try:
                headers = {"Authorization": authorization}
                if args.report == "sla":
                    today = datetime.now(UTC).date()
                    first = today - timedelta(days=args.days)
                    stats_url = f"{url}/monitors/{monitor_id}/sla?from={first}&to={today}"
                else:
                    stats_url = f"{url}/monitors/{monitor_id}/stats?period=90d"
                with httpx.Client(headers=headers) as client:
                    body = client.get(stats_url).json()
                    for _ in range(20):
                        client.get(stats_url)  # warm-up
                    timings = []
                    for _ in range(args.requests):
                        begun = time.perf_counter()
                        response = client.get(stats_url)
                        timings.append((time.perf_counter() - begun) * 1000)
                        assert response.status_code == 200, response.text
            finally:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=30)
    finally:
        if args.db == "postgresql":
            subprocess.run(
                [
                    "psql",
                    "-h",
                    "127.0.0.1",
                    "-U",
                    "postgres",
                    "-qc",
                    f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)',
                ],
                check=False,
            )

    timings.sort()
    what = (
        {
            "apdex": body["apdex"]["score"],
            "downtimeMinutes": body["downtimeMinutes"],
            "maintenanceMinutes": body["maintenanceMinutes"],
            "incidents": body["incidents"],
        }
        if args.report == "sla"
        else {"totalChecks": body["totalChecks"], "p95ResponseTimeMs": body["p95ResponseTimeMs"]}
    )
    figures = {
        "db": args.db,
        "report": args.report,
        "days": args.days,
        "seededResults": seeded,
        "uptimePercentage": body["uptimePercentage"],
        **what,
        "requests": args.requests,
        "latency_p50_ms": round(statistics.median(timings), 2),
        "latency_p99_ms": round(timings[int(len(timings) * 0.99) - 1], 2),
        "latency_max_ms": round(timings[-1], 2),
    }
    print(json.dumps(figures))
    endpoint = "sla" if args.report == "sla" else "stats?period=90d"
    print(
        f"\nGET /monitors/{{id}}/{endpoint} over {seeded} results, {args.days} days: "
        f"p50 {figures['latency_p50_ms']} ms, p99 {figures['latency_p99_ms']} ms "
        f"({args.requests} sequential requests, {args.db})"
    )


if __name__ == "__main__":
    main()
