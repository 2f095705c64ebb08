"""Account security: TOTP and recovery codes, passkeys, a project's two-factor rule, where
sessions were made, and the audit log

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-27 07:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from upwatch.kit.db import UTCDateTime

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("totp_secret", sa.String(length=255), nullable=True))
        batch.add_column(sa.Column("totp_enabled_at", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("totp_last_step", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("projects") as batch:
        batch.add_column(
            sa.Column("require_two_factor", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    with op.batch_alter_table("refresh_tokens") as batch:
        batch.add_column(
            sa.Column("address", sa.String(length=64), server_default="", nullable=False)
        )
        batch.add_column(
            sa.Column("user_agent", sa.String(length=400), server_default="", nullable=False)
        )
    with op.batch_alter_table("browser_sessions") as batch:
        batch.add_column(
            sa.Column("address", sa.String(length=64), server_default="", nullable=False)
        )
        batch.add_column(
            sa.Column("user_agent", sa.String(length=400), server_default="", nullable=False)
        )
        batch.add_column(sa.Column("last_used_at", UTCDateTime(), nullable=True))
    op.create_table(
        "recovery_codes",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("used_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_recovery_codes_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recovery_codes")),
        sa.UniqueConstraint("code_hash", name=op.f("uq_recovery_codes_code_hash")),
    )
    op.create_index(op.f("ix_recovery_codes_user_id"), "recovery_codes", ["user_id"])
    op.create_table(
        "passkey_credentials",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("credential_id", sa.String(length=1400), nullable=False),
        sa.Column("public_key", sa.LargeBinary(), nullable=False),
        sa.Column("sign_count", sa.BigInteger(), nullable=False),
        sa.Column("transports", sa.JSON(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_used_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_passkey_credentials_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_passkey_credentials")),
        sa.UniqueConstraint("credential_id", name=op.f("uq_passkey_credentials_credential_id")),
    )
    op.create_index(op.f("ix_passkey_credentials_user_id"), "passkey_credentials", ["user_id"])
    op.create_table(
        "audit_events",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("occurred_at", UTCDateTime(), nullable=False),
        sa.Column("kind", sa.String(length=60), nullable=False),
        sa.Column("actor_id", sa.String(length=32), nullable=True),
        sa.Column("actor_label", sa.String(length=320), nullable=False),
        sa.Column("via", sa.String(length=60), nullable=False),
        sa.Column("account_id", sa.String(length=32), nullable=True),
        sa.Column("project_id", sa.String(length=32), nullable=True),
        sa.Column("target_type", sa.String(length=40), nullable=False),
        sa.Column("target_id", sa.String(length=64), nullable=True),
        sa.Column("target_label", sa.String(length=320), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=False),
        sa.Column("user_agent", sa.String(length=400), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_events")),
    )
    op.create_index("ix_audit_events_project_time", "audit_events", ["project_id", "occurred_at"])
    op.create_index("ix_audit_events_account_time", "audit_events", ["account_id", "occurred_at"])
    op.create_index("ix_audit_events_time", "audit_events", ["occurred_at"])


def downgrade() -> None:
    op.drop_table("audit_events")
    op.drop_table("passkey_credentials")
    op.drop_table("recovery_codes")
    with op.batch_alter_table("browser_sessions") as batch:
        batch.drop_column("last_used_at")
        batch.drop_column("user_agent")
        batch.drop_column("address")
    with op.batch_alter_table("refresh_tokens") as batch:
        batch.drop_column("user_agent")
        batch.drop_column("address")
    with op.batch_alter_table("projects") as batch:
        batch.drop_column("require_two_factor")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("totp_last_step")
        batch.drop_column("totp_enabled_at")
        batch.drop_column("totp_secret")
