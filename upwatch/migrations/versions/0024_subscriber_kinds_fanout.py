"""Status-page subscribers beyond e-mail (webhook, Slack), chosen components, and the batched
fan-out: one notice row per change, expanded after commit into deliveries

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-27 04:15:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import upwatch.kit.db

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("status_page_subscribers") as batch:
        batch.add_column(
            sa.Column("kind", sa.String(length=10), server_default="email", nullable=False)
        )
        batch.add_column(sa.Column("url", sa.Text(), nullable=True))
        batch.add_column(sa.Column("secret", sa.String(length=100), nullable=True))
        batch.add_column(sa.Column("component_ids", sa.JSON(), nullable=True))
        batch.alter_column("email", existing_type=sa.String(length=320), nullable=True)
        batch.create_index(
            "ix_status_page_subscribers_page_id", ["status_page_id", "id"], unique=False
        )
    op.create_table(
        "subscriber_notices",
        sa.Column("status_page_id", sa.String(length=32), nullable=False),
        sa.Column("maintenance_window_id", sa.String(length=32), nullable=True),
        sa.Column("event", sa.String(length=40), nullable=False),
        sa.Column("component_ids", sa.JSON(), nullable=True),
        sa.Column("subject", sa.String(length=300), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("due_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("cursor", sa.String(length=32), nullable=True),
        sa.Column("done", sa.Boolean(), nullable=False),
        sa.Column("delivered", sa.Integer(), nullable=False),
        sa.Column("created_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["status_page_id"],
            ["status_pages.id"],
            name=op.f("fk_subscriber_notices_status_page_id_status_pages"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["maintenance_window_id"],
            ["maintenance_windows.id"],
            name=op.f("fk_subscriber_notices_maintenance_window_id_maintenance_windows"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscriber_notices")),
    )
    with op.batch_alter_table("subscriber_notices") as batch:
        batch.create_index("ix_subscriber_notices_due", ["done", "due_at"], unique=False)
        batch.create_index(
            batch.f("ix_subscriber_notices_status_page_id"), ["status_page_id"], unique=False
        )
        batch.create_index(
            batch.f("ix_subscriber_notices_maintenance_window_id"),
            ["maintenance_window_id"],
            unique=False,
        )
    op.create_table(
        "subscriber_deliveries",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("notice_id", sa.String(length=32), nullable=False),
        sa.Column("subscriber_id", sa.String(length=32), nullable=False),
        sa.Column("message_id", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("sent_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["notice_id"],
            ["subscriber_notices.id"],
            name=op.f("fk_subscriber_deliveries_notice_id_subscriber_notices"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["subscriber_id"],
            ["status_page_subscribers.id"],
            name=op.f("fk_subscriber_deliveries_subscriber_id_status_page_subscribers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscriber_deliveries")),
        sa.UniqueConstraint(
            "notice_id", "subscriber_id", name=op.f("uq_subscriber_deliveries_notice_id")
        ),
    )
    with op.batch_alter_table("subscriber_deliveries") as batch:
        batch.create_index("ix_subscriber_deliveries_due", ["status", "next_attempt_at"])
        batch.create_index(
            batch.f("ix_subscriber_deliveries_subscriber_id"), ["subscriber_id"], unique=False
        )


def downgrade() -> None:
    op.drop_table("subscriber_deliveries")
    op.drop_table("subscriber_notices")
    op.execute("DELETE FROM status_page_subscribers WHERE email IS NULL")
    with op.batch_alter_table("status_page_subscribers") as batch:
        batch.drop_index("ix_status_page_subscribers_page_id")
        batch.alter_column("email", existing_type=sa.String(length=320), nullable=False)
        for name in ("component_ids", "secret", "url", "kind"):
            batch.drop_column(name)
