"""The language of each project's alerts to its notification providers

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-27 23:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("projects") as batch:
        batch.add_column(
            sa.Column("alert_language", sa.String(length=5), server_default="en", nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("projects") as batch:
        batch.drop_column("alert_language")
