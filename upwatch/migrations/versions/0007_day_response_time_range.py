"""daily_aggregates: the smallest and largest response time of each day

Percentiles are clamped to them. A day stored before is given its range from its raw results
only when they are all still there (as many stored times as the day counted); otherwise, as
after retention dropped some, the range stays unknown (NULL) and that day's percentiles are
the bucket estimates, as before.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("daily_aggregates") as batch:
        batch.add_column(sa.Column("response_ms_min", sa.Float(), nullable=True))
        batch.add_column(sa.Column("response_ms_max", sa.Float(), nullable=True))
    # The day key as the ingester writes it: the UTC date of checked_at. SQLite stores UTC
    # datetimes as text, "YYYY-MM-DD HH:MM:SS.ffffff".
    if op.get_bind().dialect.name == "postgresql":
        day = "to_char(checked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
    else:
        day = "substr(checked_at, 1, 10)"
    op.execute(
        "UPDATE daily_aggregates SET response_ms_min = r.low, response_ms_max = r.high "  # noqa: S608
        "FROM (SELECT monitor_id, region_id, "
        f"{day} AS day, min(response_time_ms) AS low, max(response_time_ms) AS high, "
        "count(response_time_ms) AS timed FROM check_results GROUP BY monitor_id, region_id, "
        f"{day}) AS r "
        "WHERE daily_aggregates.monitor_id = r.monitor_id "
        "AND daily_aggregates.region_id = r.region_id AND daily_aggregates.day = r.day "
        "AND daily_aggregates.response_count > 0 AND daily_aggregates.response_count = r.timed"
    )


def downgrade() -> None:
    with op.batch_alter_table("daily_aggregates") as batch:
        batch.drop_column("response_ms_max")
        batch.drop_column("response_ms_min")
