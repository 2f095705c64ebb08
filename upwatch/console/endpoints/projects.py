"""Projects, their members and invitations."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import ValidationError

from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.kit.errors import ProblemError
from upwatch.projects.schemas import InviteRequest, ProjectCreate
from upwatch.projects.service import ProjectService

router = APIRouter(prefix="/app")


async def projects_of(page: Page) -> list[Any]:
    accesses, _total = await ProjectService(page.session, page.runtime).list(page.user, 1000, 0)
    return accesses


async def _projects_page(page: Page, status: int = 200, **context: Any) -> Response:
    projects = await projects_of(page)
    return page.html(
        "projects.html", status, title="Projects", section="projects", projects=projects, **context
    )


@router.get("/projects", openapi_extra=offers("listProjects"))
async def projects_page(page: SignedInPage) -> Response:
    return await _projects_page(page)


@router.post("/projects", openapi_extra=offers("createProject"))
async def create_project(page: SignedInPage) -> Response:
    form = await page.form()
    try:
        body = ProjectCreate(name=form.get("name", ""))
        await ProjectService(page.session, page.runtime).create(page.user, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, "project")
        return await _projects_page(page, status, form=form, errors=errors)
    return page.redirect("/app/monitors/new", f"Project {body.name} created.")


async def _project_page(page: Page, project_id: str, status: int = 200, **context: Any) -> Response:
    service = ProjectService(page.session, page.runtime)
    try:
        access = await service.visible(page.user, project_id)
        members, invitations = await service.members(page.user, project_id)
    except ProblemError:
        page.not_found("project")
    return page.html(
        "project.html",
        status,
        title=access.project.name,
        section="projects",
        access=access,
        members=members,
        invitations=invitations,
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
        status, errors = page.refused(exc, "project")
        return await _project_page(page, project_id, status, form=form, errors=errors)
    done = f"{body.email} added." if member else f"Invitation sent to {body.email}."
    return page.redirect(f"/app/projects/{project_id}", done)


@router.post(
    "/projects/{project_id}/members/{user_id}/remove", openapi_extra=offers("removeProjectMember")
)
async def remove_member(project_id: str, user_id: str, page: SignedInPage) -> Response:
    async with page.button("member", f"/app/projects/{project_id}", "Not removed"):
        await ProjectService(page.session, page.runtime).remove_member(
            page.user, project_id, user_id
        )
    if user_id == page.user.id:
        return page.redirect("/app/projects", "You left the project.")
    return page.redirect(f"/app/projects/{project_id}", "Member removed.")
