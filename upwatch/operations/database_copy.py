"""``upwatch copy-data --to URL``: everything the configured database holds (accounts,
projects, monitors, their history, incidents, alerts, pages) copied into another, empty one,
e.g. from the embedded SQLite to PostgreSQL when a service outgrows it.

The copy reads the source in one transaction (one consistent snapshot, even beside a running
service; what it writes afterwards is not carried) and writes the target in one transaction
(all of it or nothing). The target is migrated to this version's schema first, and must be
empty: a copy never merges two services' data. Rows keep their ids; PostgreSQL's sequences
are moved past the largest copied id.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer, Table, func, insert, inspect, select, text
from sqlalchemy import Sequence as SchemaSequence
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection

from upwatch.config import Settings, parsed_database_url
from upwatch.kit.errors import DatabaseUnavailable

# The target when --to is not given: an environment variable keeps a password out of `ps`.
TO_VARIABLE = "UPWATCH_COPY_TO"
# Rows read and written at a time: large enough that a batch's round trip is amortised, small
# enough that memory stays flat (a check result row is a few hundred bytes).
BATCH_ROWS = 5000


class Refused(Exception):
    """The copy will not start (exit 2); the message says why and what to do."""


def _tables() -> Sequence[Table]:
    import upwatch.models  # noqa: F401  (registers every table on the metadata)
    from upwatch.kit.db import Base

    return Base.metadata.sorted_tables  # parents before the rows that name them


def _described(url: str) -> str:
    """The URL without its password or query (which may carry one), for messages."""
    return make_url(url).set(query={}).render_as_string(hide_password=True)


async def _revision(connection: AsyncConnection) -> str | None:
    try:
        found = await connection.scalar(text("SELECT version_num FROM alembic_version"))
    except Exception:  # no such table: a database Upwatch never migrated
        return None
    return None if found is None else str(found)


async def _tables_there(connection: AsyncConnection) -> list[str]:
    return await connection.run_sync(lambda sync: inspect(sync).get_table_names())


async def _copy_table(
    source: AsyncConnection, target: AsyncConnection, table: Table, batch_rows: int
) -> int:
    copied = 0
    # Ordered by the key, so a copy of the same data is the same copy.
    rows = await source.stream(select(table).order_by(*table.primary_key.columns))
    async for batch in rows.mappings().partitions(batch_rows):
        await target.execute(insert(table), [dict(row) for row in batch])
        copied += len(batch)
    return copied


async def _advance_sequences(target: AsyncConnection, tables: Sequence[Table]) -> None:
    """PostgreSQL hands out serial ids from sequences the copy did not use: each is moved past
    the largest id copied, or the first new row would collide with a copied one."""
    if target.dialect.name != "postgresql":
        return
    for table in tables:
        # Numbers given by a named sequence (monitors' and regions' numbers).
        for column in table.columns:
            if isinstance(column.default, SchemaSequence):
                largest = await target.scalar(select(func.max(column)))
                await target.execute(
                    text("SELECT setval(:sequence, :next, false)"),
                    {"sequence": column.default.name, "next": (largest or 0) + 1},
                )
        (key, *more) = table.primary_key.columns
        if more or not isinstance(key.type, Integer) or key.autoincrement is not True:
            continue
        largest = await target.scalar(select(func.max(key)))
        sequence = await target.scalar(
            text("SELECT pg_get_serial_sequence(:table, :column)"),
            {"table": table.name, "column": key.name},
        )
        if sequence is not None:
            await target.execute(
                text("SELECT setval(:sequence, :next, false)"),
                {"sequence": sequence, "next": (largest or 0) + 1},
            )


async def copy_data(settings: Settings, to_url: str, batch_rows: int = BATCH_ROWS) -> list[str]:
    """Copy every table of the configured database into the empty database at ``to_url``;
    returns one line per table that held rows."""
    from upwatch.kit.db import Database
    from upwatch.migrations import upgrade
    from upwatch.operations.backup import known_revisions

    try:
        target_url = parsed_database_url(to_url)
    except ValueError as invalid:
        raise Refused(f"--to: {invalid}") from None
    if target_url == make_url(settings.sqlalchemy_url):
        raise Refused("the target is the configured database itself")
    target_settings = settings.model_copy(update={"database_url": to_url})
    tables = _tables()
    _, head = known_revisions()
    source_db, target_db = Database(settings), Database(target_settings)
    try:
        async with source_db.engine.connect() as source:
            if await _revision(source) != head:
                raise Refused(
                    f"the source database is not at this version's schema ({head}): run "
                    "`upwatch migrate` first (or start the service once)"
                )
        # Before anything is written there: a database with any table is refused, not
        # migrated (it may be an older deployment's, or another application's).
        async with target_db.engine.connect() as connection:
            found = await _tables_there(connection)
        if found:
            raise Refused(
                f"{_described(to_url)} is not empty (it has tables: "
                f"{', '.join(sorted(found)[:5])}): copy into a new, empty database"
            )
        await upgrade(target_db.engine)
        lines: list[str] = []
        async with source_db.engine.connect() as source, target_db.engine.begin() as target:
            if source.dialect.name == "postgresql":
                # Every table from one snapshot (READ COMMITTED would take one per statement).
                await source.execution_options(isolation_level="REPEATABLE READ")
            await source.begin()  # one read transaction: on SQLite, one snapshot too
            for table in tables:
                started = time.monotonic()
                count = await _copy_table(source, target, table, batch_rows)
                if count:
                    lines.append(
                        f"{table.name}: {count} rows in {time.monotonic() - started:.1f} s"
                    )
            await _advance_sequences(target, tables)
        return lines
    finally:
        await source_db.dispose()
        await target_db.dispose()


def copy_data_command(args: argparse.Namespace) -> int:
    settings = Settings()
    to = args.to or os.environ.get(TO_VARIABLE)
    if not to:
        print(f"upwatch: copy-data needs --to URL (or {TO_VARIABLE})", file=sys.stderr)  # noqa: T201
        return 2
    try:
        lines = asyncio.run(copy_data(settings, to, args.batch_rows))
    except Refused as refused:
        print(f"upwatch: {refused}", file=sys.stderr)  # noqa: T201
        return 2
    except DatabaseUnavailable:
        print(  # noqa: T201
            "upwatch: copy-data failed, nothing was copied: a database could not be reached "
            "(the host, port, user or password of the URL?)",
            file=sys.stderr,
        )
        return 1
    except (SQLAlchemyError, OSError) as failed:
        # The driver's own words, first line: SQLAlchemy's text adds the statement and rows.
        reason = str(getattr(failed, "orig", None) or failed).splitlines()[0]
        print(f"upwatch: copy-data failed, nothing was copied: {reason}", file=sys.stderr)  # noqa: T201
        return 1
    for line in lines:
        print(line)  # noqa: T201
    print(  # noqa: T201
        f"copied {_described(settings.sqlalchemy_url)} to {_described(to)}; point "
        "UPWATCH_DATABASE_URL at it and start the service there"
    )
    return 0


def _batch(value: str) -> int:
    number = int(value)
    if not 1 <= number <= 100_000:
        raise argparse.ArgumentTypeError("between 1 and 100000")
    return number


def add_parsers(commands: Any) -> None:
    copy = commands.add_parser(
        "copy-data",
        help="copy everything into another, empty database (e.g. SQLite to PostgreSQL)",
        description="Copy every account, project, monitor, result, incident and page of the "
        "configured database into another, empty one, migrated first to this version's "
        "schema. Stop the service first: what it writes after the copy began is not carried.",
    )
    copy.add_argument(
        "--to",
        metavar="URL",
        help=f"e.g. postgresql://upwatch@db:5432/upwatch (or {TO_VARIABLE}, which keeps a "
        "password out of the process list; or PGPASSWORD / ~/.pgpass)",
    )
    copy.add_argument(
        "--batch-rows", type=_batch, default=BATCH_ROWS, help="rows per insert (default 5000)"
    )
    copy.set_defaults(run=copy_data_command, log_level="warning")
