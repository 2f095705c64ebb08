"""Test harness: a real database (SQLite or PostgreSQL), the real app, a real SMTP server.

Pick the backend with ``UPWATCH_TEST_BACKEND=sqlite|postgresql`` (default sqlite). PostgreSQL is
reached at ``UPWATCH_TEST_POSTGRES_URL``; when it cannot be reached the PostgreSQL run skips with
the reason, unless ``UPWATCH_REQUIRE_POSTGRES=1`` (as in CI), which makes it an error.
"""

from __future__ import annotations

import asyncio
import faulthandler
import gc
import os
import re
import shutil
import socket
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import message_from_bytes
from email.header import decode_header, make_header
from email.message import Message
from pathlib import Path
from typing import Any

import httpx
import pytest
from _pytest.faulthandler import fault_handler_stderr_fd_key
from aiosmtpd.controller import Controller
from asgi_lifespan import LifespanManager
from fastapi import FastAPI
from fastapi.dependencies import models as fastapi_dependency_models
from hypothesis import settings as hypothesis_settings
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.factories import PASSWORD, InProject, Target
from tests.receivers import Receiver
from upwatch.app import create_app
from upwatch.config import Settings, async_database_url
from upwatch.kit.clock import ManualClock
from upwatch.kit.db import Base
from upwatch.migrations import upgrade
from upwatch.runtime import Runtime

# No test fails on time (docs/testing.md): Hypothesis' per-example deadline is a speed check,
# and on a loaded 2-core machine an example took 377 ms against its 200 ms (CI, 2026-11-25).
hypothesis_settings.register_profile("upwatch", deadline=None)
hypothesis_settings.load_profile("upwatch")

