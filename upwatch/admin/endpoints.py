from __future__ import annotations

from fastapi import APIRouter

from upwatch.admin.schemas import AdminUserItem
from upwatch.admin.service import AdminService
from upwatch.dependencies import AdminUser, Session
from upwatch.kit.errors import problem_responses
from upwatch.kit.pagination import PageParams

router = APIRouter(
    prefix="/admin", tags=["admin"], responses=problem_responses(400, 401, 403, 422, 500)
)


@router.get("/users", operation_id="adminListUsers")
async def list_users(_admin: AdminUser, session: Session, page: PageParams) -> list[AdminUserItem]:
    """Every account with its plan and subscription status, newest first (admin, super_admin)."""
    items, total = await AdminService(session).list_users(page.limit, page.offset)
    page.total(total)
    return items
