from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from upwatch.kit.db import Base, IdMixin, TimestampMixin


@dataclass(frozen=True, slots=True)
class KeyGrant:
    """What an API key lets its bearer do: one project, read or write."""

    key_id: str
    project_id: str
    scope: str  # read, write

    @property
    def writes(self) -> bool:
        return self.scope == "write"


class User(IdMixin, TimestampMixin, Base):
    __tablename__ = "users"
    # ``grant`` and ``second_factor`` below are request state, not columns.
    __allow_unmapped__ = True

    # Set when the caller is an API key acting for this account (the project's owner): it then
    # reaches only the key's project, is never an administrator, and never manages members.
    grant: KeyGrant | None = None
    # Whether this person has a second factor (TOTP or a passkey), once a request needed to
    # know (``callers.access``: a project may require one); None until then.
    second_factor: bool | None = None

    email: Mapped[str] = mapped_column(String(320), unique=True)
    # None for OAuth-style accounts, which cannot log in with a password.
    password_hash: Mapped[str | None] = mapped_column(String(255))
    first_name: Mapped[str] = mapped_column(String(100), default="")
    last_name: Mapped[str] = mapped_column(String(100), default="")
    image: Mapped[str] = mapped_column(String(2048), default="")
    provider: Mapped[str | None] = mapped_column(String(50))
    provider_id: Mapped[str | None] = mapped_column(String(255))
    roles: Mapped[list[str]] = mapped_column(JSON, default=lambda: ["user"])
    is_email_verified: Mapped[bool] = mapped_column(Boolean, default=False)
    # Bumped to revoke every access token issued before (reset, password change, deletion).
    token_version: Mapped[int] = mapped_column(Integer, default=0)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # TOTP (RFC 6238): the shared secret, encrypted with the service key; on once confirmed.
    totp_secret: Mapped[str | None] = mapped_column(String(255))
    totp_enabled_at: Mapped[datetime | None]
    # The last time step a code was accepted for: a code is never accepted twice.
    totp_last_step: Mapped[int | None] = mapped_column(BigInteger)

    @property
    def is_admin(self) -> bool:
        return self.grant is None and bool({"admin", "super_admin"} & set(self.roles))

    @property
    def is_password_user(self) -> bool:
        return self.password_hash is not None
