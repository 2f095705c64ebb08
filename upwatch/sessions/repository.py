"""Every query of the sessions list: live refresh-token families and browser sessions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, Subquery, delete, func, literal, select, union_all, update
from sqlalchemy.orm import aliased

from upwatch.kit.repository import Listed, Repository
from upwatch.models import BrowserSession, RefreshToken, User


class SessionDirectory(Repository):
    def _live(self, user: User, now: datetime) -> Subquery:
        """One row per live session of ``user``: (id, kind, created_at, last_used_at, address,
        user_agent, expires_at)."""
        # A family's head is its one link neither used nor revoked; its first link (whose id
        # the family takes) says when the login happened.
        head, first = aliased(RefreshToken), aliased(RefreshToken)
        api = (
            select(
                head.family_id.label("id"),
                literal("api").label("kind"),
                func.coalesce(first.created_at, head.created_at).label("created_at"),
                head.created_at.label("last_used_at"),
                head.address.label("address"),
                head.user_agent.label("user_agent"),
                head.expires_at.label("expires_at"),
            )
            .outerjoin(first, first.id == head.family_id)
            .where(
                head.user_id == user.id,
                head.revoked_at.is_(None),
                head.used_at.is_(None),
                head.expires_at > now,
            )
        )
        console = select(
            BrowserSession.id,
            literal("console"),
            BrowserSession.created_at,
            func.coalesce(BrowserSession.last_used_at, BrowserSession.created_at),
            BrowserSession.address,
            BrowserSession.user_agent,
            BrowserSession.expires_at,
        ).where(
            BrowserSession.user_id == user.id,
            BrowserSession.expires_at > now,
            # A password change ends every console session made before it.
            BrowserSession.token_version == user.token_version,
        )
        return union_all(api, console).subquery()

    async def listed(self, user: User, now: datetime, limit: int, offset: int) -> Listed[Row[Any]]:
        live = self._live(user, now)
        total = await self.session.scalar(select(func.count()).select_from(live))
        rows = await self.session.execute(
            select(live).order_by(live.c.last_used_at.desc(), live.c.id).limit(limit).offset(offset)
        )
        return Listed(rows.all(), int(total or 0))

    async def live_ids(self, user: User, now: datetime) -> Sequence[tuple[str, str]]:
        """(id, kind) of every live session of ``user``."""
        live = self._live(user, now)
        rows = await self.session.execute(select(live.c.id, live.c.kind))
        return [(row.id, row.kind) for row in rows]

    async def end_family(self, user_id: str, family_id: str, now: datetime) -> None:
        await self.session.execute(
            update(RefreshToken)
            .where(
                RefreshToken.user_id == user_id,
                RefreshToken.family_id == family_id,
                RefreshToken.revoked_at.is_(None),
            )
            .values(revoked_at=now)
        )

    async def end_browser_session(self, user_id: str, session_id: str) -> None:
        await self.session.execute(
            delete(BrowserSession).where(
                BrowserSession.user_id == user_id, BrowserSession.id == session_id
            )
        )

    async def end_all_but(self, user_id: str, keep: str | None, now: datetime) -> None:
        """End every session of the account except ``keep`` (a family or browser session)."""
        families = update(RefreshToken).where(
            RefreshToken.user_id == user_id, RefreshToken.revoked_at.is_(None)
        )
        browsers = delete(BrowserSession).where(BrowserSession.user_id == user_id)
        if keep is not None:
            families = families.where(RefreshToken.family_id != keep)
            browsers = browsers.where(BrowserSession.id != keep)
        await self.session.execute(families.values(revoked_at=now))
        await self.session.execute(browsers)
