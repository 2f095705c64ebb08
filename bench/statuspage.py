"""A public status page under load (issue 13), and the time to build its snapshot.

Sets up one public page with 20 components (paused HTTP monitors), 90 days of day aggregates
for each, two open incidents and a message, in a fresh SQLite file or PostgreSQL database.

1. Build: times a whole rebuild of the page's snapshot (queries, JSON, HTML, feeds)
   ``--builds`` times (after one warm-up build) and prints its median, p95 and largest, in ms.
2. Serve: starts the real app under uvicorn (httptools, on the event loop ``upwatch serve``
   uses, ``UPWATCH_HTTP_LOOP``, or ``--loop``) in its own process, pinned to
   ``--server-core``, wrapped by a bare ASGI endpoint that is outside all of the app's
   middleware and routing and answers the very bytes the app serves (``/bare/json``,
   ``/bare/html``, fetched once from the snapshot). Then wrk (pinned to ``--wrk-core``, one
   thread, ``--connections`` connections, ``--seconds`` each, after a short warm-up) loads, one
   after another: the bare JSON, the public JSON, the bare HTML, the HTML page; ``--rounds``
   times over, so each page and its bare twin meet the same moments of the machine. Prints
   each round, then the medians of rate and latency p50/p99 (and the largest p99), and the
   ratio of each page's rate to its bare twin's, with the load average. The targets: p99
   under 50 ms, ratio at least 0.5, build under 20 ms.

    .venv/bin/python bench/statuspage.py [--db sqlite|postgresql] [--seconds 15] [--rounds 3]
                                         [--connections 200] [--builds 50]
                                         [--loop asyncio|uvloop]

Needs wrk (Debian's package). Exits 2 when a target was missed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from asgi_lifespan import LifespanManager
from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import create_async_engine

from upwatch.app import create_app
from upwatch.config import Settings
from upwatch.models import DailyAggregate

SLUG = "bench"
COMPONENTS = 20
PASSWORD = "correct horse battery"
ADMIN_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


def settings_for(database_url: str, data_dir: Path) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=database_url,
        data_dir=data_dir,
        secret_key="bench-secret-key-that-is-long-enough-for-hs256",
        engine=False,
        api_metering=False,
        argon2_time_cost=1,
        argon2_memory_kib=64,
        argon2_parallelism=1,
        status_page_max_age_seconds=5,
    )


async def seed(settings: Settings) -> str:
    """The page, its components, 90 days of aggregates and two incidents; the page's id."""
    app = create_app(settings)
    async with LifespanManager(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as api:
            signup = await api.post(
                "/auth/signup", json={"email": "bench@example.com", "password": PASSWORD}
            )
            signup.raise_for_status()
            headers = {"Authorization": f"Bearer {signup.json()['access_token']}"}
            (await api.post("/subscriptions/upgrade", headers=headers, json={})).raise_for_status()
            project = (await api.post("/projects", headers=headers, json={"name": "Bench"})).json()
            page = (
                await api.post(
                    "/status-pages",
                    headers=headers,
                    json={"projectId": project["id"], "name": "Bench", "slug": SLUG},
                )
            ).json()
            monitor_ids = []
            for n in range(COMPONENTS):
                monitor = await api.post(
                    "/monitors",
                    headers=headers,
                    json={
                        "projectId": project["id"],
                        "name": f"Service {n + 1}",
                        "type": "http",
                        "url": "https://example.com/health",
                        "intervalSeconds": 60,
                        "isActive": False,
                    },
                )
                monitor.raise_for_status()
                monitor_ids.append(monitor.json()["id"])
                added = await api.post(
                    f"/status-pages/{page['id']}/components",
                    headers=headers,
                    json={"monitorId": monitor_ids[-1]},
                )
                added.raise_for_status()
            for n in range(2):
                await api.post(
                    "/incidents",
                    headers=headers,
                    json={
                        "projectId": project["id"],
                        "monitorId": monitor_ids[n],
                        "title": f"Slow responses on service {n + 1}",
                        "description": "We are looking into it.",
                    },
                )
            await api.patch(
                f"/status-pages/{page['id']}/status",
                headers=headers,
                json={"message": "Scheduled work tonight at 22:00 UTC."},
            )
        today = datetime.now(UTC).date()
        rows = [
            {
                "monitor_id": monitor_id,
                "region_id": "local",
                "day": (today - timedelta(days=d)).isoformat(),
                "total": 1440,
                "up": 1440 - (d % 7),
                "down": d % 7,
                "degraded": 0,
                "response_ms_sum": 1440 * 80.0,
                "response_count": 1440,
                "response_ms_min": 20.0,
                "response_ms_max": 900.0,
            }
            for monitor_id in monitor_ids
            for d in range(90)
        ]
        async with app.state.runtime.db.sessionmaker() as session:
            await session.execute(insert(DailyAggregate), rows)
            await session.commit()
    return str(page["id"])


async def time_builds(settings: Settings, page_id: str, builds: int) -> list[float]:
    """A whole rebuild, as a visit after a change makes it: the page read, its queries, the
    public model, JSON, HTML and both feeds."""
    app = create_app(settings)
    async with LifespanManager(app):
        snapshots = app.state.status_page_snapshots
        # As `upwatch serve` does: what lives as long as the process is not walked again.
        gc.collect()
        gc.freeze()
        timings = []
        for n in range(builds + 1):
            snapshots.changed(page_id)
            started = time.perf_counter()
            assert await snapshots.get(SLUG) is not None
            elapsed = (time.perf_counter() - started) * 1000
            if n:  # the first build warms the connections and the statement cache
                timings.append(elapsed)
        gc.unfreeze()
        return timings


# ---- the server process ----


def serve(args: argparse.Namespace) -> None:
    import uvicorn

    settings = settings_for(args.database_url, Path(args.data_dir))
    app = create_app(settings)
    bare: dict[str, bytes] = {}

    async def wrapper(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and path in ("/bare/json", "/bare/html"):
            if not bare:
                snapshot = await app.state.status_page_snapshots.get(SLUG)
                bare["/bare/json"], bare["/bare/html"] = snapshot.json, snapshot.html
            kind = b"application/json" if path == "/bare/json" else b"text/html; charset=utf-8"
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]}
            )
            await send({"type": "http.response.body", "body": bare[path]})
            return
        await app(scope, receive, send)

    gc.freeze()  # as `upwatch serve` does
    uvicorn.run(
        wrapper,
        host="127.0.0.1",
        port=args.port,
        access_log=False,
        loop=args.loop or settings.http_loop,
        http="httptools",
        lifespan="on",
    )


