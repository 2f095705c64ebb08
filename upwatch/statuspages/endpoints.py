"""Status pages, their components and messages (seed 7-11, contract §10), and the public
page's JSON."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Literal
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Header, Path, Query, Response, status
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from upwatch.callers.dependencies import CurrentUser
from upwatch.dependencies import ClientAddress, RuntimeDep, Session, WritingSession
from upwatch.kit.errors import NotFound, problem_responses
from upwatch.kit.pagination import PageParams
from upwatch.kit.schemas import DeletedOut, normalize_email
from upwatch.kit.scoped import ProjectPageParams
from upwatch.models import StatusPage, StatusPageComponent
from upwatch.runtime import Runtime
from upwatch.statuspages import render
from upwatch.statuspages.repository import StatusPageRepository
from upwatch.statuspages.schemas import (
    ComponentCreate,
    ComponentOut,
    ComponentUpdate,
    PublicStatusPage,
    StatusMessageIn,
    StatusMessageOut,
    StatusPageCreate,
    StatusPageOut,
    StatusPageUpdate,
    SubscribeIn,
    SubscribeOut,
    SubscriberOut,
)
from upwatch.statuspages.service import StatusPageService
from upwatch.statuspages.serving import Answer, answer, script_origin
from upwatch.statuspages.snapshot import Snapshot, Snapshots
from upwatch.statuspages.subscribers import VisitorSubscriptions

router = APIRouter(
    prefix="/status-pages",
    tags=["status pages"],
    responses=problem_responses(400, 401, 404, 422, 429, 500),
)
public = APIRouter(
    prefix="/status-pages/public",
    tags=["public status pages"],
    responses=problem_responses(400, 404, 422, 500),
)


async def pages_out(
    session: AsyncSession, runtime: Runtime, pages: Sequence[StatusPage]
) -> list[StatusPageOut]:
    components, messages, statuses = await StatusPageService(session, runtime).shown(pages)
    base_url = runtime.settings.public_url
    return [
        StatusPageOut.model_validate(
            page,
            context={
                "message": messages.get(page.id),
                "components": [component_out(c, statuses) for c in components[page.id]],
                "base_url": base_url,
            },
        )
        for page in pages
    ]


async def page_out(session: AsyncSession, runtime: Runtime, page: StatusPage) -> StatusPageOut:
    return (await pages_out(session, runtime, [page]))[0]


def component_out(component: StatusPageComponent, statuses: Mapping[str, str]) -> ComponentOut:
    return ComponentOut.model_validate(component, context={"statuses": statuses})


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    operation_id="createStatusPage",
    responses=problem_responses(402, 409),
)
async def create_status_page(
    body: StatusPageCreate, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> StatusPageOut:
    """Create a status page in a project the caller belongs to (limit `statusPageCount`).
    `slug` and `customDomain` are unique across the service (409). A page is public unless
    `isPublic` is false; its address is `publicUrl`."""
    page = await StatusPageService(session, runtime).create(user, body)
    return await page_out(session, runtime, page)


@router.get("", operation_id="listStatusPages")
async def list_status_pages(
    user: CurrentUser,
    session: Session,
    runtime: RuntimeDep,
    page: ProjectPageParams,
) -> list[StatusPageOut]:
    """Status pages of the caller's projects, oldest first."""
    return await pages_out(session, runtime, await page.of(StatusPageRepository(session), user))


