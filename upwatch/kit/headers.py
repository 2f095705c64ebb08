"""Security headers on every response that does not set its own: a Content-Security-Policy
(HTML pages run only the scripts they are built with; nothing else may frame or script
them) and ``nosniff``.

The policy is chosen by path, never by what the response looks like or by the request's
``Host`` (the client writes that, and shared caches keep what it was copied into): each
section of the site (``/app``, ``/docs``) names its own, and everything else gets
``DATA_POLICY``. Status pages set a policy of their own, naming their owner's script; the API
docs run only the bundled assets under ``/docs/assets`` at the service's public address and
their own inline start-up script, so an owner's status-page script can never run on them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The API docs: Swagger UI and ReDoc from the installed package (fastapi-offline), started by
# an inline script the framework writes; ReDoc draws its logo from data: and runs a worker.
DOCS_POLICY = (
    "default-src 'none'; script-src {origin}/docs/assets/ 'unsafe-inline'; "
    "style-src {origin}/docs/assets/ 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self' data:; connect-src 'self'; worker-src blob:; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
# Anything else (JSON, text, images): nothing in it may run or be framed.
DATA_POLICY = "default-src 'none'; frame-ancestors 'none'"


# A Host header that is a host name or address and a port, nothing else: what a browser sends.
_HOST = re.compile(
    r"(?:(?:[A-Za-z0-9-]{1,63}\.)*[A-Za-z0-9-]{1,63}|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?"
)


def docs_policy(public_url: str) -> Callable[[Scope], str]:
    """The docs' policy, their assets named at the address the browser asked for (so the docs
    work at localhost as at 127.0.0.1) when the ``Host`` header is a plain host and port,
    else at the service's configured address: a crafted header never writes a directive."""

    def policy(scope: Scope) -> str:
        host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "")
        plain = _HOST.fullmatch(host) is not None
        scheme = "https" if scope.get("scheme") == "https" else "http"
        return DOCS_POLICY.format(origin=f"{scheme}://{host}" if plain else public_url)

    return policy


class SecurityHeaders:
    """``policies``: a path prefix (``/app``: itself and what is under ``/app/``) and the
    policy of every response there that sets none."""

    def __init__(self, app: ASGIApp, policies: Mapping[str, str | Callable[[Scope], str]]) -> None:
        self.app = app
        self.policies = list(policies.items())

    def policy_of(self, scope: Scope) -> str:
        path = scope["path"]
        for prefix, policy in self.policies:
            if path == prefix or path.startswith(prefix + "/"):
                return policy if isinstance(policy, str) else policy(scope)
        return DATA_POLICY

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if "content-security-policy" not in headers:
                    headers["Content-Security-Policy"] = self.policy_of(scope)
                headers.setdefault("X-Content-Type-Options", "nosniff")
            await send(message)

        await self.app(scope, receive, with_headers)
