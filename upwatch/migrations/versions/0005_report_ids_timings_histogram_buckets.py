"""result report ids, check timings, day histograms as bucket rows

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 09:12:40.000000

- ``check_results.report_id``: the id a worker gives each report, unique, so a batch stored
  twice inserts each result once. Existing rows get their integer id in hex, padded to 32
  characters: unique, and never equal to a worker's UUID4 (whose 13th digit is 4).
- ``check_timings``: the probe's per-phase times, one row per result that has them.
- ``daily_histogram_buckets``: one row per (monitor, region, day, bucket), counts added in SQL;
  the JSON histograms of ``daily_aggregates`` are carried over row by row, then dropped.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    with op.batch_alter_table("check_results", schema=None) as batch_op:
        batch_op.add_column(sa.Column("report_id", sa.String(length=32), nullable=True))
    if _postgresql():
        op.execute("UPDATE check_results SET report_id = lpad(to_hex(id), 32, '0')")
    else:
        op.execute("UPDATE check_results SET report_id = printf('%032x', id)")
    with op.batch_alter_table("check_results", schema=None) as batch_op:
        batch_op.alter_column("report_id", existing_type=sa.String(length=32), nullable=False)
        batch_op.create_unique_constraint(op.f("uq_check_results_report_id"), ["report_id"])

    op.create_table(
        "check_timings",
        sa.Column("result_id", _ID, autoincrement=False, nullable=False),
        sa.Column("dns_ms", sa.Float(), nullable=True),
        sa.Column("connect_ms", sa.Float(), nullable=True),
        sa.Column("tls_ms", sa.Float(), nullable=True),
        sa.Column("first_byte_ms", sa.Float(), nullable=True),
        sa.Column("total_ms", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["result_id"],
            ["check_results.id"],
            name=op.f("fk_check_timings_result_id_check_results"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("result_id", name=op.f("pk_check_timings")),
    )

    op.create_table(
        "daily_histogram_buckets",
        sa.Column("monitor_id", sa.String(length=32), nullable=False),
        sa.Column("region_id", sa.String(length=32), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("bucket", sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["monitor_id"],
            ["monitors.id"],
            name=op.f("fk_daily_histogram_buckets_monitor_id_monitors"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "monitor_id", "region_id", "day", "bucket", name=op.f("pk_daily_histogram_buckets")
        ),
    )
    # The stored JSON is {"<bucket>": count, ...}; one row per key, empty buckets left out.
    if _postgresql():
        op.execute(
            "INSERT INTO daily_histogram_buckets (monitor_id, region_id, day, bucket, count) "
            "SELECT d.monitor_id, d.region_id, d.day, CAST(j.key AS SMALLINT), "
            "CAST(j.value AS INTEGER) "
            "FROM daily_aggregates AS d CROSS JOIN LATERAL json_each_text(d.histogram) AS j "
            "WHERE CAST(j.value AS INTEGER) > 0"
        )
    else:
        op.execute(
            "INSERT INTO daily_histogram_buckets (monitor_id, region_id, day, bucket, count) "
            "SELECT d.monitor_id, d.region_id, d.day, CAST(j.key AS INTEGER), "
            "CAST(j.value AS INTEGER) "
            "FROM daily_aggregates AS d, json_each(d.histogram) AS j "
            "WHERE CAST(j.value AS INTEGER) > 0"
        )
    with op.batch_alter_table("daily_aggregates", schema=None) as batch_op:
        batch_op.drop_column("histogram")


def downgrade() -> None:
    with op.batch_alter_table("daily_aggregates", schema=None) as batch_op:
        batch_op.add_column(sa.Column("histogram", sa.JSON(), nullable=True))
    if _postgresql():
        aggregate = "json_object_agg(CAST(b.bucket AS TEXT), b.count)"
    else:
        aggregate = "json_group_object(CAST(b.bucket AS TEXT), b.count)"
    op.execute(
        f"UPDATE daily_aggregates SET histogram = (SELECT {aggregate} "  # noqa: S608
        "FROM daily_histogram_buckets AS b WHERE b.monitor_id = daily_aggregates.monitor_id "
        "AND b.region_id = daily_aggregates.region_id AND b.day = daily_aggregates.day)"
    )
    op.execute("UPDATE daily_aggregates SET histogram = '{}' WHERE histogram IS NULL")
    with op.batch_alter_table("daily_aggregates", schema=None) as batch_op:
        batch_op.alter_column("histogram", existing_type=sa.JSON(), nullable=False)
    op.drop_table("daily_histogram_buckets")
    op.drop_table("check_timings")
    with op.batch_alter_table("check_results", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("uq_check_results_report_id"), type_="unique")
        batch_op.drop_column("report_id")
