"""Engine, declarative base, column types and the per-request session that commits."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

from sqlalchemy import JSON, DateTime, MetaData, String, event
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Dialect, ExceptionContext
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator
from starlette.requests import Request

from upwatch.config import Settings
from upwatch.kit.errors import DatabaseBusy, DatabaseUnavailable
from upwatch.kit.ids import new_id

log = logging.getLogger(__name__)


_T = TypeVar("_T")


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite keeps no zone of its own)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
    }


class IdMixin:
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)


class TimestampMixin:
    created_at: Mapped[datetime] = mapped_column(default=lambda: datetime.now(UTC))
    updated_at: Mapped[datetime] = mapped_column(
        default=lambda: datetime.now(UTC), onupdate=lambda: datetime.now(UTC)
    )


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # The driver's own implicit BEGIN (deferred, and only before a write) is turned off:
    # _sqlite_begin says how each transaction begins.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=10000")
    # WAL lets readers run beside the single writer; foreign keys make cascades real.
    cursor.execute("PRAGMA journal_mode")
    if cursor.fetchone()[0] != "wal":
        cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


# The execution option that makes a SQLite transaction a writer's from its first statement.
WRITES = "upwatch_writes"


def _sqlite_begin(connection: Connection) -> None:
    """A writer's transaction takes SQLite's write lock up front (``BEGIN IMMEDIATE``), so
    it waits its turn (busy_timeout) behind another writer. A deferred one that read first
    fails at once with "database is locked" when it tries to write after another writer
    committed: SQLite cannot let it write from its older snapshot, and waiting would not
    help. Readers keep ``BEGIN`` (deferred), so reads never queue behind the ingester."""
    immediate = connection.get_execution_options().get(WRITES, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


# PostgreSQL SQLSTATEs that say the server cannot serve now, whatever the statement: connection
# exceptions (08, bar 08P01, a protocol bug), insufficient resources (53: too many connections,
# disk full) and shutdown or start-up (57P01-57P05).
_PG_UNAVAILABLE = ("08", "53", "57P")
# Of those, the ones after which the connection itself is gone.
_PG_CONNECTION_GONE = ("08", "57P")
# SQLite primary result codes of the same kind: READONLY, IOERR, FULL, CANTOPEN ("unable to
# open database file").
_SQLITE_UNAVAILABLE = frozenset({8, 10, 13, 14})
# BUSY and LOCKED ("database is locked"): another writer held the lock past the busy timeout,
# or committed after this transaction read (then at once: it cannot write from its snapshot).
# PostgreSQL's serialization failure and deadlock: the same verdict, from row locks.
_PG_CONFLICT = frozenset({"40001", "40P01"})
_SQLITE_BUSY = frozenset({5, 6})


def _causes(error: BaseException) -> Iterator[BaseException]:
    """``error`` and what it wraps, outermost first: SQLAlchemy's ``orig``, then ``__cause__``."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = getattr(current, "orig", None) or current.__cause__


def _describe(error: BaseException) -> str:
    """The innermost error's type and text: what the network or the server said."""
    *_, root = _causes(error)
    return f"{type(root).__name__}: {root}".strip().rstrip(":")


def busy(error: BaseException) -> bool:
    """Whether ``error`` says concurrent writes kept this transaction from running now (and
    running it again can succeed): SQLite's "database is locked", PostgreSQL's serialization
    failure or deadlock."""
    for current in _causes(error):
        if isinstance(current, sqlite3.Error):
            code = getattr(current, "sqlite_errorcode", None)
            return isinstance(code, int) and code & 0xFF in _SQLITE_BUSY
        if getattr(current, "sqlstate", None) in _PG_CONFLICT:
            return True
    return False


def unavailability(error: BaseException) -> tuple[str, bool] | None:
    """Why ``error`` means the database cannot be used right now, and whether the connection
    is gone with it; None for any other error (a bug, a constraint, bad SQL), which stays a 500.

    Follows the chain SQLAlchemy and the drivers build to the error the network or the
    server raised.
    """
    for current in _causes(error):
        if isinstance(current, OSError):  # refused, reset, unresolvable, timed out
            return _describe(current), True
        sqlstate = getattr(current, "sqlstate", None)
        if (
            isinstance(sqlstate, str)
            and sqlstate.startswith(_PG_UNAVAILABLE)
            and sqlstate != "08P01"
        ):
            return _describe(current), sqlstate.startswith(_PG_CONNECTION_GONE)
        if isinstance(current, sqlite3.Error):
            code = getattr(current, "sqlite_errorcode", None)
            if isinstance(code, int) and code & 0xFF in _SQLITE_UNAVAILABLE:
                return _describe(current), False
    return None


