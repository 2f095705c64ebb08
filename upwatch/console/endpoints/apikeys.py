"""A project's API keys: create one (its secret shown once), list, revoke."""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any, Final, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import ValidationError

from upwatch.apikeys.schemas import ApiKeyCreate, Scope
from upwatch.apikeys.service import ApiKeyService
from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.kit.errors import ProblemError
from upwatch.kit.languages import N_
from upwatch.projects.repository import ProjectRepository

router = APIRouter(prefix="/app")
SCOPES: Final = get_args(Scope)
SCOPE_LABELS: Final = {
    "read": N_("read: may only read"),
    "write": N_("write: may also change things"),
}
# A key's scope as a word (translated where shown).
SCOPE_WORDS: Final = {"read": N_("read"), "write": N_("write")}


async def _project(page: Page, project_id: str) -> Any:
    access = await ProjectRepository(page.session).access(page.user, project_id)
    if access is None:
        page.not_found(N_("project"))
    return access.project


async def _keys_page(page: Page, project_id: str, status: int = 200, **context: Any) -> Response:
    project = await _project(page, project_id)
    keys = await ApiKeyService(page.session, page.runtime).listed(page.user, project_id)
    return page.html(
        "api_keys.html",
        status,
        title=page.gettext("API keys of %(name)s") % {"name": project.name},
        section="projects",
        project=project,
        keys=keys,
        scopes=[(s, page.gettext(SCOPE_LABELS[s]) if s in SCOPE_LABELS else s) for s in SCOPES],
        scope_words=SCOPE_WORDS,
        **context,
    )


@router.get("/projects/{project_id}/api-keys", openapi_extra=offers("listApiKeys"))
async def keys_page(project_id: str, page: SignedInPage) -> Response:
    return await _keys_page(page, project_id)


def _expiry(day: str, zone: str) -> str | None:
    """A browser's date, the key's last day, as the instant it ends in ``zone``; anything else
    as it came, for the API's own check to name."""
    if not day:
        return None
    try:
        end = datetime.combine(date.fromisoformat(day), time.max, ZoneInfo(zone))
    except (ValueError, ZoneInfoNotFoundError):
        return day
    return end.isoformat()


@router.post("/projects/{project_id}/api-keys", openapi_extra=offers("createApiKey"))
async def create_key(project_id: str, page: SignedInPage) -> Response:
    form = await page.form()
    try:
        body = ApiKeyCreate.model_validate(
            {
                "name": form.get("name", ""),
                "scope": form.get("scope", ""),
                "expiresAt": _expiry(form.get("expiresAt", ""), page.zone),
            }
        )
        stored, key = await ApiKeyService(page.session, page.runtime).create(
            page.user, project_id, body
        )
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("project"))
        return await _keys_page(page, project_id, status, form=form, errors=errors)
    # The answer to the post itself, never a redirect: the key is in no cookie, URL or log,
    # and no later page can show it again.
    return page.html(
        "api_key_created.html",
        title=page.gettext("API key %(name)s created") % {"name": stored.name},
        section="projects",
        project=await _project(page, project_id),
        stored=stored,
        key=key,
        scope_words=SCOPE_WORDS,
    )


async def _visible_key(page: Page, project_id: str, key_id: str) -> Any:
    keys = await ApiKeyService(page.session, page.runtime).listed(page.user, project_id)
    found = next((k for k in keys if k.id == key_id), None)
    if found is None:
        page.not_found(N_("API key"))
    return found


@router.get("/projects/{project_id}/api-keys/{key_id}/revoke")
async def confirm_revoke(project_id: str, key_id: str, page: SignedInPage) -> Response:
    await _project(page, project_id)
    key = await _visible_key(page, project_id, key_id)
    back = f"/app/projects/{project_id}/api-keys"
    return page.html(
        "confirm_action.html",
        title=page.gettext("Revoke the API key %(name)s?") % {"name": key.name},
        section="projects",
        action=f"{back}/{key_id}/revoke",
        detail=page.gettext(
            "Every program using the key %(prefix)s… is refused from its next request. "
            "This cannot be undone."
        )
        % {"prefix": key.prefix},
        confirm=page.gettext("Revoke the key"),
        cancel=back,
    )


@router.post(
    "/projects/{project_id}/api-keys/{key_id}/revoke", openapi_extra=offers("revokeApiKey")
)
async def revoke_key(project_id: str, key_id: str, page: SignedInPage) -> Response:
    back = f"/app/projects/{project_id}/api-keys"
    async with page.button(N_("API key"), back, N_("Not revoked")):
        await ApiKeyService(page.session, page.runtime).revoke(page.user, project_id, key_id)
    return page.redirect(back, page.gettext("API key revoked."))
