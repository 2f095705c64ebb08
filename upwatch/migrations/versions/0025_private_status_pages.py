"""Private status pages: a visibility (public, password, members), a page password and an
address allowlist

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-27 04:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("status_pages") as batch:
        batch.add_column(
            sa.Column("visibility", sa.String(length=10), server_default="public", nullable=False)
        )
        batch.add_column(sa.Column("password_hash", sa.String(length=200), nullable=True))
        batch.add_column(
            sa.Column("allowed_networks", sa.JSON(), server_default="[]", nullable=False)
        )
    # A private page was "404 to everyone but the project's members": that is "members".
    op.execute("UPDATE status_pages SET visibility = 'members' WHERE NOT is_public")


def downgrade() -> None:
    op.execute("UPDATE status_pages SET is_public = false WHERE visibility <> 'public'")
    with op.batch_alter_table("status_pages") as batch:
        batch.drop_column("allowed_networks")
        batch.drop_column("password_hash")
        batch.drop_column("visibility")
