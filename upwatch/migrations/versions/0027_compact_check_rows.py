"""One compact row per check: integer keys, the time in milliseconds, timings in the row

- ``monitors.number`` and ``regions.number``: small integer keys for check rows, given by a
  sequence on PostgreSQL and by a trigger (the largest so far plus one) on SQLite. A later
  ``batch_alter_table`` of either table on SQLite recreates the table without the trigger:
  it must create the trigger again (``_number_trigger``).
- ``check_results`` becomes (monitor number, epoch ms, region number) as its primary key, a
  clustered ``WITHOUT ROWID`` table on SQLite; status as 0/1/2, durations as whole
  microseconds, and the phase timings of ``check_timings`` in the same row. Rows are
  converted in batches with their progress logged. Results of a region id that names no
  region (none is ever deleted, but older rows may say anything) get a region of their own
  (code ``gone-<id>``) rather than being lost; two rows of one monitor and region in one
  millisecond keep the first.
- ``unflushed_batches``: the journal of results whose counts are still in an ingester's memory.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-27 11:00:00.000000
"""

import logging
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import upwatch.kit.db

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger("upwatch.migrations")

BATCH = 50_000  # old rows converted per statement

_RESULT_COLUMNS = (
    "monitor_number, region_number, checked_at_ms, status, status_code, response_us, "
    "error_kind, error, evidence, certificate_days, dns_us, connect_us, tls_us, "
    "first_byte_us, total_us"
)


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def _number_trigger(table: str) -> str:
    """SQLite's numbering of a new row of ``table`` (monitors or regions)."""
    return (
        f"CREATE TRIGGER {table}_number AFTER INSERT ON {table} WHEN NEW.number IS NULL "  # noqa: S608
        f"BEGIN UPDATE {table} SET number = (SELECT coalesce(max(number), 0) + 1 FROM {table}) "
        "WHERE id = NEW.id; END"
    )


def _add_numbers(table: str, kind: type[sa.types.TypeEngine[int]], sequence: str) -> None:
    op.add_column(table, sa.Column("number", kind(), nullable=True))
    if _postgresql():
        op.execute(f"CREATE SEQUENCE {sequence}")
        op.execute(f"UPDATE {table} SET number = nextval('{sequence}')")  # noqa: S608
        op.execute(f"ALTER TABLE {table} ALTER COLUMN number SET DEFAULT nextval('{sequence}')")
    else:
        op.execute(
            f"UPDATE {table} SET number = numbered.n FROM (SELECT id, row_number() "  # noqa: S608
            f"OVER (ORDER BY rowid) AS n FROM {table}) AS numbered WHERE numbered.id = {table}.id"
        )
        op.execute(_number_trigger(table))
    op.create_index(f"ix_{table}_number", table, ["number"], unique=True)


