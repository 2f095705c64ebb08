"""Hourly check counts and each monitor's recent response times, for 24-hour uptime and
sparklines without reading a day of raw results

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-25 03:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The hours of the last day and a bit are counted from the results already stored; older
# hours are never read (24-hour figures only).
_BACKFILL_HOURS = 26
_RECENT_TIMES = 20  # models.RECENT_TIMES when this was written


def upgrade() -> None:
    op.create_table(
        "hourly_counts",
        sa.Column("monitor_id", sa.String(length=32), nullable=False),
        sa.Column("region_id", sa.String(length=32), nullable=False),
        sa.Column("hour", sa.String(length=13), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("up", sa.Integer(), nullable=False),
        sa.Column("down", sa.Integer(), nullable=False),
        sa.Column("degraded", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["monitor_id"],
            ["monitors.id"],
            name=op.f("fk_hourly_counts_monitor_id_monitors"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("monitor_id", "region_id", "hour", name=op.f("pk_hourly_counts")),
    )
    if op.get_context().dialect.name == "postgresql":
        hour = "to_char(checked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24')"
        since = f"now() - interval '{_BACKFILL_HOURS} hours'"
    else:  # SQLite keeps UTC times as text, "2026-11-25 14:03:00.000000"
        hour = "strftime('%Y-%m-%dT%H', checked_at)"
        since = f"strftime('%Y-%m-%d %H:%M:%S', 'now', '-{_BACKFILL_HOURS} hours')"
    # Built from this file's constants only: nothing in it comes from outside.
    op.execute(
        "INSERT INTO hourly_counts (monitor_id, region_id, hour, total, up, down, degraded) "  # noqa: S608
        f"SELECT monitor_id, region_id, {hour}, count(*), "
        "sum(CASE WHEN status = 'up' THEN 1 ELSE 0 END), "
        "sum(CASE WHEN status = 'down' THEN 1 ELSE 0 END), "
        "sum(CASE WHEN status = 'degraded' THEN 1 ELSE 0 END) "
        f"FROM check_results WHERE checked_at >= {since} "
        f"GROUP BY monitor_id, region_id, {hour}"
    )

    with op.batch_alter_table("monitors") as batch:
        batch.add_column(sa.Column("recent_ms", sa.JSON(), nullable=True))
    _fill_recent_times()


def _fill_recent_times() -> None:
    """Each monitor's last response times from its stored results (one indexed read each)."""
    connection = op.get_bind()
    monitors = sa.table("monitors", sa.column("id"), sa.column("recent_ms", sa.JSON()))
    results = sa.table(
        "check_results",
        sa.column("id"),
        sa.column("monitor_id"),
        sa.column("checked_at"),
        sa.column("response_time_ms"),
    )
    for (monitor_id,) in connection.execute(sa.select(monitors.c.id)).all():
        last = connection.execute(
            sa.select(results.c.response_time_ms)
            .where(results.c.monitor_id == monitor_id)
            .order_by(results.c.checked_at.desc(), results.c.id.desc())
            .limit(_RECENT_TIMES)
        ).scalars()
        times = list(reversed(list(last)))
        if times:
            connection.execute(
                sa.update(monitors).where(monitors.c.id == monitor_id).values(recent_ms=times)
            )


def downgrade() -> None:
    with op.batch_alter_table("monitors") as batch:
        batch.drop_column("recent_ms")
    op.drop_table("hourly_counts")
