"""Where the current request comes from: its client address and user agent.

Set once per request by the boundary middleware, so whatever records who did what (the audit
log, the sessions list) reads it without every route passing the request along."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from starlette.types import Scope

USER_AGENT_CHARS = 400


@dataclass(frozen=True, slots=True)
class Origin:
    address: str = ""
    user_agent: str = ""


# Outside a request (a worker, the CLI) both are empty.
NOWHERE = Origin()
request_origin: ContextVar[Origin] = ContextVar("request_origin", default=NOWHERE)


def origin_of(scope: Scope) -> Origin:
    client = scope.get("client")
    agent = b""
    for name, value in scope.get("headers", []):
        if name == b"user-agent":
            agent = value
            break
    return Origin(
        address=client[0] if client else "",
        user_agent=agent.decode("latin-1")[:USER_AGENT_CHARS],
    )
