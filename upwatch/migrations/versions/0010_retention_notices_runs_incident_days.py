"""retention notices, runs, incident days; mail last attempt; day aggregates by monitor and day

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24 06:00:31.564445
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import upwatch.kit.db

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "retention_notifications",
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("data_type", sa.String(length=20), nullable=False),
        sa.Column("expiry_date", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("cutoff", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("retention_days", sa.Integer(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("mail_id", sa.String(length=32), nullable=True),
        sa.Column("earlier_attempts", sa.Integer(), nullable=False),
        sa.Column("purged_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("created_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["mail_id"],
            ["mail_outbox.id"],
            name=op.f("fk_retention_notifications_mail_id_mail_outbox"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_retention_notifications_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_retention_notifications")),
        sa.UniqueConstraint(
            "user_id", "data_type", "expiry_date", name=op.f("uq_retention_notifications_user_id")
        ),
    )
    with op.batch_alter_table("retention_notifications", schema=None) as batch_op:
        batch_op.create_index(
            "ix_retention_notifications_due", ["purged_at", "expiry_date"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_retention_notifications_mail_id"), ["mail_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_retention_notifications_user_id"), ["user_id"], unique=False
        )

    op.create_table(
        "retention_runs",
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("done_day", sa.String(length=10), nullable=True),
        sa.Column("claim", sa.String(length=32), nullable=True),
        sa.Column("claimed_until", upwatch.kit.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("result_rows", sa.BigInteger(), nullable=False),
        sa.Column("kept_from_day", sa.String(length=10), nullable=True),
        sa.Column("through_day", sa.String(length=10), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_retention_runs_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_retention_runs")),
    )
    op.create_table(
        "incident_days",
        sa.Column("project_id", sa.String(length=32), nullable=False),
        sa.Column("monitor_id", sa.String(length=32), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("incidents", sa.Integer(), nullable=False),
        sa.Column("duration_seconds", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_incident_days_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("project_id", "monitor_id", "day", name=op.f("pk_incident_days")),
    )
    with op.batch_alter_table("daily_aggregates", schema=None) as batch_op:
        batch_op.create_index(
            "ix_daily_aggregates_monitor_day", ["monitor_id", "day"], unique=False
        )
    with op.batch_alter_table("mail_outbox", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("last_attempt_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("daily_aggregates", schema=None) as batch_op:
        batch_op.drop_index("ix_daily_aggregates_monitor_day")
    with op.batch_alter_table("mail_outbox", schema=None) as batch_op:
        batch_op.drop_column("last_attempt_at")

    op.drop_table("incident_days")
    op.drop_table("retention_runs")
    with op.batch_alter_table("retention_notifications", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_retention_notifications_user_id"))
        batch_op.drop_index(batch_op.f("ix_retention_notifications_mail_id"))
        batch_op.drop_index("ix_retention_notifications_due")

    op.drop_table("retention_notifications")
