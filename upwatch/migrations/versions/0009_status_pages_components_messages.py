"""status pages, components, messages; which timeline entries the status machine wrote

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24 02:50:27.290156
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import upwatch.kit.db

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("mail_outbox") as batch:
        batch.add_column(sa.Column("headers", sa.JSON(), nullable=True))
    with op.batch_alter_table("incident_updates") as batch:
        batch.add_column(
            sa.Column("automatic", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    # Entries the status machine wrote before the column existed.
    op.execute(
        "UPDATE incident_updates SET automatic = true WHERE message LIKE 'Opened automatically: %'"
        " OR message LIKE 'Resolved automatically: %'"
    )

    op.create_table(
        "status_pages",
        sa.Column("project_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("slug", sa.String(length=63), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("is_public", sa.Boolean(), nullable=False),
        sa.Column("theme", sa.String(length=10), nullable=False),
        sa.Column("custom_domain", sa.String(length=253), nullable=True),
        sa.Column("custom_css", sa.Text(), nullable=False),
        sa.Column("custom_js", sa.Text(), nullable=False),
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("created_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_status_pages_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_status_pages")),
        sa.UniqueConstraint("custom_domain", name=op.f("uq_status_pages_custom_domain")),
        sa.UniqueConstraint("slug", name=op.f("uq_status_pages_slug")),
    )
    with op.batch_alter_table("status_pages", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_status_pages_project_id"), ["project_id"], unique=False
        )

    op.create_table(
        "status_messages",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("status_page_id", sa.String(length=32), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("component_ids", sa.JSON(), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=True),
        sa.Column("created_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["status_page_id"],
            ["status_pages.id"],
            name=op.f("fk_status_messages_status_page_id_status_pages"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_status_messages_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_status_messages")),
    )
    with op.batch_alter_table("status_messages", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_status_messages_status_page_id"), ["status_page_id"], unique=False
        )

    op.create_table(
        "status_page_components",
        sa.Column("status_page_id", sa.String(length=32), nullable=False),
        sa.Column("monitor_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("created_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["monitor_id"],
            ["monitors.id"],
            name=op.f("fk_status_page_components_monitor_id_monitors"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["status_page_id"],
            ["status_pages.id"],
            name=op.f("fk_status_page_components_status_page_id_status_pages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_status_page_components")),
        sa.UniqueConstraint(
            "status_page_id", "monitor_id", name=op.f("uq_status_page_components_status_page_id")
        ),
    )
    with op.batch_alter_table("status_page_components", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_status_page_components_monitor_id"), ["monitor_id"], unique=False
        )
    op.create_table(
        "status_page_subscribers",
        sa.Column("status_page_id", sa.String(length=32), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("created_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("confirmed_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["status_page_id"],
            ["status_pages.id"],
            name=op.f("fk_status_page_subscribers_status_page_id_status_pages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_status_page_subscribers")),
        sa.UniqueConstraint(
            "status_page_id", "email", name=op.f("uq_status_page_subscribers_status_page_id")
        ),
    )


def downgrade() -> None:
    op.drop_table("status_page_subscribers")
    with op.batch_alter_table("mail_outbox") as batch:
        batch.drop_column("headers")
    with op.batch_alter_table("incident_updates") as batch:
        batch.drop_column("automatic")

    with op.batch_alter_table("status_page_components", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_status_page_components_monitor_id"))

    op.drop_table("status_page_components")
    with op.batch_alter_table("status_messages", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_status_messages_status_page_id"))

    op.drop_table("status_messages")
    with op.batch_alter_table("status_pages", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_status_pages_project_id"))

    op.drop_table("status_pages")
