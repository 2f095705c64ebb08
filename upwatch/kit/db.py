"""Engine, declarative base, column types and the per-request session that commits."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, DateTime, MetaData, String, event
from sqlalchemy.engine import Dialect
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


def new_id() -> str:
    return uuid.uuid4().hex


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
    cursor = dbapi_connection.cursor()
    # WAL lets readers run beside the single writer; foreign keys make cascades real.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


class Database:
    def __init__(self, settings: Settings) -> None:
        settings.ensure_data_dir()
        kwargs: dict[str, Any] = {"pool_pre_ping": not settings.is_sqlite}
        self.engine: AsyncEngine = create_async_engine(settings.sqlalchemy_url, **kwargs)
        if settings.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        self.sessionmaker = async_sessionmaker(self.engine, expire_on_commit=False)

    async def dispose(self) -> None:
        await self.engine.dispose()


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

    An error raised with ``keep_changes = True`` still commits: a detected refresh-token
    replay must revoke the token family even though the request itself is refused.
    """
    database: Database = request.app.state.runtime.db
    async with database.sessionmaker() as session:
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
            await commit_and_notify(session)
