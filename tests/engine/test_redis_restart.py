"""Redis restarts under a deployment with the Redis broker: every role reconnects by itself.

A Redis of the test's own (the real `redis-server`, nothing on disk) is killed with SIGKILL
and started again on the same port: its streams, groups and region map are gone, as after
any restart of a Redis that keeps nothing. Checks must come back without anyone's help.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests import live_server as live
from tests.conftest import PASSWORD, assert_problem, eventually, free_port
from tests.engine.test_region_worker import WITHIN
from tests.factories import FAST_PLANS, Target

REDIS_SERVER = shutil.which("redis-server")
INTERVAL = 10


class PrivateRedis:
    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert REDIS_SERVER is not None
        self.process = subprocess.Popen(  # noqa: S603
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        for _ in range(500):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.1):
                    return
            except OSError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError("redis-server exited")
            subprocess.run(["sleep", "0.02"], check=True)  # noqa: S607
        raise RuntimeError("redis-server did not listen")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    redis = PrivateRedis(tmp_path)
    redis.start()
    yield redis
    redis.kill()


async def test_checks_come_back_by_themselves_after_redis_restarts_empty(
    private_redis: PrivateRedis, tmp_path: Path, target: Target
) -> None:
    plans = tmp_path / "plans.toml"
    plans.write_text(FAST_PLANS)
    env = live.clean_env(
        UPWATCH_PLANS_FILE=str(plans),
        UPWATCH_BROKER="redis",
        UPWATCH_REDIS_URL=private_redis.url,
        UPWATCH_REGION_REPORT_SECONDS="0.5",
        UPWATCH_ALLOW_PRIVATE_TARGETS="true",
        UPWATCH_ROLE_RESTART_MAX_SECONDS="1",
        UPWATCH_ADMIN_PASSWORD=PASSWORD,
    )
    live.create_root(tmp_path, env)
    server = live.LiveServer(tmp_path, env).start()
    with (tmp_path / "worker.log").open("ab") as log:
        worker = await asyncio.create_subprocess_exec(
            live.UPWATCH, "worker", "--region", "eu", cwd=tmp_path, env=env, stdout=log, stderr=log
        )
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as api:
            headers = await live.log_in_as_root(api, PASSWORD)
            region_ids = await live.define_regions(api, headers, "eu")
            monitor_id = await live.watched_monitor(
                api, headers, target.url, intervalSeconds=INTERVAL, regionIds=[region_ids["eu"]]
            )

            def checked_after(moment: datetime) -> Callable[[], Awaitable[bool]]:
                async def check() -> bool:
                    answer = await api.get(
                        f"/monitors/{monitor_id}/checks?limit=1", headers=headers
                    )
                    if answer.status_code == 503:  # a request that met the restart
                        return False
                    assert answer.status_code == 200, answer.text
                    body = answer.json()
                    return bool(body) and datetime.fromisoformat(body[0]["checkedAt"]) > moment

                return check

            await eventually(checked_after(datetime.fromtimestamp(0, UTC)), WITHIN)
            private_redis.kill()
            # Meanwhile the API says so (throttles and counts live in Redis): 503, not 500.
            away = await api.get("/monitors", headers=headers)
            assert_problem(away, 503)
            assert away.headers["Retry-After"] == "5"
            restarted = datetime.now(UTC)
            private_redis.start()  # empty: no streams, no groups, no region map
            await eventually(checked_after(restarted), WITHIN + 3 * INTERVAL)
            assert (await api.get("/readyz")).status_code == 200
    finally:
        worker.kill()
        await worker.wait()
        server.stop()
