"""Postgres, MySQL and Redis probes against the machine's real servers on loopback.

PostgreSQL's pg_hba here trusts loopback, so it never checks a password: the refused login is
tested with MySQL and Redis, and PostgreSQL's refusal with a database that does not exist.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from asyncio.subprocess import Process
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trustme

from tests.database_servers import REDIS_PASSWORD, free_port, listening, own_redis
from upwatch.kit.net import NetworkGuard
from upwatch.probes.databases import Target
from upwatch.probes.mysql import probe_mysql
from upwatch.probes.outcome import ErrorKind
from upwatch.probes.postgres import probe_postgres
from upwatch.probes.redis import probe_redis

GUARD = NetworkGuard(allow_private=True)
PASSWORD = REDIS_PASSWORD


needs_postgres = pytest.mark.skipif(not listening(5432), reason="no PostgreSQL on 127.0.0.1:5432")
needs_mysql = pytest.mark.skipif(
    not listening(3306) or shutil.which("mariadb") is None,
    reason="no MariaDB on 127.0.0.1:3306 (or no mariadb client to make its user)",
)
needs_redis_server = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="no redis-server to start"
)


@pytest.fixture
async def junk_server() -> AsyncIterator[int]:
    """A port whose server greets with text no database speaks, then hangs up."""

    async def greet(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(greet, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()


@pytest.fixture(scope="module")
def mysql_user() -> Iterator[str]:
    """A MariaDB user with a password: ``monitor_h35``."""
    statements = (
        f"CREATE USER IF NOT EXISTS 'monitor_h35'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}';"
        f"ALTER USER 'monitor_h35'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}';"
    )
    subprocess.run(["mariadb", "-uroot", "-e", statements], check=True)  # noqa: S603, S607
    yield "monitor_h35"
    drop = "DROP USER IF EXISTS 'monitor_h35'@'127.0.0.1'"
    subprocess.run(["mariadb", "-uroot", "-e", drop], check=True)  # noqa: S603, S607


@pytest.fixture
async def redis_with_password(tmp_path: Path) -> AsyncIterator[tuple[int, Process]]:
    async with own_redis(tmp_path) as server:
        yield server


@needs_postgres
async def test_a_postgres_server_that_answers_select_1_is_up_with_its_version() -> None:
    outcome = await probe_postgres("postgresql://postgres@127.0.0.1:5432/postgres", 5, GUARD)

    assert outcome.ok, outcome.error
    assert outcome.details["address"] == "127.0.0.1"
    assert str(outcome.details["serverVersion"])[0].isdigit()
    assert outcome.timings is not None
    assert outcome.timings.connect_ms is not None


@needs_postgres
async def test_a_postgres_database_that_does_not_exist_is_down_without_the_password() -> None:
    url = f"postgresql://postgres:{PASSWORD}@127.0.0.1/no_such_db_h35"
    outcome = await probe_postgres(url, 5, GUARD)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.DATABASE
    assert outcome.error is not None
    assert "no_such_db_h35" in outcome.error
    assert PASSWORD not in outcome.error


async def test_a_stopped_postgres_is_down_with_a_connect_error() -> None:
    outcome = await probe_postgres(f"postgresql://postgres@127.0.0.1:{free_port()}/x", 5, GUARD)

    assert outcome.error_kind is ErrorKind.CONNECT
    assert outcome.error == "cannot connect: connection refused"


async def test_a_server_that_is_not_postgres_is_a_protocol_error(junk_server: int) -> None:
    outcome = await probe_postgres(f"postgresql://postgres@127.0.0.1:{junk_server}/x", 5, GUARD)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.PROTOCOL


@needs_postgres
async def test_a_loopback_postgres_is_refused_when_private_targets_are_not_allowed() -> None:
    guard = NetworkGuard(allow_private=False)
    outcome = await probe_postgres("postgresql://postgres@127.0.0.1/postgres", 5, guard)

    assert outcome.error_kind is ErrorKind.REFUSED_TARGET


@needs_mysql
async def test_a_mysql_server_that_answers_select_1_is_up_with_its_version(
    mysql_user: str,
) -> None:
    outcome = await probe_mysql(f"mysql://{mysql_user}:{PASSWORD}@127.0.0.1:3306", 5, GUARD)

    assert outcome.ok, outcome.error
    assert "MariaDB" in str(outcome.details["serverVersion"])


@needs_mysql
async def test_a_wrong_mysql_password_is_an_auth_failure_that_does_not_echo_it(
    mysql_user: str,
) -> None:
    outcome = await probe_mysql(f"mysql://{mysql_user}:wrong-{PASSWORD}@127.0.0.1", 5, GUARD)

    assert outcome.error_kind is ErrorKind.AUTH
    assert outcome.error is not None
    assert PASSWORD not in outcome.error


@needs_mysql
async def test_an_unknown_mysql_database_is_a_database_error(mysql_user: str) -> None:
    outcome = await probe_mysql("mysql://root@127.0.0.1/no_such_db_h35", 5, GUARD)

    assert outcome.error_kind in (ErrorKind.DATABASE, ErrorKind.AUTH)


async def test_a_stopped_mysql_is_down_with_a_connect_error() -> None:
    outcome = await probe_mysql(f"mysql://root@127.0.0.1:{free_port()}", 5, GUARD)

    assert outcome.error_kind is ErrorKind.CONNECT


async def test_a_server_that_is_not_mysql_is_a_protocol_error(junk_server: int) -> None:
    outcome = await probe_mysql(f"mysql://root@127.0.0.1:{junk_server}", 5, GUARD)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.PROTOCOL, outcome.error


async def test_a_loopback_mysql_is_refused_when_private_targets_are_not_allowed() -> None:
    guard = NetworkGuard(allow_private=False)
    outcome = await probe_mysql("mysql://root@127.0.0.1", 5, guard)

    assert outcome.error_kind is ErrorKind.REFUSED_TARGET


@needs_redis_server
async def test_a_redis_that_answers_ping_is_up_with_its_version(
    redis_with_password: tuple[int, Process],
) -> None:
    port, _server = redis_with_password
    outcome = await probe_redis(f"redis://:{PASSWORD}@127.0.0.1:{port}/0", 5, GUARD)

    assert outcome.ok, outcome.error
    assert outcome.details["serverVersion"]


@needs_redis_server
async def test_a_wrong_redis_password_is_an_auth_failure_that_does_not_echo_it(
    redis_with_password: tuple[int, Process],
) -> None:
    port, _server = redis_with_password
    outcome = await probe_redis(f"redis://:wrong-{PASSWORD}@127.0.0.1:{port}", 5, GUARD)

    assert outcome.error_kind is ErrorKind.AUTH
    assert outcome.error is not None
    assert PASSWORD not in outcome.error


@needs_redis_server
async def test_a_redis_without_the_password_is_an_auth_failure(
    redis_with_password: tuple[int, Process],
) -> None:
    port, _server = redis_with_password
    outcome = await probe_redis(f"redis://127.0.0.1:{port}", 5, GUARD)

    assert outcome.error_kind is ErrorKind.AUTH


@needs_redis_server
async def test_a_stopped_redis_is_down_with_a_connect_error(
    redis_with_password: tuple[int, Process],
) -> None:
    port, server = redis_with_password
    server.terminate()
    await server.wait()
    outcome = await probe_redis(f"redis://:{PASSWORD}@127.0.0.1:{port}", 5, GUARD)

    assert outcome.error_kind is ErrorKind.CONNECT


async def test_a_server_that_is_not_redis_is_a_protocol_error(junk_server: int) -> None:
    outcome = await probe_redis(f"redis://127.0.0.1:{junk_server}", 5, GUARD)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.PROTOCOL, outcome.error


async def test_a_loopback_redis_is_refused_when_private_targets_are_not_allowed() -> None:
    outcome = await probe_redis("redis://127.0.0.1", 5, NetworkGuard(allow_private=False))

    assert outcome.error_kind is ErrorKind.REFUSED_TARGET


def test_a_password_is_scrubbed_from_text_in_plain_and_url_quoted_forms() -> None:
    target = Target.parse("postgresql://u:p%40ss%2Fw@db.example.com/app", 5432)

    assert target.password == "p@ss/w"
    assert target.scrub("dsn u:p%40ss%2Fw@db and p@ss/w") == "dsn u:****@db and ****"


@needs_redis_server
async def test_a_rediss_url_speaks_tls_checked_against_the_host_name(
    tmp_path: Path, ca: trustme.CA, ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    certificate = ca.issue_cert("localhost")
    certificate.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    certificate.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    # Python's default context reads the trust store from here: the test's own CA.
    monkeypatch.setenv("SSL_CERT_FILE", ca_file)
    port = free_port()
    server = await asyncio.create_subprocess_exec(
        *("redis-server", "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1"),
        *("--tls-cert-file", str(tmp_path / "cert.pem")),
        *("--tls-key-file", str(tmp_path / "key.pem"), "--tls-auth-clients", "no"),
        *("--tls-ca-cert-file", ca_file, "--save", "", "--dir", str(tmp_path)),
        stdout=asyncio.subprocess.PIPE,
    )
    assert server.stdout is not None
    try:
        async with asyncio.timeout(10):
            while b"Ready to accept connections" not in (line := await server.stdout.readline()):
                if not line:
                    pytest.skip("this redis-server has no TLS")
        named = await probe_redis(f"rediss://localhost:{port}", 5, GUARD)
        by_address = await probe_redis(f"rediss://127.0.0.1:{port}", 5, GUARD)
    finally:
        if server.returncode is None:
            server.terminate()
        await server.wait()

    assert named.ok, named.error
    assert by_address.error_kind is ErrorKind.TLS
