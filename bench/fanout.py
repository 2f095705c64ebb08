"""Status-page subscriber fan-out at scale (issue 36).

Runs the real application in this process (its lifespan starts the supervised
`subscriber-fanout` role) on a fresh database, makes a page with one component, inserts
``--subscribers`` confirmed e-mail subscribers in bulk, opens an incident on the component's
monitor through the incidents service and measures:

- the incident's transaction: rows it wrote (INSERT/UPDATE/DELETE row counts) and its time;
- the fan-out after the commit: time until the notice is expanded, rows (mail outbox notices)
  per second, batches;
- the process's peak RSS before and after the fan-out.

Without SMTP the notices stay in the outbox, so delivery is not part of the figure.

    .venv/bin/python bench/fanout.py [--subscribers 50000] [--batch 1000]
        [--database-url postgresql://postgres@127.0.0.1:5432/bench_fanout]

The PostgreSQL database must exist and be empty (it is migrated here); the default is a new
SQLite file in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from asgi_lifespan import LifespanManager
from sqlalchemy import event, func, insert, select

from upwatch.app import create_app
from upwatch.config import Settings
from upwatch.incidents.schemas import IncidentCreate
from upwatch.incidents.service import IncidentService
from upwatch.kit.db import commit_and_notify
from upwatch.kit.ids import new_id
from upwatch.models import MailMessage, StatusPageSubscriber, SubscriberNotice, User
from upwatch.runtime import Runtime


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def arrange(api: httpx.AsyncClient, runtime: Runtime, count: int) -> tuple[str, str, str]:
    """An account, a project, a paused monitor on a page and ``count`` subscribers; (user id,
    project id, monitor id)."""
    signed = await api.post(
        "/auth/signup", json={"email": "owner@example.com", "password": "correct horse battery"}
    )
    signed.raise_for_status()
    user_id = signed.json()["user"]["id"]
    headers = {"Authorization": f"Bearer {signed.json()['access_token']}"}
    project = (await api.post("/projects", headers=headers, json={"name": "Shop"})).json()
    monitor = await api.post(
        "/monitors",
        headers=headers,
        json={
            "projectId": project["id"],
            "name": "Checkout",
            "type": "http",
            "url": "https://checkout.example/",
            "intervalSeconds": 300,
            "isActive": False,
        },
    )
    monitor.raise_for_status()
    page = await api.post(
        "/status-pages",
        headers=headers,
        json={"projectId": project["id"], "name": "Shop", "slug": "shop"},
    )
    page.raise_for_status()
    component = await api.post(
        f"/status-pages/{page.json()['id']}/components",
        headers=headers,
        json={"monitorId": monitor.json()["id"]},
    )
    component.raise_for_status()
    now = datetime.now(UTC)
    async with runtime.db.worksession() as session:
        for first in range(0, count, 10_000):
            rows = [
                {
                    "id": new_id(),
                    "status_page_id": page.json()["id"],
                    "kind": "email",
                    "email": f"visitor-{n}@example.org",
                    "created_at": now,
                    "confirmed_at": now,
                }
                for n in range(first, min(first + 10_000, count))
            ]
            await session.execute(insert(StatusPageSubscriber), rows)
        await session.commit()
    return user_id, project["id"], monitor.json()["id"]


async def measure(settings: Settings, count: int) -> dict[str, Any]:
    app = create_app(settings)
    async with LifespanManager(app, startup_timeout=120, shutdown_timeout=60):
        runtime: Runtime = app.state.runtime
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as api:
            user_id, project_id, monitor_id = await arrange(api, runtime, count)
        rss_before = peak_rss_mib()
        written: list[int] = []

        def count_rows(_conn: Any, cursor: Any, statement: str, *_args: Any) -> None:
            if statement.lstrip().split(" ", 1)[0].upper() in ("INSERT", "UPDATE", "DELETE"):
                written.append(cursor.rowcount)

        started = time.perf_counter()
        async with runtime.db.worksession() as session:
            connection = await session.connection()
            event.listen(connection.sync_connection, "after_cursor_execute", count_rows)
            caller = await session.get(User, user_id)
            assert caller is not None
            body = IncidentCreate(projectId=project_id, monitorId=monitor_id, title="Payments")
            await IncidentService(session, runtime).create(caller, body)
            await commit_and_notify(session)
        committed = time.perf_counter()
        while True:
            async with runtime.db.workreader() as session:
                if await session.scalar(select(SubscriberNotice.done)):
                    break
            await asyncio.sleep(0.01)
        expanded = time.perf_counter()
        async with runtime.db.workreader() as session:
            mailed = await session.scalar(
                select(func.count()).where(MailMessage.category == "status_page_notice")
            )
    seconds = expanded - committed
    return {
        "subscribers": count,
        "batch": settings.subscriber_fanout_batch,
        "incident transaction rows": sum(written),
        "incident transaction statements": len(written),
        "incident transaction ms": round((committed - started) * 1000, 1),
        "fan-out seconds": round(seconds, 2),
        "notices written": mailed,
        "rows per second": round((mailed or 0) / seconds),
        "peak RSS MiB before": round(rss_before, 1),
        "peak RSS MiB after": round(peak_rss_mib(), 1),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            database_url=args.database_url or f"sqlite:///{Path(directory) / 'bench.db'}",
            data_dir=Path(directory),
            secret_key="bench-secret-key-that-is-long-enough-for-hs256",
            smtp_host="",
            engine=False,
            retention=False,
            api_metering=False,
            argon2_time_cost=1,
            argon2_memory_kib=64,
            argon2_parallelism=1,
            subscriber_fanout_batch=args.batch,
            mail_poll_seconds=0.2,
        )
        figures = await measure(settings, args.subscribers)
    backend = "PostgreSQL" if args.database_url.startswith("postgres") else "SQLite"
    print(f"subscriber fan-out on {backend}")
    for name, value in figures.items():
        print(f"  {name:34} {value}")


if __name__ == "__main__":
    asyncio.run(main())
