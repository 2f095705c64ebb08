"""The database servers tests point monitors at: the machine's PostgreSQL and MariaDB, and a
Redis of the test's own (stopping it leaves the shared one alone)."""

from __future__ import annotations

import asyncio
import socket
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

REDIS_PASSWORD = "s3cret-pw"


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def own_redis(directory: Path) -> AsyncIterator[tuple[int, Process]]:
    """A password-protected Redis on a free loopback port, and its process."""
    port = free_port()
    server = await asyncio.create_subprocess_exec(
        *("redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory)),
        *("--requirepass", REDIS_PASSWORD, "--save", "", "--appendonly", "no"),
        stdout=asyncio.subprocess.PIPE,
    )
    assert server.stdout is not None
    try:
        async with asyncio.timeout(10):
            # It says so once it listens.
            while b"Ready to accept connections" not in await server.stdout.readline():
                pass
        yield port, server
    finally:
        if server.returncode is None:
            server.terminate()
        await server.wait()
