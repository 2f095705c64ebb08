"""Each status page's language, and whether a visitor's own language wins

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-27 19:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("status_pages") as batch:
        batch.add_column(
            sa.Column("language", sa.String(length=5), server_default="en", nullable=False)
        )
        batch.add_column(
            sa.Column("visitor_language", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("status_pages") as batch:
        batch.drop_column("visitor_language")
        batch.drop_column("language")
