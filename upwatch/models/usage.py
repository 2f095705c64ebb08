from __future__ import annotations

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from upwatch.kit.db import Base


class ApiUsage(Base):
    """Authenticated requests of one account on one UTC day (flushed in batches)."""

    __tablename__ = "api_usage"

    user_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    day: Mapped[str] = mapped_column(String(10), primary_key=True)  # YYYY-MM-DD, UTC
    count: Mapped[int] = mapped_column(Integer, default=0)
