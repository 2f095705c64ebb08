"""Security headers on every response that does not set its own: a Content-Security-Policy
(HTML pages run only the scripts they are built with; nothing else may frame or script
them) and ``nosniff``.

Status pages set a policy of their own, naming their owner's script; every other page here
(``/docs``, ``/redoc``) runs only the bundled assets under ``/docs/assets`` and its own inline
start-up script, so an owner's status-page script can never run on it.
"""

from __future__ import annotations

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


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if "content-security-policy" not in headers:
                    html = headers.get("content-type", "").startswith("text/html")
                    if html:
                        headers["Content-Security-Policy"] = DOCS_POLICY.format(
                            origin=_origin(scope)
                        )
                    else:
                        headers["Content-Security-Policy"] = DATA_POLICY
                headers.setdefault("X-Content-Type-Options", "nosniff")
            await send(message)

        await self.app(scope, receive, with_headers)


def _origin(scope: Scope) -> str:
    host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "")
    return f"{scope.get('scheme', 'http')}://{host}" if host else "'self'"