class Reachability:
    """Whether the database answered the last time it was asked: logs one line when it stops
    answering and one when it answers again, so an outage is not a stack per request."""

    def __init__(self) -> None:
        self.down_because: str | None = None

    @property
    def is_down(self) -> bool:
        return self.down_because is not None

    def lost(self, reason: str) -> DatabaseUnavailable:
        if self.down_because is None:
            self.down_because = reason
            log.error("database unreachable: %s", reason)
        return DatabaseUnavailable(reason)

    def regained(self) -> None:
        if self.down_because is not None:
            self.down_because = None
            log.warning("database reachable again")


class WorkSession(AsyncSession):
    """A session for background roles whose statements run to their end even when the role
    is cancelled meanwhile (a stop, a restart): a cancellation that lands inside the driver
    invalidates the connection, which may then be dropped without being closed, holding a
    write lock (SQLite stays locked) until the garbage collector finds it. Background
    statements are short, so finishing them costs a stop little. Requests keep the plain
    session: a long query there must stay cancellable."""

    _inflight: asyncio.Future[Any] | None = None

    async def _to_the_end(self, work: Awaitable[_T]) -> _T:
        task = asyncio.ensure_future(work)
        self._inflight = task
        return await asyncio.shield(task)

    async def _settled(self) -> None:
        if self._inflight is not None and not self._inflight.done():
            await asyncio.wait([self._inflight])

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        return await self._to_the_end(super().execute(*args, **kwargs))

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        return await self._to_the_end(super().get(*args, **kwargs))

    async def flush(self, *args: Any, **kwargs: Any) -> None:
        await self._to_the_end(super().flush(*args, **kwargs))

    async def commit(self) -> None:
        await self._to_the_end(super().commit())

    async def rollback(self) -> None:
        await self._settled()
        await self._to_the_end(super().rollback())

    async def close(self) -> None:
        await self._settled()  # never close under a statement still running
        await self._to_the_end(super().close())


class Database:
    def __init__(self, settings: Settings) -> None:
        settings.ensure_data_dir()
        # pool_pre_ping: a connection the server closed (a restart) is replaced at checkout
        # instead of failing the request that drew it.
        kwargs: dict[str, Any] = {"pool_pre_ping": not settings.is_sqlite}
        self.engine: AsyncEngine = create_async_engine(settings.sqlalchemy_url, **kwargs)
        self.reachability = Reachability()
        sync_engine = self.engine.sync_engine
        if settings.is_sqlite:
            event.listen(sync_engine, "connect", _sqlite_pragmas)
            event.listen(sync_engine, "begin", _sqlite_begin)
        event.listen(sync_engine, "do_connect", self._connect)
        event.listen(sync_engine, "handle_error", self._on_error)
        event.listen(sync_engine, "after_cursor_execute", self._answered)
        # On SQLite a transaction of these begins with the write lock (see _sqlite_begin): a
        # session that may write is safe beside any other writer.
        writer = self.engine.execution_options(**{WRITES: True})
        self.sessionmaker = async_sessionmaker(writer, expire_on_commit=False)
        # For transactions that only read (GET requests): they never wait for a writer.
        self.readsession = async_sessionmaker(self.engine, expire_on_commit=False)
        # Background roles' sessions (see WorkSession); ``workreader`` for those that only
        # read (a poll for due rows, a schedule load), which need not wait for the ingester.
        self.worksession = async_sessionmaker(writer, expire_on_commit=False, class_=WorkSession)
        self.workreader = async_sessionmaker(
            self.engine, expire_on_commit=False, class_=WorkSession
        )

    def _connect(self, dialect: Dialect, _record: Any, cargs: Any, cparams: Any) -> Any:
        """Connect as SQLAlchemy would; a network error on the way (which drivers raise bare,
        outside SQLAlchemy's error handling) becomes DatabaseUnavailable."""
        try:
            return dialect.connect(*cargs, **cparams)
        except OSError as exc:
            raise self.reachability.lost(_describe(exc)) from exc

    def _on_error(self, context: ExceptionContext) -> BaseException | None:
        if context.is_pre_ping:
            # The pool replaces the connection by itself; if reconnecting fails, that
            # failure comes here (or to _connect) again and is reported then.
            return None
        if not isinstance(context.original_exception, Exception):
            # A cancellation (SQLAlchemy counts it as a disconnect) must stay one.
            return None
        if busy(context.original_exception):
            return DatabaseBusy(_describe(context.original_exception))
        found = unavailability(context.original_exception)
        if found is None:
            if not context.is_disconnect:
                return None
            found = (_describe(context.original_exception), True)
        reason, connection_gone = found
        if connection_gone and not context.is_disconnect:
            # Invalidate the connection and the pool, so the next request reconnects.
            context.is_disconnect = True
        return self.reachability.lost(reason)

    def _answered(self, *_args: Any) -> None:
        self.reachability.regained()

    async def dispose(self, settle_seconds: float = 5.0) -> None:
        """Close every pooled connection, once those still in use have come back.

        ``engine.dispose()`` closes only the connections in the pool: one checked out at that
        moment (a role finishing its last statement at shutdown) is later returned to the
        discarded pool and never closed, so the server keeps its session and the driver's
        connection is left to the garbage collector. Waiting for them to come back, up to
        ``settle_seconds``, closes them all.
        """
        pool = self.engine.sync_engine.pool
        in_use: Callable[[], int] = getattr(pool, "checkedout", lambda: 0)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settle_seconds
        # Polled, not woken by a pool "checkin" listener: adding a listener while another
        # task is suspended inside that pool's event dispatch (an async driver's connect
        # awaits there) breaks the dispatch ("deque mutated during iteration").
        while in_use() and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        if in_use():
            log.warning(
                "closing the database with %d connections still in use after %s s; they "
                "close when the process ends",
                in_use(),
                settle_seconds,
            )
        await self.engine.dispose()


