"""Second factors of an account and the audit trail of security-relevant events."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from upwatch.kit.db import Base, IdMixin


class RecoveryCode(IdMixin, Base):
    """One of the single-use codes that stand in for a TOTP code; only its digest is kept."""

    __tablename__ = "recovery_codes"

    user_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime]
    used_at: Mapped[datetime | None]


class PasskeyCredential(IdMixin, Base):
    """A WebAuthn credential (passkey) registered to an account: its public key only."""

    __tablename__ = "passkey_credentials"

    user_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    # base64url of the authenticator's credential id (at most 1023 bytes).
    credential_id: Mapped[str] = mapped_column(String(1400), unique=True)
    public_key: Mapped[bytes] = mapped_column(LargeBinary)
    sign_count: Mapped[int] = mapped_column(BigInteger, default=0)
    transports: Mapped[list[str]] = mapped_column(JSON, default=list)
    name: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime]
    last_used_at: Mapped[datetime | None]


class AuditEvent(IdMixin, Base):
    """One security-relevant event, appended and never changed (only purged by retention).

    Who and what are kept as ids and a label copied at the time, without foreign keys: the
    record of a project's deletion must outlive the project, and a removed member's trail
    must outlive the membership."""

    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_project_time", "project_id", "occurred_at"),
        Index("ix_audit_events_account_time", "account_id", "occurred_at"),
        Index("ix_audit_events_time", "occurred_at"),
    )

    occurred_at: Mapped[datetime]
    kind: Mapped[str] = mapped_column(String(60))
    # Who did it: an account, or None (an anonymous failed sign-in, the service itself).
    actor_id: Mapped[str | None] = mapped_column(String(32))
    actor_label: Mapped[str] = mapped_column(String(320), default="")
    # Through what: "password", "api_key:<prefix>", "oidc", "passkey", "cli", ...
    via: Mapped[str] = mapped_column(String(60), default="")
    # The account the event concerns (shown in that person's security events).
    account_id: Mapped[str | None] = mapped_column(String(32))
    project_id: Mapped[str | None] = mapped_column(String(32))
    target_type: Mapped[str] = mapped_column(String(40), default="")
    target_id: Mapped[str | None] = mapped_column(String(64))
    target_label: Mapped[str] = mapped_column(String(320), default="")
    address: Mapped[str] = mapped_column(String(64), default="")
    user_agent: Mapped[str] = mapped_column(String(400), default="")
    # Small facts about the event (a role, a reason); never a secret.
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
