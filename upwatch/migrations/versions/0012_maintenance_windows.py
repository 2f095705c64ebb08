"""maintenance windows, and the checks made during one in the daily aggregates

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 17:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import upwatch.kit.db

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MAINTENANCE_COUNTS = (
    "maintenance_total",
    "maintenance_up",
    "maintenance_down",
    "maintenance_degraded",
)


def upgrade() -> None:
    op.create_table(
        "maintenance_windows",
        sa.Column("project_id", sa.String(length=32), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("starts_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("ends_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("rrule", sa.Text(), nullable=True),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("whole_project", sa.Boolean(), nullable=False),
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("created_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_maintenance_windows_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_maintenance_windows")),
    )
    with op.batch_alter_table("maintenance_windows") as batch:
        batch.create_index(
            batch.f("ix_maintenance_windows_project_id"), ["project_id"], unique=False
        )
    op.create_table(
        "maintenance_window_monitors",
        sa.Column("window_id", sa.String(length=32), nullable=False),
        sa.Column("monitor_id", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["monitor_id"],
            ["monitors.id"],
            name=op.f("fk_maintenance_window_monitors_monitor_id_monitors"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["window_id"],
            ["maintenance_windows.id"],
            name=op.f("fk_maintenance_window_monitors_window_id_maintenance_windows"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "window_id", "monitor_id", name=op.f("pk_maintenance_window_monitors")
        ),
    )
    with op.batch_alter_table("maintenance_window_monitors") as batch:
        batch.create_index(
            batch.f("ix_maintenance_window_monitors_monitor_id"), ["monitor_id"], unique=False
        )
    with op.batch_alter_table("daily_aggregates") as batch:
        for name in _MAINTENANCE_COUNTS:
            batch.add_column(sa.Column(name, sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("daily_aggregates") as batch:
        for name in _MAINTENANCE_COUNTS:
            batch.drop_column(name)
    op.drop_table("maintenance_window_monitors")
    op.drop_table("maintenance_windows")
