"""Component groups on status pages, and each page's time zone

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-27 04:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import upwatch.kit.db

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "status_page_groups",
        sa.Column("status_page_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("created_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["status_page_id"],
            ["status_pages.id"],
            name=op.f("fk_status_page_groups_status_page_id_status_pages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_status_page_groups")),
        sa.UniqueConstraint(
            "status_page_id", "name", name=op.f("uq_status_page_groups_status_page_id")
        ),
    )
    with op.batch_alter_table("status_page_components") as batch:
        batch.add_column(sa.Column("group_id", sa.String(length=32), nullable=True))
        batch.create_index(
            batch.f("ix_status_page_components_group_id"), ["group_id"], unique=False
        )
        batch.create_foreign_key(
            batch.f("fk_status_page_components_group_id_status_page_groups"),
            "status_page_groups",
            ["group_id"],
            ["id"],
            ondelete="SET NULL",
        )
    with op.batch_alter_table("status_pages") as batch:
        batch.add_column(
            sa.Column("time_zone", sa.String(length=64), server_default="UTC", nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("status_pages") as batch:
        batch.drop_column("time_zone")
    with op.batch_alter_table("status_page_components") as batch:
        batch.drop_constraint(
            batch.f("fk_status_page_components_group_id_status_page_groups"), type_="foreignkey"
        )
        batch.drop_index(batch.f("ix_status_page_components_group_id"))
        batch.drop_column("group_id")
    op.drop_table("status_page_groups")
