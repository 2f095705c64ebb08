"""Projects: the list, a new one, its page (settings, members and their roles, invitations),
deleting it with confirmation."""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import ValidationError

from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.kit import languages
from upwatch.kit.errors import ProblemError
from upwatch.kit.languages import N_
from upwatch.projects.schemas import InviteRequest, ProjectCreate, ProjectUpdate
from upwatch.projects.service import ProjectService

router = APIRouter(prefix="/app")
# How the pages name a role in a project (translated where shown).
ROLES: Final = {"owner": N_("owner"), "member": N_("member"), "admin": N_("admin")}


async def projects_of(page: Page) -> list[Any]:
    accesses, _total = await ProjectService(page.session, page.runtime).list(page.user, 1000, 0)
    return accesses


async def _projects_page(page: Page, status: int = 200, **context: Any) -> Response:
    projects = await projects_of(page)
    return page.html(
        "projects.html",
        status,
        title=page.gettext("Projects"),
        section="projects",
        projects=projects,
        roles=ROLES,
        languages=list(languages.NAMES.items()),
        **context,
    )


@router.get("/projects", openapi_extra=offers("listProjects"))
async def projects_page(page: SignedInPage) -> Response:
    return await _projects_page(page)


@router.post("/projects", openapi_extra=offers("createProject"))
async def create_project(page: SignedInPage) -> Response:
    form = await page.form()
    try:
        body = ProjectCreate(name=form.get("name", ""), description=form.get("description", ""))
        await ProjectService(page.session, page.runtime).create(page.user, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("project"))
        return await _projects_page(page, status, form=form, errors=errors)
    return page.redirect(
        "/app/monitors/new", page.gettext("Project %(name)s created.") % {"name": body.name}
    )


async def _project_page(page: Page, project_id: str, status: int = 200, **context: Any) -> Response:
    service = ProjectService(page.session, page.runtime)
    try:
        access = await service.visible(page.user, project_id)
        members, invitations = await service.members(page.user, project_id)
    except ProblemError:
        page.not_found(N_("project"))
    context.setdefault(
        "settings",
        {
            "name": access.project.name,
            "description": access.project.description,
            "alertLanguage": access.project.alert_language,
        },
    )
    return page.html(
        "project.html",
        status,
        title=access.project.name,
        section="projects",
        access=access,
        members=members,
        invitations=invitations,
        roles=ROLES,
        languages=list(languages.NAMES.items()),
        **context,
    )


@router.get("/projects/{project_id}", openapi_extra=offers("getProject", "listProjectMembers"))
async def project_page(project_id: str, page: SignedInPage) -> Response:
    return await _project_page(page, project_id)


@router.post("/projects/{project_id}/invite", openapi_extra=offers("inviteProjectMember"))
async def invite(project_id: str, page: SignedInPage) -> Response:
    form = await page.form()
    service = ProjectService(page.session, page.runtime)
    try:
        body = InviteRequest(email=form.get("email", ""))
        _made, member = await service.invite(page.user, project_id, body.email)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("project"))
        return await _project_page(page, project_id, status, form=form, errors=errors)
    done = (
        page.gettext("%(email)s added.")
        if member
        else page.gettext("Invitation sent to %(email)s.")
    ) % {"email": body.email}
    return page.redirect(f"/app/projects/{project_id}", done)


@router.post(
    "/projects/{project_id}/members/{user_id}/remove", openapi_extra=offers("removeProjectMember")
)
async def remove_member(project_id: str, user_id: str, page: SignedInPage) -> Response:
    async with page.button(N_("member"), f"/app/projects/{project_id}", N_("Not removed")):
        await ProjectService(page.session, page.runtime).remove_member(
            page.user, project_id, user_id
        )
    if user_id == page.user.id:
        return page.redirect("/app/projects", page.gettext("You left the project."))
    return page.redirect(f"/app/projects/{project_id}", page.gettext("Member removed."))


@router.post("/projects/{project_id}/settings", openapi_extra=offers("updateProject"))
async def save_project(project_id: str, page: SignedInPage) -> Response:
    form = await page.form()
    service = ProjectService(page.session, page.runtime)
    try:
        body = ProjectUpdate.model_validate(
            {
                "name": form.get("name", ""),
                "description": form.get("description", ""),
                "alertLanguage": form.get("alertLanguage") or None,
            }
        )
        access = await service.update(page.user, project_id, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("project"))
        return await _project_page(page, project_id, status, settings=form, errors=errors)
    return page.redirect(
        f"/app/projects/{project_id}",
        page.gettext("Project %(name)s saved.") % {"name": access.project.name},
    )


@router.post("/projects/{project_id}/two-factor", openapi_extra=offers("updateProject"))
async def save_two_factor(project_id: str, page: SignedInPage) -> Response:
    """The owner's setting: members need a second factor to open the project."""
    form = await page.form()
    service = ProjectService(page.session, page.runtime)
    try:
        body = ProjectUpdate(requireTwoFactor=form.get("require_two_factor") == "true")
        access = await service.update(page.user, project_id, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("project"))
        why = {"require_two_factor": " ".join(errors.values())}
        return await _project_page(page, project_id, status, errors=why)
    done = (
        page.gettext("Members now need two-factor sign-in to open this project.")
        if access.project.require_two_factor
        else page.gettext("Members no longer need two-factor sign-in to open this project.")
    )
    return page.redirect(f"/app/projects/{project_id}", done)


@router.get("/projects/{project_id}/delete")
async def confirm_delete(project_id: str, page: SignedInPage) -> Response:
    """Asks first: a project goes with everything in it."""
    try:
        access = await ProjectService(page.session, page.runtime).visible(page.user, project_id)
    except ProblemError:
        page.not_found(N_("project"))
    return page.html(
        "project_delete.html",
        title=page.gettext("Delete %(name)s?") % {"name": access.project.name},
        section="projects",
        access=access,
    )


@router.post("/projects/{project_id}/delete", openapi_extra=offers("deleteProject"))
async def delete_project(project_id: str, page: SignedInPage) -> Response:
    async with page.button(N_("project"), f"/app/projects/{project_id}", N_("Not deleted")):
        await ProjectService(page.session, page.runtime).delete(page.user, project_id)
    return page.redirect("/app/projects", page.gettext("Project deleted, with everything in it."))


@router.post(
    "/projects/{project_id}/invitations/{invitation_id}/cancel",
    openapi_extra=offers("cancelProjectInvitation"),
)
async def cancel_invitation(project_id: str, invitation_id: str, page: SignedInPage) -> Response:
    back = f"/app/projects/{project_id}"
    async with page.button(N_("invitation"), back, N_("Not cancelled")):
        await ProjectService(page.session, page.runtime).cancel_invitation(
            page.user, project_id, invitation_id
        )
    return page.redirect(back, page.gettext("Invitation cancelled: its link no longer works."))
