"""Config as code: a key per declared object, unique per project, and secret references

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-24 23:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DECLARED = ("monitors", "notification_providers", "status_pages", "maintenance_windows")
WITH_SECRETS = ("monitors", "notification_providers")


def upgrade() -> None:
    for table in DECLARED:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("key", sa.String(length=64), nullable=True))
            if table in WITH_SECRETS:
                batch.add_column(
                    sa.Column("secret_refs", sa.JSON(), nullable=False, server_default="{}")
                )
            batch.create_unique_constraint(batch.f(f"uq_{table}_project_id"), ["project_id", "key"])


def downgrade() -> None:
    for table in DECLARED:
        with op.batch_alter_table(table) as batch:
            batch.drop_constraint(batch.f(f"uq_{table}_project_id"), type_="unique")
            if table in WITH_SECRETS:
                batch.drop_column("secret_refs")
            batch.drop_column("key")
