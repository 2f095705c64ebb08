"""API keys: long-lived bearer credentials per project and scope

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-24 20:50:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import upwatch.kit.db

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("project_id", sa.String(length=32), nullable=False),
        sa.Column("created_by", sa.String(length=32), nullable=True),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("scope", sa.String(length=10), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("created_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
            name=op.f("fk_api_keys_created_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_api_keys_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("digest", name=op.f("uq_api_keys_digest")),
    )
    with op.batch_alter_table("api_keys") as batch:
        batch.create_index(batch.f("ix_api_keys_project_id"), ["project_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_index(batch.f("ix_api_keys_project_id"))
    op.drop_table("api_keys")