BACKEND = os.environ.get("UPWATCH_TEST_BACKEND", "sqlite")
POSTGRES_URL = os.environ.get(
    "UPWATCH_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
# The schemathesis run is one long test: its own bound, above the per-test one (docs/testing.md).
FUZZ_TIMEOUT = float(os.environ.get("UPWATCH_FUZZ_TIMEOUT", "1200"))
# How long `eventually` waits for a condition by default: a mail over the test's SMTP server
# took more than 10 s in a clean-clone run on a loaded 2-core machine.
WAIT_SECONDS = float(os.environ.get("UPWATCH_TEST_WAIT_SECONDS", "30"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests whose fixtures never reach ``database_url``: they run the same whatever
    the backend, so scripts/test runs them in the SQLite pass only."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "database_url" not in fixtures and "migrated_database" not in fixtures:
            item.add_marker(pytest.mark.db_independent)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test with its own, longer timeout marker must not be cut by the one
    faulthandler_timeout of the run: its last-resort bound is the outer timeout of scripts/test."""
    if item.get_closest_marker("timeout") is not None:
        faulthandler.cancel_dump_traceback_later()


@pytest.hookimpl(trylast=True)
def pytest_exception_interact(node: pytest.Item | pytest.Collector) -> None:
    """Keep the watchdog on after a failure. pytest-timeout and faulthandler_timeout both stop
    guarding a test once it has failed (they make room for a debugger), so a teardown that then
    hangs (an event loop waiting on a task that will not stop) would hang the whole run; re-arm
    faulthandler's exit, which pytest's plugin disarms just before this hook."""
    timeout = float(node.config.getini("faulthandler_timeout") or 0)
    if timeout > 0 and fault_handler_stderr_fd_key in node.config.stash:
        faulthandler.dump_traceback_later(
            timeout, exit=True, file=node.config.stash[fault_handler_stderr_fd_key]
        )


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Let a finished test's app go. FastAPI keeps the last 4,096 endpoint and dependency
    callables it classified in module-level caches, and an endpoint made inside
    ``create_app`` (the offline docs pages) closes over its app, so every app a test made
    stayed alive with its engine, settings and routes: the run grew by gigabytes and a full
    garbage collection late in it took 12-16 s. One app per process in production keeps a
    handful of entries."""
    for cached in (
        fastapi_dependency_models._is_gen_callable_cached,
        fastapi_dependency_models._is_async_gen_callable_cached,
        fastapi_dependency_models._is_coroutine_callable_cached,
    ):
        cached.cache_clear()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _postgres_admin(statement: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(POSTGRES_URL, timeout=5)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One migrated database for the whole run. On SQLite it is a template each test copies;
    on PostgreSQL the tests share it and each empties it afterwards."""
    if BACKEND == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'template.db'}"
        asyncio.run(_migrate(url))
        yield url
        return
    name = f"upwatch_test_{uuid.uuid4().hex[:12]}"
    try:
        asyncio.run(_postgres_admin(f'CREATE DATABASE "{name}"'))
    except (OSError, ImportError) as exc:
        reason = f"PostgreSQL not reachable at {POSTGRES_URL}: {exc}"
        if os.environ.get("UPWATCH_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    base, _, _ = POSTGRES_URL.rpartition("/")
    url = f"{base}/{name}"
    asyncio.run(_migrate(url))
    yield url
    asyncio.run(_postgres_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def database_url(migrated_database: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The test's database. On SQLite a copy of the migrated template of its own: a
    connection some test leaves in a transaction cannot lock every later test out (a CI run
    errored on every test after tests/engine/test_roles.py that way)."""
    if BACKEND != "sqlite":
        return migrated_database
    template = Path(migrated_database.removeprefix("sqlite:///"))
    copy = tmp_path_factory.mktemp("db") / "upwatch.db"
    for suffix in ("", "-wal"):
        if Path(f"{template}{suffix}").exists():
            shutil.copyfile(f"{template}{suffix}", f"{copy}{suffix}")
    return f"sqlite:///{copy}"


async def _migrate(url: str) -> None:
    engine = create_async_engine(async_database_url(url))
    try:
        await upgrade(engine)
    finally:
        await engine.dispose()


async def _reap_leftover_tasks(say: Callable[[str], None], grace_seconds: float = 10.0) -> None:
    """Cancel what the app left running after its stop, and say what it was.

    A task that outlives its app can hold a database connection inside a transaction: on the
    one SQLite file of the run, every later test then meets "database is locked" (a CI run
    went that way after tests/engine/test_roles.py). Cancelling it here ends its transaction
    while its loop still runs; its name and stack go to the terminal so the cause can be found."""
    current = asyncio.current_task()
    left = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    for task in left:
        stack = "".join(
            f"\n    {f.f_code.co_filename}:{f.f_lineno} {f.f_code.co_name}"
            for f in task.get_stack()
        )
        say(f"[harness] task left after the app stopped: {task.get_name()}{stack}")
        task.cancel()
    if left:
        _, pending = await asyncio.wait(left, timeout=grace_seconds)
        for task in pending:
            say(f"[harness] task would not stop: {task.get_name()}")


async def _empty_tables(url: str) -> None:
    engine = create_async_engine(async_database_url(url))
    try:
        async with engine.begin() as connection:
            tables = [t.name for t in reversed(Base.metadata.sorted_tables)]
            if BACKEND == "postgresql":
                await connection.execute(text(f"TRUNCATE {', '.join(tables)} CASCADE"))
            else:
                for table in tables:
                    await connection.execute(text(f"DELETE FROM {table}"))  # noqa: S608
    finally:
        await engine.dispose()


def subject_of(message: Message) -> str:
    """A received message's subject, its encoded words decoded (RFC 2047)."""
    return str(make_header(decode_header(str(message["Subject"]))))


def text_of(message: Message) -> str:
    """A received single-part message's text."""
    payload = message.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode()


@dataclass
class Mailbox:
    """What a real SMTP server (aiosmtpd) received."""

    messages: list[Message] = field(default_factory=list)

    async def handle_DATA(self, _server: Any, _session: Any, envelope: Any) -> str:  # noqa: N802
        self.messages.append(message_from_bytes(envelope.content))
        return "250 Message accepted for delivery"

    def to(self, address: str) -> list[Message]:
        return [m for m in self.messages if address in str(m["To"])]

    async def wait_for(self, address: str, count: int = 1) -> list[Message]:
        await eventually(lambda: len(self.to(address)) >= count)
        return self.to(address)

    def invitation_token(self, address: str) -> str:
        """The token of the latest project invitation mailed to ``address``."""
        return self._token(address, r"Invitation token: ([\w-]+)")

    def reset_token(self, address: str) -> str:
        """The token in the latest password-reset link mailed to ``address``."""
        return self._token(address, r"/reset-password\?token=([\w-]+)")

    def _token(self, address: str, pattern: str) -> str:
        body = self.to(address)[-1].get_payload(decode=True)
        assert isinstance(body, bytes)
        match = re.search(pattern, body.decode())
        assert match, body
        return match.group(1)


async def eventually(
    check: Callable[[], bool] | Callable[[], Awaitable[bool]], within: float | None = None
) -> None:
    """Wait until ``check`` holds; fail after ``within`` seconds, by default
    UPWATCH_TEST_WAIT_SECONDS (a bound, not a speed check)."""
    bound = WAIT_SECONDS if within is None else within
    deadline = asyncio.get_running_loop().time() + bound
    while True:
        result = check()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


class SmtpServer:
    def __init__(self, port: int) -> None:
        self.port = port
        self.mailbox = Mailbox()
        self._controller: Controller | None = None

    def start(self) -> None:
        self._controller = Controller(self.mailbox, hostname="127.0.0.1", port=self.port)
        self._controller.start()

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None


REDIS_URL = os.environ.get("UPWATCH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def redis_unreachable() -> str | None:
    """None when Redis answers at ``REDIS_URL``, else why not."""
    from urllib.parse import urlsplit

    address = urlsplit(REDIS_URL)
    try:
        with socket.create_connection((address.hostname, address.port or 6379), timeout=1):
            return None
    except OSError as exc:
        return f"Redis not reachable at {address.hostname}:{address.port}: {exc}"


async def forget_redis_keys(url: str, prefix: str) -> None:
    """Delete the keys a test made under a prefix of its own."""
    from redis.asyncio import Redis

    redis = Redis.from_url(url)
    try:
        keys = [key async for key in redis.scan_iter(match=f"{prefix}:*")]
        if keys:
            await redis.delete(*keys)
    finally:
        await redis.aclose()


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Any]:
    """A client of the test Redis (``redis.asyncio.Redis``)."""
    from redis.asyncio import Redis

    client = Redis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
def redis_url() -> str:
    """Redis for the tests that need it: they skip with the reason when it is away, or fail
    with ``UPWATCH_REQUIRE_REDIS=1`` (as in CI). Tests share database 15 and keep apart by
    key prefix."""
    reason = redis_unreachable()
    if reason and os.environ.get("UPWATCH_REQUIRE_REDIS") == "1":
        pytest.fail(reason)
    if reason:
        pytest.skip(reason)
    return REDIS_URL


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    server = SmtpServer(free_port())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def service_env(database_url: str) -> Iterator[dict[str, str]]:
    """The environment of an `upwatch` process the test starts, on the test's database. On
    SQLite nothing is configured at all: the embedded default under ./data is used."""
    from tests.live_server import clean_env  # it imports this module

    if BACKEND == "sqlite":
        yield clean_env()
        return
    yield clean_env(UPWATCH_DATABASE_URL=database_url)
    asyncio.run(_empty_tables(database_url))


@pytest.fixture
def late_smtp() -> Iterator[SmtpServer]:
    """An SMTP server whose port is known but which is not listening yet."""
    server = SmtpServer(free_port())
    yield server
    server.stop()


@pytest.fixture
def mailbox(smtp: SmtpServer) -> Mailbox:
    return smtp.mailbox


@pytest.fixture
async def target() -> AsyncIterator[Target]:
    """A real HTTP server on loopback to point monitors at."""
    server = Target()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    """A real HTTP server on loopback that records what webhooks and chat channels post."""
    server = await Receiver().start()
    yield server
    await server.stop()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime.now(UTC))


def make_settings(database_url: str, data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "data_dir": data_dir,
        "secret_key": "test-secret-key-that-is-long-enough-for-hs256",
        "public_url": "http://upwatch.test",
        "migrate_on_start": False,
        # Cheap Argon2 parameters: the same algorithm, a fraction of the cost.
        "argon2_time_cost": 1,
        "argon2_memory_kib": 64,
        "argon2_parallelism": 1,
        "mail_poll_seconds": 0.2,
        # The test's SMTP server answers at once; a loaded machine can still take seconds.
        "smtp_timeout_seconds": 10.0,
        # Tests send traffic to this machine only, whatever targets they create.
        "targets_loopback_only": True,
        # Probes in the test's process, on its ManualClock; the worker processes have tests
        # of their own (tests/engine/test_worker_process.py).
        "worker_processes": 0,
        # No early dispatch: with a ManualClock a new monitor's first check (due a stable
        # fraction of 3 s after now) then never comes due by itself, so the results a test
        # ingests are all there are. With the default lead, one monitor in six was checked at
        # once, and a status page test met an incident it did not make.
        "check_dispatch_lead_seconds": 0.0,
        # Results stored within a quarter second: tests wait for statuses after each check.
        "ingest_max_wait_seconds": 0.25,
        # Counts written with each batch, so statistics read right after ingesting are whole;
        # tests of the deferred flush opt in (tests/engine/test_aggregates.py).
        "aggregate_flush_seconds": 0.0,
        # The retention job runs on the test's calls (tests/retention), not on its own.
        "retention": False,
        # Tests read /metrics without a token; the closed default has tests of its own
        # (tests/operations/test_errors_and_operations.py).
        "metrics_public": True,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    """No change by default; a test module or class changes the app's settings with its own
    declaration, ``settings_overrides = overriding(...)`` (tests/app_settings.py)."""
    return {}


@pytest.fixture
def settings(
    database_url: str,
    tmp_path: Path,
    smtp: SmtpServer,
    settings_overrides: dict[str, Any],
) -> Settings:
    values = {"smtp_host": "127.0.0.1", "smtp_port": smtp.port, **settings_overrides}
    return make_settings(database_url, tmp_path, **values)


def terminal_line(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Write a line to the terminal past output capture (what a passing test prints is lost)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    return (lambda line: reporter.write_line(line)) if reporter else (lambda line: None)


def lifespan(application: FastAPI) -> LifespanManager:
    """Start and stop an app as its server would. A stop waits out each role's grace: a loaded
    machine needs more than asgi-lifespan's default of 5 s."""
    return LifespanManager(application, startup_timeout=60, shutdown_timeout=60)


@pytest.fixture
async def app(
    settings: Settings, clock: ManualClock, database_url: str, request: pytest.FixtureRequest
) -> AsyncIterator[FastAPI]:
    application = create_app(settings, clock)
    try:
        # A slow stop must not leave rows behind for the next test.
        async with lifespan(application):
            yield application
    finally:
        try:
            await _reap_leftover_tasks(terminal_line(request))
        finally:
            if BACKEND != "sqlite":  # SQLite: the test's own copy, left behind
                await _empty_tables(database_url)


@pytest.fixture
def runtime(app: FastAPI) -> Runtime:
    result: Runtime = app.state.runtime
    return result


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://upwatch.test") as c:
        yield c


@dataclass
class Account:
    id: str
    email: str
    password: str
    access_token: str
    refresh_token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.access_token}"}


SignUp = Callable[..., Awaitable[Account]]


@pytest.fixture
def sign_up(client: httpx.AsyncClient) -> SignUp:
    async def _sign_up(email: str, password: str = PASSWORD, **extra: Any) -> Account:
        response = await client.post(
            "/auth/signup", json={"email": email, "password": password, **extra}
        )
        assert response.status_code == 201, response.text
        body = response.json()
        return Account(
            id=body["user"]["id"],
            email=body["user"]["email"],
            password=password,
            access_token=body["access_token"],
            refresh_token=body["refresh_token"],
        )

    return _sign_up


@pytest.fixture
async def alice(sign_up: SignUp) -> Account:
    """Alice, signed up with her own address (unverified), in no project: the one account of
    a test that needs no other (``cast`` signs up its own Alice)."""
    return await sign_up("alice@example.com")


@pytest.fixture
def make_admin(runtime: Runtime) -> Callable[[Account, str], Awaitable[None]]:
    """Promote an account directly in the database, as `upwatch admin create` would."""

    async def _promote(account: Account, role: str = "admin") -> None:
        from upwatch.accounts.repository import UserRepository

        async with runtime.db.sessionmaker() as session:
            user = await UserRepository(session).get(account.id)
            assert user is not None
            user.roles = ["user", role]
            await session.commit()

    return _promote


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    """The response is an RFC 9457 problem document with this status."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["type"].startswith("https://upwatch.dev/problems/")
    assert body["title"]
    return body


@dataclass
class Cast:
    """Alice owns a project, Bob is a member of it, Charlie must see nothing of it."""

    alice: Account
    bob: Account
    charlie: Account
    project_id: str


@pytest.fixture
async def cast(client: httpx.AsyncClient, sign_up: SignUp, mailbox: Mailbox) -> Cast:
    alice = await sign_up("alice@example.com", firstName="Alice")
    bob = await sign_up("bob@example.com", firstName="Bob")
    charlie = await sign_up("charlie@example.com", firstName="Charlie")
    created = await client.post("/projects", headers=alice.headers, json={"name": "Shop"})
    assert created.status_code == 201, created.text
    project_id = created.json()["id"]
    invited = await client.post(
        f"/projects/{project_id}/users", headers=alice.headers, json={"email": bob.email}
    )
    assert invited.status_code == 201, invited.text
    # Bob's address is not verified, so he joins through the link mailed to him.
    await mailbox.wait_for(bob.email)
    accepted = await client.post(
        "/projects/invitations/accept",
        headers=bob.headers,
        json={"token": mailbox.invitation_token(bob.email)},
    )
    assert accepted.status_code == 200, accepted.text
    return Cast(alice=alice, bob=bob, charlie=charlie, project_id=project_id)


@pytest.fixture
async def admin(sign_up: SignUp, make_admin: Callable[[Account, str], Awaitable[None]]) -> Account:
    """An account at admin@example.com with the admin role."""
    account = await sign_up("admin@example.com")
    await make_admin(account, "admin")
    return account


@pytest.fixture
def as_alice(client: httpx.AsyncClient, cast: Cast) -> InProject:
    """Alice making things in the cast's project, which she owns."""
    return InProject(client, cast.alice, cast.project_id)


@pytest.fixture
def verify_email(runtime: Runtime) -> Callable[[Account], Awaitable[None]]:
    """Mark an account's address verified directly in the database."""

    async def _verify(account: Account) -> None:
        from upwatch.accounts.repository import UserRepository

        async with runtime.db.sessionmaker() as session:
            user = await UserRepository(session).get(account.id)
            assert user is not None
            user.is_email_verified = True
            await session.commit()

    return _verify


@pytest.fixture
def collect_cut_connections() -> Iterator[None]:
    """For tests that cut database connections on purpose (a proxy resets them, a SQLite file
    disappears under them): a driver connection whose socket was reset mid-statement, or
    whose connect failed half-way, is dropped by the pool without a close of its own and
    warns when garbage-collected, at whatever moment that happens, often in a later test.
    The warning is expected for the whole test (the collector may run in the middle of it, as
    CI once showed), and everything it cut is collected at its end, so the warning is not
    mistaken for a leak in an unrelated test either."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        yield
        gc.collect()
