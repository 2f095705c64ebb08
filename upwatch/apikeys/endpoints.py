"""API keys of a project: made and revoked by its owner or managers, listed to its members."""

from __future__ import annotations

from upwatch.apikeys.schemas import ApiKeyCreate, ApiKeyOut, NewApiKeyOut
from upwatch.apikeys.service import ApiKeyService
from upwatch.callers.dependencies import PersonUser
from upwatch.dependencies import RuntimeDep, Session
from upwatch.kit.routes import Routes
from upwatch.kit.schemas import DeletedOut

router = Routes("/projects", "api keys", (400, 401, 403, 404, 422, 429, 500))


@router.creates("createApiKey", path="/{id}/api-keys")
async def create_api_key(
    id: str, body: ApiKeyCreate, user: PersonUser, session: Session, runtime: RuntimeDep
) -> NewApiKeyOut:
    """A key for automation (CI, config as code) in this project. `key` is in this answer
    only. The key acts for the project's owner (its calls are metered to the owner) in this
    project alone: other projects answer 404, account, admin and billing routes 403, and a
    `read` key may only read (403 otherwise). The owner or a project manager makes keys
    (403 for other members; a key cannot make keys)."""
    stored, key = await ApiKeyService(session, runtime).create(user, id, body)
    out = ApiKeyOut.model_validate(stored)
    return NewApiKeyOut(**out.model_dump(), key=key)


@router.get("/{id}/api-keys", operation_id="listApiKeys")
async def list_api_keys(
    id: str, user: PersonUser, session: Session, runtime: RuntimeDep
) -> list[ApiKeyOut]:
    """The project's keys without the keys themselves, with when each was last used."""
    keys = await ApiKeyService(session, runtime).listed(user, id)
    return [ApiKeyOut.model_validate(k) for k in keys]


@router.deletes("revokeApiKey", path="/{id}/api-keys/{keyId}")
async def revoke_api_key(
    id: str, keyId: str, user: PersonUser, session: Session, runtime: RuntimeDep
) -> DeletedOut:
    """Revoke a key at once: its next request answers 401."""
    await ApiKeyService(session, runtime).revoke(user, id, keyId)
    return DeletedOut(id=keyId)
