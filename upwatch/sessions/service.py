"""The rules of the sessions list: which sessions are live, and ending them."""

from __future__ import annotations

from upwatch.audit import kinds
from upwatch.audit.service import record
from upwatch.kit.errors import NotFound
from upwatch.kit.repository import Listed
from upwatch.models import User
from upwatch.runtime import DomainService, uses
from upwatch.sessions.repository import SessionDirectory
from upwatch.sessions.schemas import SessionOut


class SessionService(DomainService):
    sessions = uses(SessionDirectory)

    async def listed(
        self, user: User, current: str | None, limit: int, offset: int
    ) -> Listed[SessionOut]:
        """The account's live sessions, latest used first; ``current`` is the one asking."""
        page = await self.sessions.listed(user, self.runtime.clock.now(), limit, offset)
        rows = [
            SessionOut.model_validate({**row._mapping, "current": row.id == current})
            for row in page.rows
        ]
        return Listed(rows, page.total)

    async def end(self, user: User, session_id: str, current: str | None) -> None:
        """End one live session of ``user`` (the current one too: that is signing out); any
        other id, another person's included, is a 404."""
        now = self.runtime.clock.now()
        kind = dict(await self.sessions.live_ids(user, now)).get(session_id)
        if kind is None:
            raise NotFound("there is no such session, or it has already ended")
        if kind == "api":
            await self.sessions.end_family(user.id, session_id, now)
        else:
            await self.sessions.end_browser_session(user.id, session_id)
        await record(
            self.session,
            kinds.SESSION_ENDED,
            now,
            actor=user,
            target_type="session",
            target_id=session_id,
            target_label=kind,
            details={"kind": kind, "current": session_id == current},
        )

    async def end_others(self, user: User, current: str | None) -> int:
        """End every session of ``user`` but ``current``; how many were live."""
        now = self.runtime.clock.now()
        others = [i for i, _ in await self.sessions.live_ids(user, now) if i != current]
        await self.sessions.end_all_but(user.id, current, now)
        await record(
            self.session,
            kinds.SESSIONS_ENDED_ELSEWHERE,
            now,
            actor=user,
            target_type="session",
            target_id=current,
            details={"count": len(others)},
        )
        return len(others)
