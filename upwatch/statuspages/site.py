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
from upwatch.kit.errors import NotFound, ValidationFailed
from upwatch.kit.schemas import normalize_email
from upwatch.statuspages import render
from upwatch.statuspages.public import IfNoneMatch, SnapshotsDep, answered, visible_snapshot
from upwatch.statuspages.serving import answer, script_origin
from upwatch.statuspages.snapshot import Snapshot, Snapshots
from upwatch.statuspages.subscribers import VisitorSubscriptions

site = APIRouter(tags=["public status pages"], include_in_schema=False)


def _origin(request: Request, snapshots: Snapshots, snapshot: Snapshot) -> str:
    host = request.headers.get("host") or ""
    return script_origin(snapshots.public_url, snapshot, host, request.url.scheme)


@site.get("/s/{slug}")
async def status_page_html(
    slug: Annotated[str, Path(max_length=63)],
    request: Request,
    snapshots: SnapshotsDep,
    if_none_match: IfNoneMatch = None,
) -> Response:
    snapshot = await visible_snapshot(snapshots, slug)
    origin = _origin(request, snapshots, snapshot)
    return answered(answer(snapshot, True, origin, snapshots.max_age, if_none_match))


@site.get("/")
async def custom_domain_root(
    request: Request, snapshots: SnapshotsDep, if_none_match: IfNoneMatch = None
) -> Response:
    """A request to `/` whose Host is a page's custom domain gets that page; otherwise a
    browser goes to the console."""
    host = (request.headers.get("host") or "").rsplit(":", 1)[0]
    snapshot = await snapshots.for_domain(host) if host else None
    if snapshot is None:
        # A person's browser is led into the console; an API client keeps the JSON 404.
        if "text/html" in request.headers.get("accept", ""):
            return RedirectResponse("/app", status_code=303)
        raise NotFound("nothing here: the API is described at /docs")
    origin = _origin(request, snapshots, snapshot)
    return answered(answer(snapshot, True, origin, snapshots.max_age, if_none_match))


OWNER_FILES = {"css": "text/css", "js": "text/javascript"}


async def _owner_file(snapshots: Snapshots, slug: str, kind: Literal["css", "js"]) -> Response:
    """The owner's stylesheet or script of the page."""
    snapshot = await visible_snapshot(snapshots, slug)
    # nosniff: a browser runs it only as what it is labelled.
    return Response(
        content=snapshot.custom_css if kind == "css" else snapshot.custom_js,
        media_type=f"{OWNER_FILES[kind]}; charset=utf-8",
        headers={
            "Cache-Control": f"public, max-age={int(snapshots.max_age)}",
            "X-Content-Type-Options": "nosniff",
        },
    )


@site.get("/s/{slug}/custom.css")
async def status_page_css(
    slug: Annotated[str, Path(max_length=63)], snapshots: SnapshotsDep
) -> Response:
    return await _owner_file(snapshots, slug, "css")


@site.get("/s/{slug}/custom.js")
async def status_page_js(
    slug: Annotated[str, Path(max_length=63)], snapshots: SnapshotsDep
) -> Response:
    return await _owner_file(snapshots, slug, "js")


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
    if_none_match: IfNoneMatch = None,
) -> Response:
    """RSS 2.0 (`feed.rss`) or Atom 1.0 (`feed.atom`)."""
    snapshot = await visible_snapshot(snapshots, slug)
    return cached_answer(
        snapshot.rss if kind == "rss" else snapshot.atom,
        f"{FEEDS[kind]}; charset=utf-8",
        f'{snapshot.etag[:-1]}-{kind}"',
        snapshots.max_age,
        if_none_match,
    )


def _badge(content: bytes, max_age: float) -> Response:
    return Response(
        content=content,
        media_type="image/svg+xml",
        headers={"Cache-Control": f"public, max-age={int(max_age)}"},
    )


@site.get("/s/{slug}/badge.svg")
async def status_badge(
    slug: Annotated[str, Path(max_length=63)], snapshots: SnapshotsDep
) -> Response:
    snapshot = await visible_snapshot(snapshots, slug)
    return _badge(render.status_badge(snapshot.page), snapshots.max_age)


@site.get("/s/{slug}/components/{componentId}/uptime.svg")
async def uptime_badge(
    slug: Annotated[str, Path(max_length=63)],
    componentId: Annotated[str, Path(max_length=32)],  # noqa: N803  (named as in the URL)
    snapshots: SnapshotsDep,
) -> Response:
    snapshot = await visible_snapshot(snapshots, slug)
    component = next((c for c in snapshot.page.components if c.id == componentId), None)
    if component is None:
        raise NotFound("no such component on this status page")
    return _badge(render.uptime_badge(component), snapshots.max_age)


def _message(
    title: str, text: str, slug: str | None = None, status_code: int = status.HTTP_200_OK
) -> Response:
    return Response(
        content=render.message(title, text, slug),
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
) -> Response:
    """The page's own form (no JavaScript): the same as the JSON operation, answered in
    HTML."""
    fields = parse_qs((await request.body()).decode("utf-8", "replace"))
    try:
        email = normalize_email((fields.get("email") or [""])[0])
    except ValueError as exc:
        return _message(
            "Not subscribed",
            f"That e-mail address does not look right: {exc}.",
            slug,
            status.HTTP_422_UNPROCESSABLE_CONTENT,
        )
    # No box ticked: every component (the API's null).
    chosen = fields.get("componentIds") or None
    try:
        await VisitorSubscriptions(session, runtime).subscribe(slug, email, client, chosen)
    except ValidationFailed:
        return _message(
            "Not subscribed",
            "Those components are not on this page any more; reload it and choose again.",
            slug,
            status.HTTP_422_UNPROCESSABLE_CONTENT,
        )
    return _message(
        "Check your inbox",
        f"If {email} can be subscribed, a confirmation link is on its way. Nothing is sent "
        "before you follow it.",
        slug,
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
    link: EmailedLinkDep, session: WritingSession, runtime: RuntimeDep
) -> Response:
    page = await VisitorSubscriptions(session, runtime).confirm(
        link.slug, link.subscriber_id, link.token
    )
    return _message(
        "Subscribed",
        f"You will get an e-mail when an incident on {page.name} opens, changes or is "
        "resolved. Every e-mail has a link to unsubscribe.",
        page.slug,
    )


@site.api_route("/s/{slug}/unsubscribe", methods=["GET", "POST"])
async def unsubscribe(
    link: EmailedLinkDep, session: WritingSession, runtime: RuntimeDep
) -> Response:
    """One click from the e-mail (GET), or the mail client's one-click POST (RFC 8058)."""
    page = await VisitorSubscriptions(session, runtime).unsubscribe(
        link.slug, link.subscriber_id, link.token
    )
    return _message("Unsubscribed", f"You will get no more e-mail about {page.name}.", page.slug)
