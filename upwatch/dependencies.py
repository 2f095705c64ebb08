"""Request dependencies as ``Annotated`` aliases: the session, the runtime, the client.

The caller's account (``CurrentUser``, ``AdminUser``) lives with authentication in
``upwatch.callers.dependencies``; this module depends on the kit and the runtime only.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from upwatch.kit.db import request_session, writing_session
from upwatch.runtime import Runtime, get_runtime

# scope="function": the session closes (and commits) before the response is sent, so a
# failed commit becomes an error response instead of a silent loss.
Session = Annotated[AsyncSession, Depends(request_session, scope="function")]
# For a GET that writes: a writer's transaction, as every other method gets (kit/db.py).
WritingSession = Annotated[AsyncSession, Depends(writing_session, scope="function")]
RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


ClientAddress = Annotated[str, Depends(client_address)]
