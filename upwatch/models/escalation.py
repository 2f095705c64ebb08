from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, String
from sqlalchemy.orm import Mapped, mapped_column

from upwatch.kit.db import Base, IdMixin, TimestampMixin
from upwatch.models.project import project_ref


class EscalationPolicy(IdMixin, TimestampMixin, Base):
    """Who is paged, in order, while an incident of a monitor naming this policy is open and
    unacknowledged (``escalation/rules.py``)."""

    __tablename__ = "escalation_policies"

    project_id: Mapped[str] = project_ref()
    name: Mapped[str] = mapped_column(String(100))
    # [{"providerIds": [...], "delayMinutes": n}, ...]; a deleted provider is skipped.
    steps: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
