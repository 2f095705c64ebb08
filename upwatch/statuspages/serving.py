"""The public page served ahead of the framework: a visit to `/status-pages/public/slug/{slug}`,
`/s/{slug}` or a page's custom domain is answered from its snapshot by this ASGI middleware,
without routing, dependency injection or the request guard (nothing of the request is read
but its path and two headers). Measured in bench/statuspage.py: through FastAPI's routing a
visit cost about nine times what the bytes themselves cost to send.

Only hits of pages open to everyone are served here (``Gate.open``); a page that is missing,
restricted (statuspages/access.py) or cannot be built goes on to the
routes in ``public.py`` and ``site.py``, which answer it as every other error is answered (a
problem document). The answers are the routes' answers: the same bytes, ETag, Cache-Control and
Content-Security-Policy, and a request counted in the metrics under the route's template.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from upwatch.kit import languages
from upwatch.statuspages import render
from upwatch.statuspages.snapshot import Snapshot, Snapshots

_JSON_PATH = re.compile(r"/status-pages/public/slug/([a-z0-9-]{1,63})")
_HTML_PATH = re.compile(r"/s/([a-z0-9-]{1,63})")
JSON_ROUTE = "/status-pages/public/slug/{slug}"
HTML_ROUTE = "/s/{slug}"
DOMAIN_ROUTE = "/"
DATA_POLICY = "default-src 'none'; frame-ancestors 'none'"


def script_origin(public_url: str, snapshot: Snapshot, host: str, scheme: str) -> str:
    """Where the page's custom.js is named in its policy: the page's own custom domain when
    that is the host asked for, else the service's configured address. Never the ``Host``
    header's text: the client writes it, and shared caches keep the answer it went into."""
    name = host.rsplit(":", 1)[0].lower()
    if snapshot.custom_domain is not None and name == snapshot.custom_domain:
        return f"{'https' if scheme == 'https' else 'http'}://{snapshot.custom_domain}"
    return public_url


def page_policy(origin: str, snapshot: Snapshot) -> str:
    """The page's Content-Security-Policy: our stylesheet and the owner's, and as script only
    this page's own custom.js (by its full address, so another page's script cannot run
    here; ``origin`` from ``script_origin``). The sandbox gives the page an origin of its
    own: the owner's script cannot read the service's cookies or call its API as the
    visitor."""
    script = f"{origin}/s/{snapshot.page.slug}/custom.js" if snapshot.custom_js else "'none'"
    return (
        f"default-src 'none'; style-src 'self'; img-src 'self' data:; script-src {script}; "
        "connect-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'; "
        "sandbox allow-scripts allow-forms allow-popups allow-popups-to-escape-sandbox"
    )


def visitor_language(snapshot: Snapshot, query: str, accept_language: str | None) -> str:
    """The language the HTML page is answered in: the page's own, unless the page lets
    visitors read theirs; then ``?lang=`` (the switcher's links), else the first of the ten
    their browser asks for (``Accept-Language``), else the page's."""
    own = snapshot.page.language
    if not snapshot.page.visitorLanguage:
        return own
    if "lang=" in query:
        chosen = (parse_qs(query[:200]).get("lang") or [""])[0]
        if chosen in languages.LANGUAGES:
            return chosen
    return languages.negotiate(accept_language) or own


def html_in(snapshot: Snapshot, language: str) -> bytes:
    """The snapshot's HTML in ``language``: built with the snapshot for the page's own
    language, on the first visit asking for each other one."""
    if language == snapshot.page.language:
        return snapshot.html
    built = snapshot.localized.get(language)
    if built is None:
        built = snapshot.localized[language] = render.html(
            snapshot.page, snapshot.custom_css, snapshot.custom_js, language
        )
    return built


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


def answer(
    snapshot: Snapshot,
    html: bool,
    origin: str,
    max_age: float,
    if_none_match: str | None,
    language: str | None = None,
) -> Answer:
    """The page as JSON or HTML (in ``language``, default the page's), or 304 when
    ``If-None-Match`` names its current tag. The headers are made once per snapshot, form
    and language (and origin, which a page's policy names)."""
    language = language if html and language is not None else snapshot.page.language
    key = (html, origin if html and snapshot.custom_js else "", language)
    made = snapshot.answers.get(key)
    if made is None:
        made = snapshot.answers[key] = _headers(snapshot, html, origin, max_age, language)
    etag, not_modified, full = made
    if if_none_match is not None and etag in {t.strip() for t in if_none_match.split(",")}:
        return Answer(304, not_modified, b"")
    return Answer(200, full, html_in(snapshot, language) if html else snapshot.json)


