"""What visitors open in a browser, outside the API document: a status page's HTML at
`/s/{slug}` or its custom domain, the owner's CSS and script, RSS and Atom feeds, badges,
and the subscription forms that work without JavaScript."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Literal
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Path, Query, Response, status
from fastapi.responses import RedirectResponse
from starlette.requests import Request

from upwatch.dependencies import ClientAddress, RuntimeDep, Session, WritingSession
from upwatch.kit import languages
from upwatch.kit.errors import NotFound, ProblemError, ValidationFailed
from upwatch.kit.languages import N_
from upwatch.kit.schemas import normalize_email
from upwatch.statuspages import render
from upwatch.statuspages.access import VisitorDep, give_pass, unlock
from upwatch.statuspages.public import (
    IfNoneMatch,
    SnapshotsDep,
    gated_snapshot,
    page_answer,
    visible_snapshot,
)
from upwatch.statuspages.serving import script_origin, visitor_language
from upwatch.statuspages.snapshot import Snapshot, Snapshots
from upwatch.statuspages.subscribers import VisitorSubscriptions

site = APIRouter(tags=["public status pages"], include_in_schema=False)


def _origin(request: Request, snapshots: Snapshots, snapshot: Snapshot) -> str:
    host = request.headers.get("host") or ""
    return script_origin(snapshots.public_url, snapshot, host, request.url.scheme)


def _language(request: Request, snapshot: Snapshot) -> str:
    return visitor_language(snapshot, request.url.query, request.headers.get("accept-language"))


def _browser_language(request: Request) -> str:
    """For what is shown before a page is known or opened (its password form, a message):
    the browser's language among the ten, else English."""
    return languages.negotiate(request.headers.get("accept-language")) or languages.SOURCE


@site.get("/s/{slug}")
async def status_page_html(
    slug: Annotated[str, Path(max_length=63)],
    request: Request,
    snapshots: SnapshotsDep,
    visitor: VisitorDep,
    if_none_match: IfNoneMatch = None,
) -> Response:
    snapshot, verdict = await gated_snapshot(snapshots, slug, visitor)
    if snapshot is None or verdict == "hidden":
        raise NotFound("no such status page")
    if verdict == "password":
        return _password_form(slug, _browser_language(request))
    origin = _origin(request, snapshots, snapshot)
    language = _language(request, snapshot)
    return page_answer(snapshot, True, origin, snapshots.max_age, if_none_match, language)


