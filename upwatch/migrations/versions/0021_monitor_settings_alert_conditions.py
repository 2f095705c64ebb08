"""Monitor types' own settings, alert conditions, failure evidence and certificate days

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27 00:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("monitors") as batch:
        batch.add_column(sa.Column("settings", sa.JSON(), server_default="{}", nullable=False))
        batch.add_column(
            sa.Column("success_threshold", sa.Integer(), server_default="1", nullable=False)
        )
        batch.add_column(sa.Column("alert_on_degraded", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("baseline_factor", sa.Float(), nullable=True))
        batch.add_column(sa.Column("baseline_min_samples", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("certificate_warning_days", sa.JSON(), nullable=True))
    # Plain ADD COLUMN: nullable, no default, so no table copy on either database.
    op.add_column("check_results", sa.Column("evidence", sa.JSON(), nullable=True))
    op.add_column("check_results", sa.Column("certificate_days", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("check_results", "certificate_days")
    op.drop_column("check_results", "evidence")
    with op.batch_alter_table("monitors") as batch:
        for name in (
            "certificate_warning_days",
            "baseline_min_samples",
            "baseline_factor",
            "alert_on_degraded",
            "success_threshold",
            "settings",
        ):
            batch.drop_column(name)