def dialect_insert(session: AsyncSession) -> Callable[..., Any]:
    """The INSERT of the session's database, which has ON CONFLICT (both dialects spell it
    alike)."""
    name = session.get_bind().dialect.name
    return pg_insert if name == "postgresql" else sqlite_insert


OnCommit = Callable[[], None]


def after_commit(session: AsyncSession, callback: OnCommit) -> None:
    """Run ``callback`` once the request's transaction has committed; dropped on rollback."""
    session.info.setdefault("on_commit", []).append(callback)


async def commit_and_notify(session: AsyncSession) -> None:
    await session.commit()
    callbacks: list[OnCommit] = session.info.pop("on_commit", [])
    for callback in callbacks:
        callback()


async def request_session(request: Request) -> AsyncIterator[AsyncSession]:
    """The request boundary: commit on success, roll back (dropping queued effects) on error.

    A request that may write (any method but GET, HEAD and OPTIONS) holds a writer's
    transaction from its first statement: on SQLite it waits its turn for the write lock
    instead of failing beside a busy ingester, so it must not wait on the network inside one
    (``end_transaction`` first). A GET that writes asks for ``writing_session``.

    An error raised with ``keep_changes = True`` still commits: a detected refresh-token
    replay must revoke the token family even though the request itself is refused.
    """
    reads = request.method in ("GET", "HEAD", "OPTIONS")
    async with _boundary(request, writes=not reads) as session:
        yield session


async def writing_session(request: Request) -> AsyncIterator[AsyncSession]:
    """``request_session`` for a GET that writes (a heartbeat sent as a plain fetch)."""
    async with _boundary(request, writes=True) as session:
        yield session


DISCARD = "upwatch_discard"


def discard_changes(session: AsyncSession) -> None:
    """End the request with a rollback though it answers normally: a page that shows a
    refused form itself (the web console) keeps nothing the refused action did."""
    session.info[DISCARD] = True
    session.info.pop("on_commit", None)


async def end_transaction(session: AsyncSession) -> None:
    """Commit what the request did so far, before it waits on the network (a probe, a test
    message): a writer's transaction would hold SQLite's write lock, and every other writer
    with it, for as long as the target takes. The next statement begins a new one."""
    await commit_and_notify(session)


@contextlib.asynccontextmanager
async def _boundary(request: Request, writes: bool) -> AsyncIterator[AsyncSession]:
    database: Database = request.app.state.runtime.db
    async with (database.sessionmaker if writes else database.readsession)() as session:
        try:
            try:
                yield session
            except Exception as exc:
                if getattr(exc, "keep_changes", False):
                    await commit_and_notify(session)
                else:
                    session.info.pop("on_commit", None)
                    await session.rollback()
                raise
            else:
                if session.info.pop(DISCARD, False):
                    await session.rollback()
                else:
                    await commit_and_notify(session)
        except PoolTimeout as exc:
            # Every pooled connection stayed busy or stuck connecting: the database is not
            # serving, which is an outage, not a bug of this request.
            raise database.reachability.lost(_describe(exc)) from exc
