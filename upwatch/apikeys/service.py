"""API key rules: the project's owner and managers make and revoke keys, any member lists them;
a key is a bearer credential that acts for the project's owner, in that project only."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta

from upwatch.apikeys.repository import ApiKeyRepository
from upwatch.apikeys.schemas import ApiKeyCreate
from upwatch.kit.db import Database
from upwatch.kit.errors import Forbidden, NotFound, Unauthorized, ValidationFailed
from upwatch.kit.security import token_digest
from upwatch.models import ApiKey, Project, User
from upwatch.models.user import KeyGrant
from upwatch.projects.repository import ProjectAccess, ProjectRepository
from upwatch.runtime import DomainService, uses

# Recognisable in logs, config files and secret scanners.
KEY_PREFIX = "upw_"
SHOWN_CHARACTERS = 12
# Last use is written at most this often per key.
TOUCH_EVERY = timedelta(minutes=1)


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def is_api_key(token: str) -> bool:
    return token.startswith(KEY_PREFIX)


class ApiKeyService(DomainService):
    keys = uses(ApiKeyRepository)
    projects = uses(ProjectRepository)

    async def _managed(self, caller: User, project_id: str) -> ProjectAccess:
        access = await self.projects.access(caller, project_id)
        if access is None:
            raise NotFound("no such project")
        if not access.can_manage_members:
            raise Forbidden("API keys are made and revoked by the owner or a project manager")
        return access

    async def create(self, caller: User, project_id: str, body: ApiKeyCreate) -> tuple[ApiKey, str]:
        await self._managed(caller, project_id)
        now = self.runtime.clock.now()
        if body.expiresAt is not None and body.expiresAt <= now:
            raise ValidationFailed.on("expiresAt", "must be in the future")
        key = new_key()
        stored = await self.keys.add(
            ApiKey(
                project_id=project_id,
                created_by=caller.id,
                name=body.name,
                scope=body.scope,
                prefix=key[:SHOWN_CHARACTERS],
                digest=token_digest(key),
                created_at=now,
                expires_at=body.expiresAt,
                last_used_at=None,
            )
        )
        return stored, key

    async def listed(self, caller: User, project_id: str) -> Sequence[ApiKey]:
        if await self.projects.access(caller, project_id) is None:
            raise NotFound("no such project")
        return await self.keys.of_project(project_id)

    async def revoke(self, caller: User, project_id: str, key_id: str) -> None:
        await self._managed(caller, project_id)
        if not await self.keys.revoke(project_id, key_id):
            raise NotFound("no such API key")


async def caller_of_key(
    keys: ApiKeyRepository, projects: ProjectRepository, key: str, now: datetime
) -> tuple[User, ApiKey]:
    """The account a key acts for (its project's owner), carrying the key's grant; 401 for a
    key that is unknown, revoked or expired."""
    stored = await keys.by_digest(token_digest(key))
    if stored is None:
        raise Unauthorized("the API key is invalid or revoked")
    if stored.expires_at is not None and stored.expires_at <= now:
        raise Unauthorized("the API key has expired")
    project: Project | None = await projects.get(stored.project_id)
    owner = None if project is None else await keys.session.get(User, project.owner_id)
    if owner is None:
        raise Unauthorized("the API key is invalid or revoked")
    owner.grant = KeyGrant(stored.id, stored.project_id, stored.scope)
    return owner, stored


async def touch_key(database: Database, key_id: str, now: datetime) -> None:
    """Record a key's use, after the response (its own short transaction)."""
    async with database.worksession() as session:
        await ApiKeyRepository(session).touch(key_id, now)
        await session.commit()
