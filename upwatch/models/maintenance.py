from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from upwatch.kit.db import Base, IdMixin, TimestampMixin
from upwatch.models.project import project_ref


class MaintenanceWindow(IdMixin, TimestampMixin, Base):
    """Time when a project's monitors (all, or the ones listed) are checked and stored but open
    no incident and alert no one. One-off, or recurring by an RFC 5545 RRULE in ``timezone``
    whose occurrences last ``ends_at - starts_at`` (``maintenance/rules.py``)."""

    __tablename__ = "maintenance_windows"
    __table_args__ = (UniqueConstraint("project_id", "key"),)

    project_id: Mapped[str] = project_ref()
    title: Mapped[str] = mapped_column(String(200))
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime]
    rrule: Mapped[str | None] = mapped_column(Text)
    timezone: Mapped[str] = mapped_column(String(64), default="UTC")
    # False: only the monitors in maintenance_window_monitors.
    whole_project: Mapped[bool] = mapped_column(Boolean, default=True)
    key: Mapped[str | None] = mapped_column(String(64))  # config as code (kit/declared.py)


class MaintenanceWindowMonitor(Base):
    """A monitor a window covers; deleting either removes the row."""

    __tablename__ = "maintenance_window_monitors"

    window_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("maintenance_windows.id", ondelete="CASCADE"), primary_key=True
    )
    monitor_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("monitors.id", ondelete="CASCADE"), primary_key=True, index=True
    )