def _headers(
    snapshot: Snapshot, html: bool, origin: str, max_age: float, language: str
) -> tuple[str, list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
    """The tag, the headers of a 304 and those of a 200."""
    if html:
        body, media = html_in(snapshot, language), "text/html; charset=utf-8"
        etag, policy = f'{snapshot.etag[:-1]}-html-{language}"', page_policy(origin, snapshot)
    else:
        body, media, etag, policy = snapshot.json, "application/json", snapshot.etag, DATA_POLICY
    headers = [
        (b"etag", etag.encode()),
        # Shared caches may keep it as long as this process does.
        (b"cache-control", f"public, max-age={int(max_age)}".encode()),
        (b"content-security-policy", policy.encode()),
        (b"x-content-type-options", b"nosniff"),
    ]
    if html:
        headers.append((b"content-language", language.encode()))
        if snapshot.page.visitorLanguage:
            # The same address answers each browser in its own language.
            headers.append((b"vary", b"Accept-Language"))
    if not html:
        # A dashboard on another site may read what the page shows anyone (a plain GET needs
        # no preflight; nothing else of the service is opened to other origins).
        headers.append((b"access-control-allow-origin", b"*"))
    full = [
        *headers,
        (b"content-type", media.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    return etag, headers, full


# A restricted page's answers are for this visitor alone: no shared cache keeps them, and
# no tag lets a 304 confirm to someone else that a copy is current.
RESTRICTED_CACHE = b"private, no-store"


def restricted(reply: Answer) -> Answer:
    """``reply`` (a 200 of ``answer`` asked without ``If-None-Match``) as a restricted page's."""
    headers = [
        (name, RESTRICTED_CACHE if name == b"cache-control" else value)
        for name, value in reply.headers
        if name not in (b"etag", b"access-control-allow-origin")
    ]
    return Answer(reply.status, headers, reply.body)


@dataclass(frozen=True)
class _Route:
    """What the metrics middleware reads of a matched route: its template."""

    path: str


class PublicPages:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        json_page = _JSON_PATH.fullmatch(path)
        html_page = None if json_page else _HTML_PATH.fullmatch(path)
        # Built by the lifespan: an app without one (a tool, a test) has none to serve from.
        snapshots: Snapshots | None = getattr(scope["app"].state, "status_page_snapshots", None)
        if snapshots is None or not (json_page or html_page or path == "/"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1")
        snapshot: Snapshot | None = None
        html = True
        route = DOMAIN_ROUTE
        try:
            if json_page is not None:
                route, html = JSON_ROUTE, False
                snapshot = await snapshots.get(json_page.group(1))
            elif html_page is not None:
                route = HTML_ROUTE
                snapshot = await snapshots.get(html_page.group(1))
            elif host:
                snapshot = await snapshots.for_domain(host.rsplit(":", 1)[0])
        except Exception:  # the route below answers it, as a problem document
            snapshot = None
        if snapshot is None or not snapshot.gate.open:
            await self.app(scope, receive, send)
            return
        scope["route"] = _Route(route)
        if_none_match = headers.get(b"if-none-match")
        accept_language = headers.get(b"accept-language")
        reply = answer(
            snapshot,
            html,
            script_origin(snapshots.public_url, snapshot, host, scope.get("scheme", "http")),
            snapshots.max_age,
            None if if_none_match is None else if_none_match.decode("latin-1"),
            visitor_language(
                snapshot,
                scope.get("query_string", b"").decode("latin-1"),
                None if accept_language is None else accept_language.decode("latin-1"),
            ),
        )
        await send(
            {"type": "http.response.start", "status": reply.status, "headers": reply.headers}
        )
        # HEAD (what many uptime checkers send): the headers of a GET, no body.
        body = b"" if scope["method"] == "HEAD" else reply.body
        await send({"type": "http.response.body", "body": body})
