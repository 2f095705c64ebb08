"""alerts: personal channels (the recipient of an alert to a member's own channel)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Existing alerts all went to providers: no recipient.
    with op.batch_alter_table("alerts") as batch:
        batch.add_column(sa.Column("user_id", sa.String(length=32), nullable=True))
        batch.create_index(batch.f("ix_alerts_user_id"), ["user_id"], unique=False)
        batch.create_foreign_key(
            batch.f("fk_alerts_user_id_users"), "users", ["user_id"], ["id"], ondelete="CASCADE"
        )


def downgrade() -> None:
    with op.batch_alter_table("alerts") as batch:
        batch.drop_constraint(batch.f("fk_alerts_user_id_users"), type_="foreignkey")
        batch.drop_index(batch.f("ix_alerts_user_id"))
        batch.drop_column("user_id")
