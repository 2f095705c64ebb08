"""An API key as a caller: a bearer credential that acts for its project's owner, in that
project only."""

from __future__ import annotations

from datetime import datetime, timedelta

from upwatch.callers.repository import KeyDirectory
from upwatch.kit.db import Database
from upwatch.kit.errors import Unauthorized
from upwatch.kit.security import token_digest
from upwatch.models import ApiKey, Project, User
from upwatch.models.user import KeyGrant

# Recognisable in logs, config files and secret scanners.
KEY_PREFIX = "upw_"
# Last use is written at most this often per key.
TOUCH_EVERY = timedelta(minutes=1)


def is_api_key(token: str) -> bool:
    return token.startswith(KEY_PREFIX)


async def caller_of_key(keys: KeyDirectory, key: str, now: datetime) -> tuple[User, ApiKey]:
    """The account a key acts for (its project's owner), carrying the key's grant; 401 for a
    key that is unknown, revoked or expired."""
    stored = await keys.by_digest(token_digest(key))
    if stored is None:
        raise Unauthorized("the API key is invalid or revoked")
    if stored.expires_at is not None and stored.expires_at <= now:
        raise Unauthorized("the API key has expired")
    project = await keys.session.get(Project, stored.project_id)
    owner = None if project is None else await keys.session.get(User, project.owner_id)
    if owner is None:
        raise Unauthorized("the API key is invalid or revoked")
    owner.grant = KeyGrant(stored.id, stored.project_id, stored.scope)
    return owner, stored


async def touch_key(database: Database, key_id: str, now: datetime) -> None:
    """Record a key's use, after the response (its own short transaction)."""
    async with database.worksession() as session:
        await KeyDirectory(session).touch(key_id, now)
        await session.commit()