def _create_compact(name: str, postgresql: bool) -> None:
    """The compact table; PostgreSQL gets its foreign key after the rows are in (one check
    of them all instead of a trigger call per row)."""
    key = sa.ForeignKeyConstraint(
        ["monitor_number"],
        ["monitors.number"],
        name="fk_check_results_monitor_number_monitors",
        ondelete="CASCADE",
    )
    op.create_table(
        name,
        sa.Column("monitor_number", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("region_number", sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column("checked_at_ms", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("status", sa.SmallInteger(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("response_us", sa.Integer(), nullable=True),
        sa.Column("error_kind", sa.String(length=30), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("evidence", sa.JSON(), nullable=True),
        sa.Column("certificate_days", sa.Integer(), nullable=True),
        sa.Column("dns_us", sa.Integer(), nullable=True),
        sa.Column("connect_us", sa.Integer(), nullable=True),
        sa.Column("tls_us", sa.Integer(), nullable=True),
        sa.Column("first_byte_us", sa.Integer(), nullable=True),
        sa.Column("total_us", sa.Integer(), nullable=True),
        *([] if postgresql else [key]),
        sa.PrimaryKeyConstraint(
            "monitor_number", "checked_at_ms", "region_number", name=f"pk_{name}"
        ),
        sqlite_with_rowid=False,
    )


def upgrade() -> None:
    _add_numbers("monitors", sa.Integer, "monitor_numbers")
    _add_numbers("regions", sa.SmallInteger, "region_numbers")
    postgresql = _postgresql()
    # Rows naming a region that does not exist keep their region, as one of its own.
    now = "now()" if postgresql else "strftime('%Y-%m-%d %H:%M:%f000', 'now')"
    op.execute(
        "INSERT INTO regions (id, code, name, builtin, workers, created_at) "  # noqa: S608
        f"SELECT DISTINCT region_id, 'gone-' || region_id, 'gone-' || region_id, false, 0, {now} "
        "FROM check_results WHERE region_id NOT IN (SELECT id FROM regions)"
    )
    _create_compact("check_results_compact", postgresql)
    _convert(postgresql)
    op.drop_table("check_timings")
    op.drop_table("check_results")
    op.rename_table("check_results_compact", "check_results")
    if postgresql:
        op.execute(
            "ALTER TABLE check_results RENAME CONSTRAINT pk_check_results_compact "
            "TO pk_check_results"
        )
        op.create_foreign_key(
            "fk_check_results_monitor_number_monitors",
            "check_results",
            "monitors",
            ["monitor_number"],
            ["number"],
            ondelete="CASCADE",
        )
    op.create_table(
        "unflushed_batches",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("created_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("result_keys", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_unflushed_batches")),
    )


def _convert(postgresql: bool) -> None:
    """Old rows into compact ones, ``BATCH`` ids a statement, progress logged."""
    connection = op.get_bind()
    low, high, total = connection.execute(
        sa.text("SELECT min(id), max(id), count(*) FROM check_results")
    ).one()
    if not total:
        return
    if postgresql:
        at = "floor(extract(epoch FROM c.checked_at) * 1000)::bigint"

        def micros(column: str) -> str:
            return f"round({column} * 1000)::integer"

        ignore, conflict = "", " ON CONFLICT DO NOTHING"
    else:  # "2026-11-25 14:03:00.123456": whole seconds by strftime, then the milliseconds
        at = (
            "CAST(strftime('%s', substr(c.checked_at, 1, 19)) AS INTEGER) * 1000 "
            "+ CAST(substr(c.checked_at || '.000', 21, 3) AS INTEGER)"
        )

        def micros(column: str) -> str:
            return f"CAST(round({column} * 1000) AS INTEGER)"

        ignore, conflict = " OR IGNORE", ""
    timings = ", ".join(
        micros(f"t.{name}_ms") for name in ("dns", "connect", "tls", "first_byte", "total")
    )
    statement = sa.text(
        f"INSERT{ignore} INTO check_results_compact ({_RESULT_COLUMNS}) "  # noqa: S608
        f"SELECT m.number, r.number, {at}, "
        "CASE c.status WHEN 'up' THEN 0 WHEN 'down' THEN 1 ELSE 2 END, "
        f"c.status_code, {micros('c.response_time_ms')}, c.error_kind, c.error, c.evidence, "
        f"c.certificate_days, {timings} "
        "FROM check_results c JOIN monitors m ON m.id = c.monitor_id "
        "JOIN regions r ON r.id = c.region_id "
        "LEFT JOIN check_timings t ON t.result_id = c.id "
        f"WHERE c.id >= :low AND c.id < :high{conflict}"
    )
    done = 0
    for start in range(low, high + 1, BATCH):
        connection.execute(statement, {"low": start, "high": start + BATCH})
        done = connection.execute(
            sa.text("SELECT count(*) FROM check_results WHERE id < :high"),
            {"high": start + BATCH},
        ).scalar_one()
        log.info("check results: %d of %d converted to compact rows", done, total)
    kept = connection.execute(sa.text("SELECT count(*) FROM check_results_compact")).scalar_one()
    if kept != total:
        log.info("check results: %d rows in one millisecond of another were left out", total - kept)


def downgrade() -> None:
    postgresql = _postgresql()
    op.drop_table("unflushed_batches")
    op.create_table(
        "check_results_wide",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("monitor_id", sa.String(length=32), nullable=False),
        sa.Column("region_id", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("response_time_ms", sa.Float(), nullable=True),
        sa.Column("error_kind", sa.String(length=30), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("checked_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("report_id", sa.String(length=32), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=True),
        sa.Column("certificate_days", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["monitor_id"],
            ["monitors.id"],
            name="fk_check_results_monitor_id_monitors",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_check_results_wide"),
        sa.UniqueConstraint("report_id", name="uq_check_results_report_id"),
    )
    if postgresql:
        at = "to_timestamp(c.checked_at_ms / 1000.0)"
        report = "md5(random()::text || clock_timestamp()::text)"
    else:
        at = (
            "strftime('%Y-%m-%d %H:%M:%S', c.checked_at_ms / 1000, 'unixepoch') "
            "|| '.' || printf('%03d', c.checked_at_ms % 1000) || '000'"
        )
        report = "lower(hex(randomblob(16)))"
    op.execute(
        "INSERT INTO check_results_wide (monitor_id, region_id, status, status_code, "  # noqa: S608
        "response_time_ms, error_kind, error, checked_at, report_id, evidence, "
        "certificate_days) "
        f"SELECT m.id, r.id, CASE c.status WHEN 0 THEN 'up' WHEN 1 THEN 'down' "
        "ELSE 'degraded' END, c.status_code, c.response_us / 1000.0, c.error_kind, c.error, "
        f"{at}, {report}, c.evidence, c.certificate_days "
        "FROM check_results c JOIN monitors m ON m.number = c.monitor_number "
        "JOIN regions r ON r.number = c.region_number "
        "ORDER BY c.checked_at_ms"
    )
    op.create_table(
        "check_timings",
        sa.Column(
            "result_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=False,
            nullable=False,
        ),
        sa.Column("dns_ms", sa.Float(), nullable=True),
        sa.Column("connect_ms", sa.Float(), nullable=True),
        sa.Column("tls_ms", sa.Float(), nullable=True),
        sa.Column("first_byte_ms", sa.Float(), nullable=True),
        sa.Column("total_ms", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["result_id"],
            ["check_results_wide.id"],
            name="fk_check_timings_result_id_check_results",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("result_id", name="pk_check_timings"),
    )
    op.execute(
        "INSERT INTO check_timings (result_id, dns_ms, connect_ms, tls_ms, first_byte_ms, "  # noqa: S608
        "total_ms) SELECT w.id, c.dns_us / 1000.0, c.connect_us / 1000.0, c.tls_us / 1000.0, "
        "c.first_byte_us / 1000.0, c.total_us / 1000.0 "
        "FROM check_results c JOIN monitors m ON m.number = c.monitor_number "
        "JOIN regions r ON r.number = c.region_number "
        "JOIN check_results_wide w ON w.monitor_id = m.id AND w.region_id = r.id "
        f"AND w.checked_at = {at} "
        "WHERE c.total_us IS NOT NULL OR c.dns_us IS NOT NULL OR c.connect_us IS NOT NULL "
        "OR c.tls_us IS NOT NULL OR c.first_byte_us IS NOT NULL"
    )
    op.drop_table("check_results")
    op.rename_table("check_results_wide", "check_results")
    if postgresql:
        op.execute(
            "ALTER TABLE check_results RENAME CONSTRAINT pk_check_results_wide TO pk_check_results"
        )
    op.create_index("ix_check_results_monitor_time", "check_results", ["monitor_id", "checked_at"])
    for table, sequence in (("regions", "region_numbers"), ("monitors", "monitor_numbers")):
        op.drop_index(f"ix_{table}_number", table_name=table)
        if postgresql:
            op.execute(f"ALTER TABLE {table} ALTER COLUMN number DROP DEFAULT")
            op.drop_column(table, "number")
            op.execute(f"DROP SEQUENCE {sequence}")
        else:
            op.execute(f"DROP TRIGGER {table}_number")
            op.execute(f"ALTER TABLE {table} DROP COLUMN number")
