"""API key rules: the project's owner and managers make and revoke keys, any member lists them;
a key is a bearer credential that acts for the project's owner, in that project only."""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from upwatch.apikeys.repository import ApiKeyRepository
from upwatch.apikeys.schemas import ApiKeyCreate
from upwatch.audit import kinds
from upwatch.audit.service import record
from upwatch.callers.apikeys import KEY_PREFIX
from upwatch.kit.errors import Forbidden, NotFound, ValidationFailed
from upwatch.kit.security import token_digest
from upwatch.models import ApiKey, User
from upwatch.projects.repository import ProjectAccess, ProjectRepository
from upwatch.runtime import DomainService, uses

SHOWN_CHARACTERS = 12


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


class ApiKeyService(DomainService):
    keys = uses(ApiKeyRepository)
    projects = uses(ProjectRepository)

    async def _managed(self, caller: User, project_id: str) -> ProjectAccess:
        access = await self.projects.get_visible(caller, project_id)
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
        await self._record(kinds.API_KEY_CREATED, caller, stored)
        return stored, key

    async def _record(self, kind: str, caller: User, key: ApiKey) -> None:
        # The prefix tells keys apart and is listed to every member; the key never appears.
        await record(
            self.session,
            kind,
            self.runtime.clock.now(),
            actor=caller,
            project_id=key.project_id,
            target_type="api_key",
            target_id=key.id,
            target_label=key.prefix,
            details={"name": key.name, "scope": key.scope},
        )

    async def listed(self, caller: User, project_id: str) -> Sequence[ApiKey]:
        await self.projects.get_visible(caller, project_id)
        return await self.keys.of_project(project_id)

    async def revoke(self, caller: User, project_id: str, key_id: str) -> None:
        await self._managed(caller, project_id)
        key = await self.keys.of_project_by_id(project_id, key_id)
        if key is None or not await self.keys.revoke(project_id, key_id):
            raise NotFound("no such API key")
        await self._record(kinds.API_KEY_REVOKED, caller, key)
