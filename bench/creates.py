"""How fast monitors are created through the API, one request at a time.

Runs the service's app in this process (httpx's ASGI transport, no engine, SQLite in a
temporary directory), signs up, makes a project, warms up with 50 creates, then times
``--monitors`` HTTP monitor creates and prints creates per second and the process's CPU
milliseconds per create. In-process, so the figure is the request path's own cost
(validation, access, plan limits, the insert), not the network's.

    .venv/bin/python bench/creates.py [--monitors 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from typing import Any

import httpx
from asgi_lifespan import LifespanManager

WARMUP = 50


async def one_round(count: int) -> tuple[float, float]:
    os.environ["UPWATCH_DATA_DIR"] = tempfile.mkdtemp(prefix="upwatch-creates-")
    os.environ["UPWATCH_ENGINE"] = "false"
    os.environ.setdefault("UPWATCH_EDITION", "selfhosted")
    from upwatch.app import create_app

    app = create_app()
    async with LifespanManager(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            account = {
                "email": "bench@example.com",
                "password": "correct horse battery",
                "firstName": "Bench",
                "lastName": "Mark",
            }
            answer = await client.post("/auth/signup", json=account)
            if answer.status_code >= 300:
                sys.exit(f"sign-up refused: {answer.text}")
            headers = {"Authorization": f"Bearer {answer.json()['access_token']}"}
            project = await client.post("/projects", json={"name": "Bench"}, headers=headers)
            project_id = project.json()["id"]

            def monitor(n: int) -> dict[str, Any]:
                return {
                    "projectId": project_id,
                    "name": f"m{n}",
                    "type": "http",
                    "url": f"https://example.com/{n}",
                    "intervalSeconds": 60,
                }

            for n in range(WARMUP):
                await client.post("/monitors", json=monitor(n), headers=headers)
            started, cpu = time.perf_counter(), time.process_time()
            for n in range(WARMUP, WARMUP + count):
                created = await client.post("/monitors", json=monitor(n), headers=headers)
                if created.status_code != 201:
                    sys.exit(f"create refused: {created.text}")
            cpu_ms = (time.process_time() - cpu) / count * 1000
            return count / (time.perf_counter() - started), cpu_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--monitors", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rounds = [asyncio.run(one_round(args.monitors)) for _ in range(args.rounds)]
    print("creates/s per round:", ", ".join(f"{rate:.1f}" for rate, _ in rounds))
    # CPU of the whole process (both threads: the event loop and SQLite's): steadier than
    # the rate on a machine others share.
    print("CPU ms per create:", ", ".join(f"{cpu:.2f}" for _, cpu in rounds))


if __name__ == "__main__":
    main()
