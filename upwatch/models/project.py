from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, MappedColumn, mapped_column

from upwatch.kit.db import Base, IdMixin, TimestampMixin


def project_ref() -> MappedColumn[str]:
    """The project a row belongs to: it goes with the project, and is indexed, as rows are
    listed by project."""
    return mapped_column(String(32), ForeignKey("projects.id", ondelete="CASCADE"), index=True)


class Project(IdMixin, TimestampMixin, Base):
    __tablename__ = "projects"

    name: Mapped[str] = mapped_column(String(100))
    description: Mapped[str] = mapped_column(Text, default="")
    owner_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    # The owner's rule: members reach the project only after signing in with a second factor.
    require_two_factor: Mapped[bool] = mapped_column(Boolean, default=False)
    # The language of the alerts its notification providers send (docs/languages.md).
    alert_language: Mapped[str] = mapped_column(String(5), default="en", server_default="en")


class ProjectMember(IdMixin, Base):
    """Who belongs to a project. The owner has a row too (role ``owner``), so every access
    question is one lookup in this table."""

    __tablename__ = "project_members"
    __table_args__ = (UniqueConstraint("project_id", "user_id"),)

    project_id: Mapped[str] = project_ref()
    user_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    role: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime]


class ProjectInvitation(IdMixin, Base):
    """An invitation to an address not (yet) proven to belong to an account. It becomes a
    membership when someone presents its token, which only that address received."""

    __tablename__ = "project_invitations"
    __table_args__ = (UniqueConstraint("project_id", "email"),)

    project_id: Mapped[str] = project_ref()
    email: Mapped[str] = mapped_column(String(320), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    invited_by: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("users.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime]
