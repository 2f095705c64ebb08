"""A Redis user for one region's workers: the commands a worker sends, on its own keys only.

A worker may run on a machine the operator trusts less than the database host (another
provider, another country), and the jobs in its stream carry monitor snapshots, request headers
and credentials included. Its Redis user therefore reads and acknowledges its own region's job
stream and nothing else: it cannot read another region's jobs or any result, cannot trim or
delete streams, and cannot run administrative commands. What it can still do is bounded: add
results (which the ingester checks, and drops when they name another region) and beat in the
presence set (which counts it, at worst as a worker of another region).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from urllib.parse import quote, urlsplit, urlunsplit

from redis.asyncio import Redis

from upwatch.engine.regionworker import presence_key, regions_key

_CODE = re.compile(r"^[a-z0-9][a-z0-9-]{0,49}$")


def worker_username(region_code: str) -> str:
    if not _CODE.fullmatch(region_code):
        raise ValueError(f"not a region code: {region_code!r}")
    return f"upwatch-worker-{region_code}"


def worker_rules(prefix: str, region_id: str) -> list[str]:
    """ACL SETUSER rules (Redis 7 selectors) for the workers of region ``region_id``; the
    password is added by the caller. ``prefix`` and the id hold no glob characters (their
    settings' patterns), so each key pattern names exactly one key."""
    jobs = f"{prefix}:jobs:{region_id}"
    return [
        "reset",
        "on",
        "resetchannels",
        # Keyless: the client's greeting, database choice (key patterns hold in every
        # database) and health checks, and the MULTI that acknowledges a job together with
        # its result. (CLIENT SETINFO is refused: redis-py goes on without it.)
        "+hello",
        "+select",
        "+ping",
        "+multi",
        "+exec",
        "+discard",
        # Its region's jobs: join the group, read, take over a dead worker's, acknowledge.
        f"~{jobs}",
        "+xgroup|create",
        "+xreadgroup",
        "+xautoclaim",
        "+xack",
        "+xdel",
        # Results: add, and see whether the stream is full.
        f"(~{prefix}:results +xadd +xlen)",
        # Which id its region code has.
        f"(~{regions_key(prefix)} +hget)",
        # Its heartbeat.
        f"(~{presence_key(prefix)} +zadd +zrem)",
    ]


def worker_url(admin_url: str, username: str, password: str) -> str:
    """The admin connection's address with the worker's credentials instead."""
    parts = urlsplit(admin_url)
    host = parts.hostname or "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{quote(username, safe='')}:{quote(password, safe='')}@{host}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


class RegionUnknown(Exception):
    pass


async def create_worker_user(redis: Redis, admin_url: str, prefix: str, region_code: str) -> str:
    """Create (or replace, with a new password) the Redis user of a region's workers; the
    worker's ``UPWATCH_REDIS_URL``. Redis keeps only the password's SHA-256."""
    username = worker_username(region_code)
    found = await redis.hget(regions_key(prefix), region_code)
    if found is None:
        raise RegionUnknown(
            f"region {region_code} is not known in Redis yet: define it with POST /regions "
            "and start the scheduler, which publishes region ids"
        )
    region_id = found.decode() if isinstance(found, bytes) else str(found)
    password = secrets.token_urlsafe(32)
    digest = hashlib.sha256(password.encode()).hexdigest()
    # The rules as an operator would type them (docs/deployment.md), hence the raw command.
    await redis.execute_command(  # type: ignore[no-untyped-call]
        "ACL", "SETUSER", username, *worker_rules(prefix, region_id), f"#{digest}"
    )
    return worker_url(admin_url, username, password)
