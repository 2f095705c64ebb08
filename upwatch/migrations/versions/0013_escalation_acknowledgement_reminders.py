"""escalation policies, incident acknowledgement and paging state, provider reminders

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24 20:15:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import upwatch.kit.db

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "escalation_policies",
        sa.Column("project_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("created_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_escalation_policies_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_escalation_policies")),
    )
    with op.batch_alter_table("escalation_policies") as batch:
        batch.create_index(
            batch.f("ix_escalation_policies_project_id"), ["project_id"], unique=False
        )
    with op.batch_alter_table("monitors") as batch:
        batch.add_column(sa.Column("escalation_policy_id", sa.String(length=32), nullable=True))
        batch.create_index(
            batch.f("ix_monitors_escalation_policy_id"), ["escalation_policy_id"], unique=False
        )
        batch.create_foreign_key(
            batch.f("fk_monitors_escalation_policy_id_escalation_policies"),
            "escalation_policies",
            ["escalation_policy_id"],
            ["id"],
            ondelete="SET NULL",
        )
    with op.batch_alter_table("incidents") as batch:
        batch.add_column(
            sa.Column("acknowledged_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=True)
        )
        batch.add_column(sa.Column("acknowledged_by", sa.String(length=32), nullable=True))
        batch.add_column(
            sa.Column("opened_at", upwatch.kit.db.UTCDateTime(timezone=True), nullable=True)
        )
        batch.add_column(
            sa.Column("escalation_step", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(
            sa.Column("page_version", sa.Integer(), nullable=False, server_default="0")
        )
        batch.create_foreign_key(
            batch.f("fk_incidents_acknowledged_by_users"),
            "users",
            ["acknowledged_by"],
            ["id"],
            ondelete="SET NULL",
        )
    with op.batch_alter_table("incident_updates") as batch:
        batch.add_column(
            sa.Column("internal", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("notification_providers") as batch:
        batch.add_column(sa.Column("repeat_every_minutes", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("incident_updates") as batch:
        batch.drop_column("internal")
    with op.batch_alter_table("notification_providers") as batch:
        batch.drop_column("repeat_every_minutes")
    with op.batch_alter_table("incidents") as batch:
        batch.drop_constraint(batch.f("fk_incidents_acknowledged_by_users"), type_="foreignkey")
        batch.drop_column("page_version")
        batch.drop_column("escalation_step")
        batch.drop_column("opened_at")
        batch.drop_column("acknowledged_by")
        batch.drop_column("acknowledged_at")
    with op.batch_alter_table("monitors") as batch:
        batch.drop_constraint(
            batch.f("fk_monitors_escalation_policy_id_escalation_policies"), type_="foreignkey"
        )
        batch.drop_index(batch.f("ix_monitors_escalation_policy_id"))
        batch.drop_column("escalation_policy_id")
    with op.batch_alter_table("escalation_policies") as batch:
        batch.drop_index(batch.f("ix_escalation_policies_project_id"))
    op.drop_table("escalation_policies")