# ---- the driver ----


def wrk(url: str, seconds: int, connections: int, core: int) -> dict[str, float]:
    command = ["taskset", "-c", str(core), "wrk", "-t1", f"-c{connections}", f"-d{seconds}s"]
    output = subprocess.run(
        [*command, "--latency", url], capture_output=True, text=True, check=True
    ).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]

    def latency(label: str) -> float:
        found = re.search(rf"\s{label}%\s+([\d.]+)(us|ms|s)", output)
        assert found, output
        value, unit = float(found.group(1)), found.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {
        "rate": rate,
        "p50_ms": latency("50"),
        "p99_ms": latency("99"),
        "non_2xx": float(errors.group(1)) if errors else 0.0,
    }


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--builds", type=int, default=50)
    parser.add_argument("--server-core", type=int, default=0)
    parser.add_argument("--wrk-core", type=int, default=1)
    parser.add_argument("--port", type=int, default=8713)
    parser.add_argument(
        "--loop", choices=["asyncio", "uvloop"], help="the server's event loop (default: as serve)"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--database-url", help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args)
        return 0
    if shutil.which("wrk") is None:
        print("wrk is missing: apt-get install wrk", file=sys.stderr)
        return 1

    data_dir = Path(tempfile.mkdtemp(prefix="upwatch-bench-statuspage-"))
    database = None
    if args.db == "sqlite":
        database_url = f"sqlite:///{data_dir / 'upwatch.db'}"
    else:
        database = f"upwatch_bench_{uuid.uuid4().hex[:8]}"
        asyncio.run(_postgres(f'CREATE DATABASE "{database}"'))
        database_url = ADMIN_POSTGRES.rsplit("/", 1)[0] + f"/{database}"
    server = None
    try:
        settings = settings_for(database_url, data_dir)
        page_id = asyncio.run(seed(settings))
        timings = asyncio.run(time_builds(settings, page_id, args.builds))
        build_figures = {
            "median_ms": round(statistics.median(timings), 2),
            "p95_ms": round(statistics.quantiles(timings, n=20)[-1], 2),
            "max_ms": round(max(timings), 2),
        }
        print(json.dumps({"build": build_figures, "db": args.db, "components": COMPONENTS}))

        server = subprocess.Popen(
            [
                "taskset", "-c", str(args.server_core), sys.executable, __file__, "--serve",
                "--database-url", database_url, "--data-dir", str(data_dir),
                "--port", str(args.port), *(["--loop", args.loop] if args.loop else []),
            ],
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        )  # fmt: skip
        base = f"http://127.0.0.1:{args.port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/bare/json", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the server did not start")
            time.sleep(0.2)
        json_size = len(httpx.get(f"{base}/status-pages/public/slug/{SLUG}").content)
        html_size = len(httpx.get(f"{base}/s/{SLUG}").content)
        endpoints = (
            ("bare json", "/bare/json"),
            ("public json", f"/status-pages/public/slug/{SLUG}"),
            ("bare html", "/bare/html"),
            ("html page", f"/s/{SLUG}"),
        )
        # Rounds, each endpoint once per round, so the bare twin and ours meet the same
        # moments of the machine; each figure is the median over the rounds.
        rounds: dict[str, list[dict[str, float]]] = {name: [] for name, _ in endpoints}
        for round_number in range(args.rounds):
            for name, path in endpoints:
                wrk(base + path, args.warmup, args.connections, args.wrk_core)
                figures = wrk(base + path, args.seconds, args.connections, args.wrk_core)
                rounds[name].append(figures)
                print(json.dumps({"round": round_number + 1, "endpoint": name, **figures}))
        results = {}
        for name, runs in rounds.items():
            results[name] = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            results[name]["p99_max_ms"] = max(run["p99_ms"] for run in runs)
            results[name]["load_average"] = load_average()  # type: ignore[assignment]
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if database is not None:
            asyncio.run(_postgres(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        shutil.rmtree(data_dir, ignore_errors=True)

    print()
    print(f"status page, {COMPONENTS} components x 90 days, {args.db}; {json_size} B JSON, "
          f"{html_size} B HTML; wrk -t1 -c{args.connections} -d{args.seconds}s")  # fmt: skip
    loop = args.loop or settings.http_loop
    print(f"medians over {args.rounds} rounds on the {loop} loop; p99 max: the largest round's p99")
    print(
        f"{'endpoint':<12} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'p99 max':>8} "
        f"{'non-2xx':>8}  load"
    )
    for name, figures in results.items():
        print(
            f"{name:<12} {figures['rate']:>9.0f} {figures['p50_ms']:>8.2f} "
            f"{figures['p99_ms']:>8.2f} {figures['p99_max_ms']:>8.2f} "
            f"{figures['non_2xx']:>8.0f}  {figures['load_average']}"
        )
    missed = []
    for page, bare in (("public json", "bare json"), ("html page", "bare html")):
        ratio = results[page]["rate"] / results[bare]["rate"]
        print(f"{page}: {ratio:.2f} of the bare endpoint's rate (target >= 0.50)")
        if ratio < 0.5:
            missed.append(f"{page} ratio {ratio:.2f}")
        if results[page]["p99_ms"] >= 50:
            missed.append(f"{page} p99 {results[page]['p99_ms']} ms")
    print(
        f"snapshot build: median {build_figures['median_ms']} ms, p95 {build_figures['p95_ms']}"
        f" ms, max {build_figures['max_ms']} ms (target < 20 ms)"
    )
    if build_figures["p95_ms"] >= 20:
        missed.append(f"build p95 {build_figures['p95_ms']} ms")
    if missed:
        print("missed: " + "; ".join(missed))
        return 2
    return 0


async def _postgres(statement: str) -> None:
    engine = create_async_engine(
        ADMIN_POSTGRES.replace("postgresql://", "postgresql+asyncpg://"),
        isolation_level="AUTOCOMMIT",
    )
    try:
        async with engine.connect() as connection:
            await connection.execute(text(statement))
    finally:
        await engine.dispose()


if __name__ == "__main__":
    sys.exit(main())
