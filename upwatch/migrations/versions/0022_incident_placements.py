"""Incidents placed on status pages: the whole of chosen pages, or chosen components

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-27 04:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("incidents") as batch:
        batch.add_column(
            sa.Column("status_page_ids", sa.JSON(), server_default="[]", nullable=False)
        )
        batch.add_column(sa.Column("component_ids", sa.JSON(), server_default="[]", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("incidents") as batch:
        batch.drop_column("component_ids")
        batch.drop_column("status_page_ids")