@router.get("/{id}", operation_id="getStatusPage")
async def get_status_page(
    id: str, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> StatusPageOut:
    """A page with its components (in order, each with its monitor's status) and current
    message, public or not."""
    page = await StatusPageRepository(session).get_visible(user, id)
    return await page_out(session, runtime, page)


@router.patch("/{id}", operation_id="updateStatusPage", responses=problem_responses(409))
async def update_status_page(
    id: str, body: StatusPageUpdate, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> StatusPageOut:
    """Change a page (seed 7); fields left out stay as they are. A new `slug` or
    `customDomain` another page has is a 409; the old address stops answering at once."""
    page = await StatusPageService(session, runtime).update(user, id, body)
    return await page_out(session, runtime, page)


@router.delete("/{id}", operation_id="deleteStatusPage")
async def delete_status_page(
    id: str, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> DeletedOut:
    """Delete a page with its components and message history."""
    await StatusPageService(session, runtime).delete(user, id)
    return DeletedOut(id=id)


@router.post(
    "/{id}/components",
    status_code=status.HTTP_201_CREATED,
    operation_id="addStatusPageComponent",
    responses=problem_responses(409),
)
async def add_component(
    id: str, body: ComponentCreate, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> ComponentOut:
    """Show a monitor on the page (seed 9). The monitor must be in the page's project (422;
    404 when the caller cannot see it), and a page shows a monitor once (409). `name`
    defaults to the monitor's name, `order` to after the last component. Deleting the
    monitor removes its components."""
    service = StatusPageService(session, runtime)
    component = await service.add_component(user, id, body)
    return component_out(component, await service.statuses([component]))


@router.patch("/{id}/components/{componentId}", operation_id="updateStatusPageComponent")
async def update_component(
    id: str,
    componentId: str,
    body: ComponentUpdate,
    user: CurrentUser,
    session: Session,
    runtime: RuntimeDep,
) -> ComponentOut:
    """Rename, describe or reorder a component; components show by ascending `order`."""
    service = StatusPageService(session, runtime)
    component = await service.update_component(user, id, componentId, body)
    return component_out(component, await service.statuses([component]))


@router.delete("/{id}/components/{componentId}", operation_id="deleteStatusPageComponent")
async def delete_component(
    id: str, componentId: str, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> DeletedOut:
    """Remove a component from the page (seed 10); the monitor stays."""
    await StatusPageService(session, runtime).delete_component(user, id, componentId)
    return DeletedOut(id=componentId)


@router.patch("/{id}/status", operation_id="postStatusPageMessage")
async def post_status_message(
    id: str, body: StatusMessageIn, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> StatusPageOut:
    """Post a message on the page for some of its components (seed 8); `componentIds` must
    be components of this page (422). An empty message clears the current one. Every
    message is kept (`GET /status-pages/{id}/messages`)."""
    page = await StatusPageService(session, runtime).post_message(user, id, body)
    return await page_out(session, runtime, page)


@router.get("/{id}/messages", operation_id="listStatusPageMessages")
async def list_status_messages(
    id: str, user: CurrentUser, session: Session, runtime: RuntimeDep, page: PageParams
) -> list[StatusMessageOut]:
    """The page's message history, newest first (empty messages are the clearings)."""
    items, total = await StatusPageService(session, runtime).message_history(
        user, id, page.limit, page.offset
    )
    page.total(total)
    return [StatusMessageOut.model_validate(m) for m in items]


@router.get("/{id}/subscribers", operation_id="listStatusPageSubscribers")
async def list_subscribers(
    id: str, user: CurrentUser, session: Session, runtime: RuntimeDep, page: PageParams
) -> list[SubscriberOut]:
    """Visitors subscribed to the page's incident e-mails, oldest first; `confirmedAt` is null
    until they followed the link mailed to them (only confirmed ones are mailed)."""
    items, total = await StatusPageService(session, runtime).subscribers(
        user, id, page.limit, page.offset
    )
    page.total(total)
    return [SubscriberOut.model_validate(s) for s in items]


@router.delete("/{id}/subscribers/{subscriberId}", operation_id="deleteStatusPageSubscriber")
async def delete_subscriber(
    id: str, subscriberId: str, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> DeletedOut:
    """Remove a subscriber: no further e-mail goes to them."""
    await StatusPageService(session, runtime).delete_subscriber(user, id, subscriberId)
    return DeletedOut(id=subscriberId)


# ---- public: no token ----


async def get_snapshots(request: Request) -> Snapshots:
    snapshots: Snapshots = request.app.state.status_page_snapshots
    return snapshots


SnapshotsDep = Annotated[Snapshots, Depends(get_snapshots)]


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


@public.get(
    "/slug/{slug}",
    operation_id="getPublicStatusPage",
    response_model=PublicStatusPage,
    responses={
        304: {"description": "Not modified: the `If-None-Match` tag is current"},
        **problem_responses(404, 422, 503),
    },
)
async def get_public_status_page(
    slug: Annotated[str, Path(max_length=63)],
    snapshots: SnapshotsDep,
    if_none_match: Annotated[str | None, Header(max_length=1000)] = None,
) -> Response:
    """What the public sees of a page (seed 11); no token needed. A private page is 404
    exactly like a missing one. Never shows a monitor's address, headers, body or any
    secret. `days` are 90 UTC days per component from the daily aggregates; `incidents` are
    the project's incidents on the page's monitors, open or resolved in the last 14 days.
    Answers carry an `ETag` and `Cache-Control`; the page is built at most once per
    `UPWATCH_STATUS_PAGE_MAX_AGE_SECONDS`."""
    snapshot = await _visible(snapshots, slug)
    return _answered(answer(snapshot, False, "", snapshots.max_age, if_none_match))


@public.post(
    "/slug/{slug}/subscribe",
    status_code=status.HTTP_202_ACCEPTED,
    operation_id="subscribeToStatusPage",
    responses=problem_responses(404, 422, 429),
)
async def subscribe(
    slug: Annotated[str, Path(max_length=63)],
    body: SubscribeIn,
    session: Session,
    runtime: RuntimeDep,
    client: ClientAddress,
) -> SubscribeOut:
    """Ask for e-mail about the page's incidents; no token needed. A confirmation link is
    mailed first (double opt-in), and every notice carries a one-click unsubscribe link. The
    answer is the same whether or not the address was subscribed already. Throttled per client
    address (`UPWATCH_SUBSCRIBE_REQUESTS_ALLOWED` per `UPWATCH_SUBSCRIBE_WINDOW_SECONDS`) and
    to three confirmation e-mails an hour per address and page (429)."""
    await VisitorSubscriptions(session, runtime).subscribe(slug, body.email, client)
    return SubscribeOut()


# ---- what visitors open: /s/{slug} and a page's custom domain ----

site = APIRouter(tags=["public status pages"], include_in_schema=False)

IfNoneMatch = Annotated[str | None, Header(max_length=1000)]


async def _visible(snapshots: Snapshots, slug: str) -> Snapshot:
    snapshot = await snapshots.get(slug)
    if snapshot is None:
        raise NotFound("no such status page")
    return snapshot


def _answered(reply: Answer) -> Response:
    response = Response(content=reply.body, status_code=reply.status)
    response.raw_headers = list(reply.headers)
    return response


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
    snapshot = await _visible(snapshots, slug)
    origin = _origin(request, snapshots, snapshot)
    return _answered(answer(snapshot, True, origin, snapshots.max_age, if_none_match))


@site.get("/")
async def custom_domain_root(
    request: Request, snapshots: SnapshotsDep, if_none_match: IfNoneMatch = None
) -> Response:
    """A request to `/` whose Host is a page's custom domain gets that page."""
    host = (request.headers.get("host") or "").rsplit(":", 1)[0]
    snapshot = await snapshots.for_domain(host) if host else None
    if snapshot is None:
        raise NotFound("nothing here: the API is described at /docs")
    origin = _origin(request, snapshots, snapshot)
    return _answered(answer(snapshot, True, origin, snapshots.max_age, if_none_match))


def _owner_file(content: str, media_type: str, max_age: float) -> Response:
    # nosniff: a browser runs it only as what it is labelled.
    return Response(
        content=content,
        media_type=media_type,
        headers={
            "Cache-Control": f"public, max-age={int(max_age)}",
            "X-Content-Type-Options": "nosniff",
        },
    )


@site.get("/s/{slug}/custom.css")
async def status_page_css(
    slug: Annotated[str, Path(max_length=63)], snapshots: SnapshotsDep
) -> Response:
    snapshot = await _visible(snapshots, slug)
    return _owner_file(snapshot.custom_css, "text/css; charset=utf-8", snapshots.max_age)


@site.get("/s/{slug}/custom.js")
async def status_page_js(
    slug: Annotated[str, Path(max_length=63)], snapshots: SnapshotsDep
) -> Response:
    snapshot = await _visible(snapshots, slug)
    return _owner_file(snapshot.custom_js, "text/javascript; charset=utf-8", snapshots.max_age)


@site.get("/assets/status-page.css")
async def status_page_stylesheet() -> Response:
    return Response(
        content=render.STYLESHEET,
        media_type="text/css; charset=utf-8",
        headers={"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"},
    )


FEEDS = {"rss": "application/rss+xml", "atom": "application/atom+xml"}


@site.get("/s/{slug}/feed.{kind}")
async def status_page_feed(
    slug: Annotated[str, Path(max_length=63)],
    kind: Literal["rss", "atom"],
    snapshots: SnapshotsDep,
    if_none_match: IfNoneMatch = None,
) -> Response:
    """RSS 2.0 (`feed.rss`) or Atom 1.0 (`feed.atom`)."""
    snapshot = await _visible(snapshots, slug)
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
    snapshot = await _visible(snapshots, slug)
    return _badge(render.status_badge(snapshot.page), snapshots.max_age)


@site.get("/s/{slug}/components/{componentId}/uptime.svg")
async def uptime_badge(
    slug: Annotated[str, Path(max_length=63)],
    componentId: Annotated[str, Path(max_length=32)],
    snapshots: SnapshotsDep,
) -> Response:
    snapshot = await _visible(snapshots, slug)
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
    await VisitorSubscriptions(session, runtime).subscribe(slug, email, client)
    return _message(
        "Check your inbox",
        f"If {email} can be subscribed, a confirmation link is on its way. Nothing is sent "
        "before you follow it.",
        slug,
    )


@site.get("/s/{slug}/confirm")
async def confirm_subscription(
    slug: Annotated[str, Path(max_length=63)],
    id: Annotated[str, Query(max_length=32)],
    token: Annotated[str, Query(max_length=100)],
    session: WritingSession,
    runtime: RuntimeDep,
) -> Response:
    page = await VisitorSubscriptions(session, runtime).confirm(slug, id, token)
    return _message(
        "Subscribed",
        f"You will get an e-mail when an incident on {page.name} opens, changes or is "
        "resolved. Every e-mail has a link to unsubscribe.",
        page.slug,
    )


@site.api_route("/s/{slug}/unsubscribe", methods=["GET", "POST"])
async def unsubscribe(
    slug: Annotated[str, Path(max_length=63)],
    id: Annotated[str, Query(max_length=32)],
    token: Annotated[str, Query(max_length=100)],
    session: WritingSession,
    runtime: RuntimeDep,
) -> Response:
    """One click from the e-mail (GET), or the mail client's one-click POST (RFC 8058)."""
    page = await VisitorSubscriptions(session, runtime).unsubscribe(slug, id, token)
    return _message("Unsubscribed", f"You will get no more e-mail about {page.name}.", page.slug)
