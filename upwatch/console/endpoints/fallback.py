"""A console address that names no page: an HTML 404 page that still has the navigation
(``/`` in a browser leads to the console: ``statuspages/site.py``)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from upwatch.console.endpoints.page import Visitor, html, words_for

router = APIRouter(include_in_schema=False)


@router.api_route("/app/{rest:path}", methods=["GET", "HEAD", "POST"])
async def no_such_page(request: Request, visitor: Visitor) -> Response:
    me, csrf = (visitor.user, visitor.csrf) if visitor else (None, "")
    words = words_for(request, me)
    return html(
        request,
        "error.html",
        404,
        me=me,
        csrf=csrf,
        title=words.gettext("Not found"),
        detail=words.gettext("There is no such page in the console."),
    )