# The form names nothing of the page: whoever sees it has not shown they may read it.
_FORM_POLICY = (
    "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)


def _password_form(
    slug: str,
    language: str,
    wrong: bool = False,
    status_code: int = status.HTTP_401_UNAUTHORIZED,
) -> Response:
    return Response(
        content=render.password_form(slug, wrong, language),
        status_code=status_code,
        media_type="text/html; charset=utf-8",
        headers={"Cache-Control": "no-store", "Content-Security-Policy": _FORM_POLICY},
    )


@site.post("/s/{slug}/unlock")
async def unlock_form(
    slug: Annotated[str, Path(max_length=63)],
    request: Request,
    snapshots: SnapshotsDep,
    visitor: VisitorDep,
) -> Response:
    """The password form's answer: the pass cookie and back to the page (on its custom
    domain when asked there), or the form again saying the password was wrong."""
    snapshot = await snapshots.get(slug)
    if snapshot is None:
        raise NotFound("no such status page")
    fields = parse_qs((await request.body()).decode("utf-8", "replace"))
    password = (fields.get("password") or [""])[0][:200]
    try:
        value = await unlock(visitor, snapshot.page_id, snapshot.gate, password)
    except ProblemError as exc:
        if exc.status == status.HTTP_404_NOT_FOUND:
            raise
        if exc.status == status.HTTP_429_TOO_MANY_REQUESTS:
            return _message(
                N_("Too many attempts"),
                N_("Too many wrong passwords from your address; try again later."),
                slug,
                exc.status,
                _browser_language(request),
            )
        return _password_form(slug, _browser_language(request), wrong=True)
    host = (request.headers.get("host") or "").rsplit(":", 1)[0].lower()
    back = "/" if host and host == snapshot.custom_domain else f"/s/{slug}"
    response = RedirectResponse(back, status_code=status.HTTP_303_SEE_OTHER)
    give_pass(request, response, snapshot.page_id, value)
    return response


@site.get("/")
async def custom_domain_root(
    request: Request,
    snapshots: SnapshotsDep,
    visitor: VisitorDep,
    if_none_match: IfNoneMatch = None,
) -> Response:
    """A request to `/` whose Host is a page's custom domain gets that page (if the visitor
    may read it: otherwise as if the domain were no page's); otherwise a browser goes to
    the console."""
    host = (request.headers.get("host") or "").rsplit(":", 1)[0]
    snapshot = await snapshots.for_domain(host) if host else None
    verdict = "hidden"
    if snapshot is not None:
        verdict = await visitor.verdict(snapshot.page_id, snapshot.gate)
        if verdict == "password":
            return _password_form(snapshot.page.slug, _browser_language(request))
    if snapshot is None or verdict != "show":
        # A person's browser is led into the console; an API client keeps the JSON 404.
        if "text/html" in request.headers.get("accept", ""):
            return RedirectResponse("/app", status_code=303)
        raise NotFound("nothing here: the API is described at /docs")
    origin = _origin(request, snapshots, snapshot)
    language = _language(request, snapshot)
    return page_answer(snapshot, True, origin, snapshots.max_age, if_none_match, language)


OWNER_FILES = {"css": "text/css", "js": "text/javascript"}


def cache_control(snapshot: Snapshot, max_age: float) -> str:
    """Shared caches may keep an open page's answers as long as this process does; a
    restricted page's are the visitor's alone."""
    if not snapshot.gate.open:
        return "private, no-store"
    return f"public, max-age={int(max_age)}"


async def _owner_file(
    snapshots: Snapshots, slug: str, kind: Literal["css", "js"], visitor: VisitorDep
) -> Response:
    """The owner's stylesheet or script of the page."""
    snapshot = await visible_snapshot(snapshots, slug, visitor)
    # nosniff: a browser runs it only as what it is labelled.
    return Response(
        content=snapshot.custom_css if kind == "css" else snapshot.custom_js,
        media_type=f"{OWNER_FILES[kind]}; charset=utf-8",
        headers={
            "Cache-Control": cache_control(snapshot, snapshots.max_age),
            "X-Content-Type-Options": "nosniff",
        },
    )


@site.get("/s/{slug}/custom.css")
async def status_page_css(
    slug: Annotated[str, Path(max_length=63)], snapshots: SnapshotsDep, visitor: VisitorDep
) -> Response:
    return await _owner_file(snapshots, slug, "css", visitor)


@site.get("/s/{slug}/custom.js")
async def status_page_js(
    slug: Annotated[str, Path(max_length=63)], snapshots: SnapshotsDep, visitor: VisitorDep
) -> Response:
    return await _owner_file(snapshots, slug, "js", visitor)


@site.get("/assets/status-page.css")
async def status_page_stylesheet() -> Response:
    return Response(
        content=render.STYLESHEET,
        media_type="text/css; charset=utf-8",
        headers={"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"},
    )


def cached_answer(
    content: bytes,
    media_type: str,
    etag: str,
    max_age: float,
    if_none_match: str | None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """A snapshot's bytes, or 304 when the visitor has them (``If-None-Match``)."""
    sent = {
        "ETag": etag,
        # Shared caches may keep it as long as this process does.
        "Cache-Control": f"public, max-age={int(max_age)}",
        **(headers or {}),
    }
    if if_none_match is not None and etag in {tag.strip() for tag in if_none_match.split(",")}:
        return Response(status_code=status.HTTP_304_NOT_MODIFIED, headers=sent)
    return Response(content=content, media_type=media_type, headers=sent)


FEEDS = {"rss": "application/rss+xml", "atom": "application/atom+xml"}


@site.get("/s/{slug}/feed.{kind}")
async def status_page_feed(
    slug: Annotated[str, Path(max_length=63)],
    kind: Literal["rss", "atom"],
    snapshots: SnapshotsDep,
    visitor: VisitorDep,
    if_none_match: IfNoneMatch = None,
) -> Response:
    """RSS 2.0 (`feed.rss`) or Atom 1.0 (`feed.atom`). A restricted page's feed is read
    like its page (a feed reader holds no pass: 404), never cached by others."""
    snapshot = await visible_snapshot(snapshots, slug, visitor)
    if not snapshot.gate.open:
        return Response(
            content=snapshot.rss if kind == "rss" else snapshot.atom,
            media_type=f"{FEEDS[kind]}; charset=utf-8",
            headers={"Cache-Control": cache_control(snapshot, snapshots.max_age)},
        )
    return cached_answer(
        snapshot.rss if kind == "rss" else snapshot.atom,
        f"{FEEDS[kind]}; charset=utf-8",
        f'{snapshot.etag[:-1]}-{kind}"',
        snapshots.max_age,
        if_none_match,
    )


def _badge(content: bytes, snapshot: Snapshot, max_age: float) -> Response:
    return Response(
        content=content,
        media_type="image/svg+xml",
        headers={"Cache-Control": cache_control(snapshot, max_age)},
    )


@site.get("/s/{slug}/badge.svg")
async def status_badge(
    slug: Annotated[str, Path(max_length=63)], snapshots: SnapshotsDep, visitor: VisitorDep
) -> Response:
    snapshot = await visible_snapshot(snapshots, slug, visitor)
    return _badge(render.status_badge(snapshot.page), snapshot, snapshots.max_age)


@site.get("/s/{slug}/components/{componentId}/uptime.svg")
async def uptime_badge(
    slug: Annotated[str, Path(max_length=63)],
    componentId: Annotated[str, Path(max_length=32)],  # noqa: N803  (named as in the URL)
    snapshots: SnapshotsDep,
    visitor: VisitorDep,
) -> Response:
    snapshot = await visible_snapshot(snapshots, slug, visitor)
    component = next((c for c in snapshot.page.components if c.id == componentId), None)
    if component is None:
        raise NotFound("no such component on this status page")
    return _badge(
        render.uptime_badge(component, snapshot.page.language), snapshot, snapshots.max_age
    )


def _message(
    title: str,
    text: str,
    slug: str | None = None,
    status_code: int = status.HTTP_200_OK,
    language: str = languages.SOURCE,
    **values: str,
) -> Response:
    """A small page of ``title`` and ``text`` (source texts, translated; ``values`` fill
    ``text``'s placeholders after the translation)."""
    return Response(
        content=render.message(title, text, slug, language=language, values=values),
        status_code=status_code,
        media_type="text/html; charset=utf-8",
        headers={
            "Cache-Control": "no-store",
            "Content-Security-Policy": "default-src 'none'; style-src 'self'; "
            "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        },
    )


@site.post("/s/{slug}/subscribe-form")
async def subscribe_form(
    slug: Annotated[str, Path(max_length=63)],
    request: Request,
    session: Session,
    runtime: RuntimeDep,
    client: ClientAddress,
    snapshots: SnapshotsDep,
    visitor: VisitorDep,
) -> Response:
    """The page's own form (no JavaScript): the same as the JSON operation, answered in
    HTML."""
    snapshot = await visible_snapshot(snapshots, slug, visitor)
    language = _language(request, snapshot)
    fields = parse_qs((await request.body()).decode("utf-8", "replace"))
    try:
        email = normalize_email((fields.get("email") or [""])[0])
    except ValueError as exc:
        return _message(
            N_("Not subscribed"),
            N_("That e-mail address does not look right: %(reason)s."),
            slug,
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            language,
            reason=str(exc),
        )
    # No box ticked: every component (the API's null).
    chosen = fields.get("componentIds") or None
    try:
        await VisitorSubscriptions(session, runtime).subscribe(slug, email, client, chosen)
    except ValidationFailed:
        return _message(
            N_("Not subscribed"),
            N_("Those components are not on this page any more; reload it and choose again."),
            slug,
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            language,
        )
    return _message(
        N_("Check your inbox"),
        N_(
            "If %(email)s can be subscribed, a confirmation link is on its way. Nothing is "
            "sent before you follow it."
        ),
        slug,
        language=language,
        email=email,
    )


@dataclass(frozen=True)
class EmailedLink:
    """What a confirmation or unsubscribe link mailed to a subscriber carries."""

    slug: str
    subscriber_id: str
    token: str


def _emailed_link(
    slug: Annotated[str, Path(max_length=63)],
    id: Annotated[str, Query(max_length=32)],
    token: Annotated[str, Query(max_length=100)],
) -> EmailedLink:
    return EmailedLink(slug, id, token)


EmailedLinkDep = Annotated[EmailedLink, Depends(_emailed_link)]


@site.get("/s/{slug}/confirm")
async def confirm_subscription(
    request: Request,
    link: EmailedLinkDep,
    session: WritingSession,
    runtime: RuntimeDep,
    snapshots: SnapshotsDep,
    visitor: VisitorDep,
) -> Response:
    snapshot, verdict = await gated_snapshot(snapshots, link.slug, visitor)
    if snapshot is None or verdict != "show":
        # Worded as every other bad link is: it tells nothing of the page.
        raise NotFound("this link is not valid")
    page = await VisitorSubscriptions(session, runtime).confirm(
        link.slug, link.subscriber_id, link.token
    )
    return _message(
        N_("Subscribed"),
        N_(
            "You will get an e-mail when an incident on %(page)s opens, changes or is "
            "resolved. Every e-mail has a link to unsubscribe."
        ),
        page.slug,
        language=_language(request, snapshot),
        page=page.name,
    )


@site.api_route("/s/{slug}/unsubscribe", methods=["GET", "POST"])
async def unsubscribe(
    link: EmailedLinkDep, session: WritingSession, runtime: RuntimeDep
) -> Response:
    """One click from the e-mail (GET), or the mail client's one-click POST (RFC 8058).
    Not behind the page's gate: the link's token is the proof, the one-click POST comes
    from the mail provider's servers (outside any allowlist), and leaving must always work;
    a link without a valid token is 404 like a missing page."""
    page = await VisitorSubscriptions(session, runtime).unsubscribe(
        link.slug, link.subscriber_id, link.token
    )
    return _message(
        N_("Unsubscribed"),
        N_("You will get no more e-mail about %(page)s."),
        page.slug,
        language=page.language,
        page=page.name,
    )
