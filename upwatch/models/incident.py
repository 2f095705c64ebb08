from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from upwatch.kit.db import Base, IdMixin, TimestampMixin


class Incident(IdMixin, TimestampMixin, Base):
    __tablename__ = "incidents"
    __table_args__ = (Index("ix_incidents_project_created", "project_id", "created_at"),)

    project_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("projects.id", ondelete="CASCADE")
    )
    # A deleted monitor leaves its incidents as history.
    monitor_id: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("monitors.id", ondelete="SET NULL"), index=True
    )
    title: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(20))
    severity: Mapped[str] = mapped_column(String(20))
    # Opened by the status machine (and so resolved by it), not by a person.
    automatic: Mapped[bool] = mapped_column(Boolean, default=False)
    started_at: Mapped[datetime]
    resolved_at: Mapped[datetime | None]
    acknowledged_at: Mapped[datetime | None]
    acknowledged_by: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("users.id", ondelete="SET NULL")
    )
    # Monitors depending on this one that went down while it was down (no incident of their own).
    dependents: Mapped[list[str]] = mapped_column(JSON, default=list)
    # Where status pages show it besides the components of its monitor: the whole of these
    # pages, and these components (of pages of the same project). Ids that no longer exist
    # (a page or component deleted) are ignored by the pages.
    status_page_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    component_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    # When the status machine opened it (the confirming check): escalation delays count from
    # here. None for incidents people open, which page no one.
    opened_at: Mapped[datetime | None]
    # Steps of the monitor's escalation policy paged so far (only ever grows).
    escalation_step: Mapped[int] = mapped_column(Integer, default=0)
    # Bumped by every paging decision, so two pagers never page for the same moment twice.
    page_version: Mapped[int] = mapped_column(Integer, default=0)


class IncidentUpdate(Base):
    """One entry of an incident's timeline; integer ids keep entries made in the same
    instant in the order they were made."""

    __tablename__ = "incident_updates"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    incident_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("incidents.id", ondelete="CASCADE"), index=True
    )
    status: Mapped[str] = mapped_column(String(20))
    message: Mapped[str] = mapped_column(Text)
    # Written by the status machine, not a person: its text may quote a probe's error
    # (addresses, names), so public pages say it in words of their own.
    automatic: Mapped[bool] = mapped_column(Boolean, default=False)
    # For the team only (acknowledgements, escalation): status pages and subscribers never
    # see it.
    internal: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime]
