"""heartbeat monitors: cron schedules, grace, start and failure pings

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24 20:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import upwatch.kit.db

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("monitors") as batch:
        batch.add_column(sa.Column("schedule", sa.String(length=100), nullable=True))
        batch.add_column(sa.Column("timezone", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("grace_seconds", sa.Integer(), nullable=True))
        for column in ("last_start_at", "last_fail_at"):
            batch.add_column(
                sa.Column(column, upwatch.kit.db.UTCDateTime(timezone=True), nullable=True)
            )


def downgrade() -> None:
    with op.batch_alter_table("monitors") as batch:
        for column in ("last_fail_at", "last_start_at", "grace_seconds", "timezone", "schedule"):
            batch.drop_column(column)
