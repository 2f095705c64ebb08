"""monitors: names of secret headers

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 08:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Existing monitors mark nothing; the always-secret headers need no mark.
    with op.batch_alter_table("monitors") as batch:
        batch.add_column(
            sa.Column("secret_headers", sa.JSON(), nullable=False, server_default=sa.text("'[]'"))
        )


def downgrade() -> None:
    with op.batch_alter_table("monitors") as batch:
        batch.drop_column("secret_headers")
