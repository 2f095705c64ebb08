from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column

from upwatch.kit.db import Base, IdMixin, TimestampMixin
from upwatch.models.project import project_ref


class StatusPage(IdMixin, TimestampMixin, Base):
    """A project's public face: components (monitors shown under a name of the owner's
    choosing), status messages, and the project's incidents on those monitors."""

    __tablename__ = "status_pages"
    __table_args__ = (UniqueConstraint("project_id", "key"),)

    project_id: Mapped[str] = project_ref()
    name: Mapped[str] = mapped_column(String(100))
    slug: Mapped[str] = mapped_column(String(63), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    is_public: Mapped[bool] = mapped_column(Boolean, default=True)
    theme: Mapped[str] = mapped_column(String(10), default="light")
    # Stored lower-case, so uniqueness is case-insensitive as host names are.
    custom_domain: Mapped[str | None] = mapped_column(String(253), unique=True)
    custom_css: Mapped[str] = mapped_column(Text, default="")
    custom_js: Mapped[str] = mapped_column(Text, default="")
    key: Mapped[str | None] = mapped_column(String(64))  # config as code (kit/declared.py)
    # The IANA zone the HTML page and feeds show times in; the JSON keeps UTC.
    time_zone: Mapped[str] = mapped_column(String(64), default="UTC", server_default="UTC")
    # The language its HTML, feeds and badges speak (kit/languages.py); with
    # ``visitor_language`` a visitor's browser language (or choice) wins on the HTML page.
    language: Mapped[str] = mapped_column(String(5), default="en", server_default="en")
    visitor_language: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    # Who may read it (statuspages/access.py): "public", "password" or "members".
    # ``is_public`` stays as the seed's field and follows it: true exactly when "public".
    visibility: Mapped[str] = mapped_column(String(10), default="public", server_default="public")
    # Argon2id; set exactly when the visibility is (or was) "password". Its text signs the
    # visitors' cookies, so a new password voids them.
    password_hash: Mapped[str | None] = mapped_column(String(200))
    # CIDRs the client address must be in; empty: any address.
    allowed_networks: Mapped[list[str]] = mapped_column(JSON, default=list, server_default="[]")


class StatusPageGroup(IdMixin, TimestampMixin, Base):
    """A named group of a page's components, shown under one header with its worst
    member's status. Deleting it leaves its components ungrouped."""

    __tablename__ = "status_page_groups"
    __table_args__ = (UniqueConstraint("status_page_id", "name"),)

    # Indexed by the unique constraint, whose first column it is.
    status_page_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("status_pages.id", ondelete="CASCADE")
    )
    name: Mapped[str] = mapped_column(String(100))
    # "order" in the API, shared with the page's ungrouped components.
    position: Mapped[int] = mapped_column(Integer, default=0)


class StatusPageComponent(IdMixin, TimestampMixin, Base):
    """One monitor as a status page shows it. Deleting the monitor removes it."""

    __tablename__ = "status_page_components"
    __table_args__ = (UniqueConstraint("status_page_id", "monitor_id"),)

    # Indexed by the unique constraint, whose first column it is.
    status_page_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("status_pages.id", ondelete="CASCADE")
    )
    monitor_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("monitors.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(100))
    description: Mapped[str] = mapped_column(Text, default="")
    # "order" in the API; a reserved word in SQL.
    position: Mapped[int] = mapped_column(Integer, default=0)
    # At most one group, of the same page (the service sees to it).
    group_id: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("status_page_groups.id", ondelete="SET NULL"), index=True
    )


class StatusMessage(Base):
    """A message posted on a status page; the newest is the current one, and an empty one
    clears it. Kept as the page's history."""

    __tablename__ = "status_messages"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    status_page_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("status_pages.id", ondelete="CASCADE"), index=True
    )
    message: Mapped[str] = mapped_column(Text)
    component_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    # Who posted it; the message stays when the account goes.
    user_id: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("users.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime]


class StatusPageSubscriber(IdMixin, Base):
    """Who follows a page from outside its project: an e-mail address (a visitor, mailed
    only once ``confirmed_at`` is set: double opt-in), a webhook or a Slack incoming webhook
    (added by a project member, confirmed on creation). The links in the e-mails carry tokens
    derived from the id and the service's secret, so nothing secret is stored for them, and
    deleting the row voids them."""

    __tablename__ = "status_page_subscribers"
    __table_args__ = (
        UniqueConstraint("status_page_id", "email"),
        # The fan-out walks a page's subscribers by id (keyset pagination).
        Index("ix_status_page_subscribers_page_id", "status_page_id", "id"),
    )

    status_page_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("status_pages.id", ondelete="CASCADE")
    )
    # email, webhook or slack (statuspages/rules.SUBSCRIBER_KINDS).
    kind: Mapped[str] = mapped_column(String(10), default="email", server_default="email")
    email: Mapped[str | None] = mapped_column(String(320))
    # Where a webhook or Slack notice is posted; a Slack URL is itself a secret (masked).
    url: Mapped[str | None] = mapped_column(Text)
    # The Standard Webhooks signing secret of a webhook subscriber (whsec_...), shown once.
    secret: Mapped[str | None] = mapped_column(String(100))
    # The page's component ids the subscriber follows; null: all of them.
    component_ids: Mapped[list[str] | None] = mapped_column(JSON)
    created_at: Mapped[datetime]
    confirmed_at: Mapped[datetime | None]
