"""monitor dependencies, and the dependents an incident lists

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24 20:05:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("monitors") as batch:
        batch.add_column(sa.Column("depends_on", sa.JSON(), nullable=False, server_default="[]"))
    with op.batch_alter_table("incidents") as batch:
        batch.add_column(sa.Column("dependents", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("incidents") as batch:
        batch.drop_column("dependents")
    with op.batch_alter_table("monitors") as batch:
        batch.drop_column("depends_on")
