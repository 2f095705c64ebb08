from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from upwatch.kit.db import Base, IdMixin
from upwatch.models.project import project_ref


class ApiKey(IdMixin, Base):
    """A long-lived bearer credential for automation, limited to one project and a scope. Only
    its digest is kept; the key itself is shown once, when it is made."""

    __tablename__ = "api_keys"

    project_id: Mapped[str] = project_ref()
    created_by: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("users.id", ondelete="SET NULL")
    )
    name: Mapped[str] = mapped_column(String(100))
    scope: Mapped[str] = mapped_column(String(10))  # read, write
    prefix: Mapped[str] = mapped_column(String(16))  # what lists show, to tell keys apart
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]
