"""The web console's pages for an account with 250 monitors (issues 18 and 34: p95 under 100 ms).

Sets up, in a fresh SQLite file or PostgreSQL database: one account (self-hosted plans, no
limits) with one project of ``--monitors`` HTTP monitors, 24 hours of results for each at
``--every`` seconds (one region) and 90 days of day counts and histograms, ``--incidents``
incidents, ``--providers`` notification providers, a status page of ``--components``
components and ``--windows`` maintenance windows, the account an administrator too (so the
administrators' pages are timed). Signs in through the
console's form, then requests each page ``--requests`` times in turn (after one warm-up each)
through the app in this process (no network: the figure is the server's own time) and prints
each page's median, p95 and largest time in ms. Exits 2 when a page's p95 is 100 ms or more.

    .venv/bin/python bench/console.py [--db sqlite|postgresql] [--monitors 250]
                                      [--every 300] [--requests 40] [--language en]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import re
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from asgi_lifespan import LifespanManager
from sqlalchemy import insert, select, text, update
from sqlalchemy.ext.asyncio import create_async_engine

from upwatch.app import create_app
from upwatch.config import Settings
from upwatch.kit.histogram import Histogram
from upwatch.models import (
    RECENT_TIMES,
    CheckResult,
    DailyAggregate,
    HistogramBucket,
    HourlyCount,
    Monitor,
    Region,
    User,
)

# The status-page benchmark's settings, shared.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from statuspage import settings_for as page_bench_settings

PASSWORD = "correct horse battery"
ADMIN_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
TARGET_MS = 100.0


def settings_for(database_url: str, data_dir: Path) -> Settings:
    # The status-page bench's settings, on a self-hosted service (no plan limits).
    return page_bench_settings(database_url, data_dir).model_copy(update={"edition": "selfhosted"})


async def seed(api: httpx.AsyncClient, settings: Settings, args: argparse.Namespace) -> None:
    signup = await api.post(
        "/auth/signup", json={"email": "lead@example.com", "password": PASSWORD}
    )
    headers = {"Authorization": f"Bearer {signup.json()['access_token']}"}
    # The account's language: its pages' texts, dates and figures (docs/languages.md).
    chosen = await api.put("/users/settings", headers=headers, json={"language": args.language})
    assert chosen.status_code == 200, chosen.text
    project = (await api.post("/projects", headers=headers, json={"name": "Shop"})).json()["id"]
    ids = []
    for n in range(args.monitors):
        made = await api.post(
            "/monitors",
            headers=headers,
            json={
                "projectId": project,
                "name": f"Service {n:03d}",
                "type": "http",
                "url": f"https://service-{n}.example/health",
                "intervalSeconds": args.every,
            },
        )
        ids.append(made.json()["id"])
    for n in range(args.incidents):
        await api.post(
            "/incidents",
            headers=headers,
            json={"projectId": project, "monitorId": ids[n % len(ids)], "title": f"Outage {n}"},
        )
    for n in range(args.providers):
        await api.post(
            "/notification-providers",
            headers=headers,
            json={
                "projectId": project,
                "name": f"On call {n}",
                "type": "email",
                "config": {"to": [f"oncall-{n}@example.com"]},
            },
        )
    page = (
        await api.post(
            "/status-pages",
            headers=headers,
            json={"projectId": project, "name": "Shop status", "slug": "shop-bench"},
        )
    ).json()
    for monitor_id in ids[: args.components]:
        await api.post(
            f"/status-pages/{page['id']}/components",
            headers=headers,
            json={"monitorId": monitor_id},
        )
    soon = datetime.now(UTC) + timedelta(days=1)
    for n in range(args.windows):
        await api.post(
            "/maintenance-windows",
            headers=headers,
            json={
                "projectId": project,
                "title": f"Upgrade {n}",
                "startsAt": (soon + timedelta(days=n)).isoformat(),
                "endsAt": (soon + timedelta(days=n, hours=2)).isoformat(),
                "monitorIds": ids[n : n + 5],
            },
        )
    engine = create_async_engine(settings.sqlalchemy_url)
    now = datetime.now(UTC)
    async with engine.begin() as connection:
        # An administrator too, so the administrators' pages are timed with the rest.
        await connection.execute(update(User).values(roles=["user", "admin"]))
        region = (await connection.execute(select(Region.id).limit(1))).scalar()
        if region is None:
            region = uuid.uuid4().hex
            await connection.execute(
                insert(Region).values(
                    id=region, code="local", name="Local", builtin=True, created_at=now
                )
            )
        points = int(24 * 3600 / args.every)
        # Check rows are keyed by the monitor's and the region's numbers (migration 0027).
        region_number = (
            await connection.execute(select(Region.number).where(Region.id == region))
        ).scalar_one()
        numbers = dict((await connection.execute(select(Monitor.id, Monitor.number))).all())
        for monitor_id in ids:
            rows = [
                {
                    "status": "up" if i % 50 else "down",
                    "status_code": 200 if i % 50 else 503,
                    "response_time_ms": 80.0 + (i % 17) * 3,
                    "checked_at": now - timedelta(seconds=args.every * i),
                }
                for i in range(points)
            ]
            keys = {"monitor_number": numbers[monitor_id], "region_number": region_number}
            # By the table's column names (the time in ms, the response time in µs: the
            # columns' types convert).
            stored = [
                {
                    **keys,
                    "status": row["status"],
                    "status_code": row["status_code"],
                    "response_us": row["response_time_ms"],
                    "checked_at_ms": row["checked_at"],
                }
                for row in rows
            ]
            await connection.execute(insert(CheckResult.__table__), stored)
            # As the ingester keeps them: the last response times, oldest first.
            recent = [row["response_time_ms"] for row in rows[:RECENT_TIMES]][::-1]
            await connection.execute(
                update(Monitor).where(Monitor.id == monitor_id).values(recent_ms=recent)
            )
            hours: dict[str, dict[str, int]] = {}
            for row in rows:
                hour = hours.setdefault(
                    HourlyCount.key_of(row["checked_at"]),
                    {"total": 0, "up": 0, "down": 0, "degraded": 0},
                )
                hour["total"] += 1
                hour[row["status"]] += 1
            await connection.execute(
                insert(HourlyCount),
                [
                    {"monitor_id": monitor_id, "region_id": region, "hour": key, **counts}
                    for key, counts in hours.items()
                ],
            )
        # 90 days of day counts and response-time histograms, as the ingester keeps them
        # (the monitor page's 7 to 90 day chart and its bars read these).
        histogram = Histogram([80.0 + (i % 17) * 3 for i in range(points)]).buckets()
        for monitor_id in ids:
            days = [(now.date() - timedelta(days=d)).isoformat() for d in range(90)]
            await connection.execute(
                insert(DailyAggregate),
                [
                    {
                        "monitor_id": monitor_id,
                        "region_id": region,
                        "day": day,
                        "total": points,
                        "up": points - points // 50,
                        "down": points // 50,
                        "degraded": 0,
                        "response_ms_sum": points * 104.0,
                        "response_count": points,
                        "response_ms_min": 80.0,
                        "response_ms_max": 128.0,
                    }
                    for day in days
                ],
            )
            await connection.execute(
                insert(HistogramBucket),
                [
                    {
                        "monitor_id": monitor_id,
                        "region_id": region,
                        "day": day,
                        "bucket": b,
                        "count": c,
                    }
                    for day in days
                    for b, c in histogram
                ],
            )
    await engine.dispose()


async def first_id(api: httpx.AsyncClient, page: str, link: str) -> str:
    """The id in the first link to ``link``/{id} on ``page``."""
    found = re.search(rf'href="{link}/([0-9a-f]{{32}})"', (await api.get(page)).text)
    assert found, (page, link)
    return found.group(1)


async def pages_of(api: httpx.AsyncClient) -> dict[str, str]:
    """Every console page a team and an administrator use, with ids of the seeded objects."""
    monitor = await first_id(api, "/app/monitors", "/app/monitors")
    incident = await first_id(api, "/app/incidents", "/app/incidents")
    status_page = await first_id(api, "/app/status-pages", "/app/status-pages")
    project = await first_id(api, "/app/projects", "/app/projects")
    provider = await first_id(api, "/app/notifications", "/app/notifications")
    # The maintenance list links a window only through its forms' actions.
    listed = (await api.get("/app/maintenance")).text
    found = re.search(r'"/app/maintenance/([0-9a-f]{32})/', listed)
    assert found
    window = found.group(1)
    return {
        "dashboard": "/app/dashboard",
        "monitors list": "/app/monitors",
        "monitors search": "/app/monitors?q=Service+01",
        "monitors rows (live refresh)": "/app/monitors/rows",
        "new monitor form": "/app/monitors/new",
        "monitor page": f"/app/monitors/{monitor}",
        "monitor state (live refresh)": f"/app/monitors/{monitor}/state",
        "monitor page, 90 days": f"/app/monitors/{monitor}?range=90d",
        "monitor edit form": f"/app/monitors/{monitor}/edit",
        "monitor report": f"/app/monitors/{monitor}/report",
        "incidents list": "/app/incidents",
        "incident page": f"/app/incidents/{incident}",
        "projects": "/app/projects",
        "project page": f"/app/projects/{project}",
        "project SLA": f"/app/projects/{project}/sla",
        "API keys": f"/app/projects/{project}/api-keys",
        "notifications": "/app/notifications",
        "provider edit": f"/app/notifications/{provider}",
        "escalation policies": "/app/escalation-policies",
        "status pages": "/app/status-pages",
        "status page editor": f"/app/status-pages/{status_page}",
        "status page preview": f"/app/status-pages/{status_page}/preview",
        "status page subscribers": f"/app/status-pages/{status_page}/subscribers",
        "maintenance": "/app/maintenance",
        "maintenance edit": f"/app/maintenance/{window}/edit",
        "plan and usage": "/app/plan",
        "settings": "/app/settings",
        "admin: accounts": "/app/admin/users",
        "admin: mail outbox": "/app/admin/mail",
    }


async def measure(args: argparse.Namespace, database_url: str, data_dir: Path) -> int:
    settings = settings_for(database_url, data_dir)
    app = create_app(settings)
    async with LifespanManager(app, startup_timeout=60, shutdown_timeout=60):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench.test") as api:
            started = time.perf_counter()
            await seed(api, settings, args)
            print(f"seeded {args.monitors} monitors in {time.perf_counter() - started:.1f} s")
            # As `upwatch serve` does once started: what lives as long as the process is not
            # walked by every collection again.
            gc.collect()
            gc.freeze()
            form = await api.get("/app/login")
            csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
            assert csrf
            await api.post(
                "/app/login",
                data={"email": "lead@example.com", "password": PASSWORD, "csrf": csrf.group(1)},
            )
            pages = await pages_of(api)
            times: dict[str, list[float]] = {name: [] for name in pages}
            for path in pages.values():
                assert (await api.get(path)).status_code == 200, path
            for _ in range(args.requests):
                for name, path in pages.items():
                    begun = time.perf_counter()
                    response = await api.get(path)
                    times[name].append((time.perf_counter() - begun) * 1000)
                    assert response.status_code == 200, path
    missed = 0
    print(f"{'page':32} {'median':>8} {'p95':>8} {'max':>8}  (ms, {args.requests} requests)")
    for name, values in times.items():
        values.sort()
        p95 = values[max(0, int(len(values) * 0.95) - 1)]
        flag = "" if p95 < TARGET_MS else "  <- over 100 ms"
        missed += p95 >= TARGET_MS
        print(f"{name:32} {statistics.median(values):8.1f} {p95:8.1f} {values[-1]:8.1f}{flag}")
    return 2 if missed else 0


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--monitors", type=int, default=250)
    parser.add_argument("--language", default="en", help="the account's language (en, fr, ja, ...)")
    parser.add_argument("--every", type=int, default=300, help="seconds between results")
    parser.add_argument("--incidents", type=int, default=50)
    parser.add_argument("--providers", type=int, default=10)
    parser.add_argument("--components", type=int, default=50, help="on one status page")
    parser.add_argument("--windows", type=int, default=20, help="maintenance windows")
    parser.add_argument("--requests", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.db == "sqlite":
            return await measure(args, f"sqlite:///{tmp}/bench.db", Path(tmp))
        name = f"upwatch_bench_{uuid.uuid4().hex[:8]}"
        admin = create_async_engine(
            ADMIN_POSTGRES.replace("postgresql://", "postgresql+asyncpg://"),
            isolation_level="AUTOCOMMIT",
        )
        async with admin.connect() as connection:
            await connection.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            base = ADMIN_POSTGRES.rpartition("/")[0]
            return await measure(args, f"{base}/{name}", Path(tmp))
        finally:
            async with admin.connect() as connection:
                await connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
            await admin.dispose()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
