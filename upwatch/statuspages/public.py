"""What the public reads of a status page without a token: its JSON, built from the page's
snapshot, and the e-mail subscription (contract §10). The same snapshots answer the HTML,
feeds and badges of ``site.py``."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Path, Response, status
from starlette.requests import Request

from upwatch.dependencies import ClientAddress, RuntimeDep, Session
from upwatch.kit.errors import NotFound, problem_responses
from upwatch.kit.routes import Routes
from upwatch.statuspages.access import Verdict, Visitor, VisitorDep, give_pass, unlock
from upwatch.statuspages.schemas import PublicStatusPage, SubscribeIn, SubscribeOut, UnlockIn
from upwatch.statuspages.serving import Answer, answer, restricted
from upwatch.statuspages.snapshot import Snapshot, Snapshots
from upwatch.statuspages.subscribers import VisitorSubscriptions

public = Routes("/status-pages/public", "public status pages", (400, 404, 422, 500))


async def get_snapshots(request: Request) -> Snapshots:
    snapshots: Snapshots = request.app.state.status_page_snapshots
    return snapshots


SnapshotsDep = Annotated[Snapshots, Depends(get_snapshots)]
IfNoneMatch = Annotated[str | None, Header(max_length=1000)]


async def gated_snapshot(
    snapshots: Snapshots, slug: str, visitor: Visitor
) -> tuple[Snapshot | None, Verdict]:
    """The page's snapshot and what this visitor may do with it (statuspages/access.py)."""
    snapshot = await snapshots.get(slug)
    if snapshot is None:
        return None, "hidden"
    return snapshot, await visitor.verdict(snapshot.page_id, snapshot.gate)


async def visible_snapshot(snapshots: Snapshots, slug: str, visitor: Visitor) -> Snapshot:
    """The page's snapshot if this visitor may read it, else 404 alike for a missing page
    and one the visitor may not read (no password form: that is the HTML page's alone)."""
    snapshot, verdict = await gated_snapshot(snapshots, slug, visitor)
    if snapshot is None or verdict != "show":
        raise NotFound("no such status page")
    return snapshot


def answered(reply: Answer) -> Response:
    response = Response(content=reply.body, status_code=reply.status)
    response.raw_headers = list(reply.headers)
    return response


def page_answer(
    snapshot: Snapshot,
    html: bool,
    origin: str,
    max_age: float,
    if_none_match: str | None,
    language: str | None = None,
) -> Response:
    """``serving.answer`` for a visitor already let in: a restricted page's answer is never
    cached by others, tagged or answered 304."""
    if snapshot.gate.open:
        return answered(answer(snapshot, html, origin, max_age, if_none_match, language))
    return answered(restricted(answer(snapshot, html, origin, max_age, None, language)))


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
    visitor: VisitorDep,
    if_none_match: IfNoneMatch = None,
) -> Response:
    """What the public sees of a page (seed 11); no token needed for a public page. A page
    the caller may not read is 404 exactly like a missing one: a `members` page without a
    bearer token (access token or API key) of its project, a `password` page without the
    cookie of `POST .../unlock`, any page from an address outside its `allowedNetworks`.
    A restricted page's answer carries `Cache-Control: private, no-store` and no `ETag`.
    Never shows a monitor's address, headers, body or any
    secret. `days` are 90 UTC days per component from the daily aggregates; `incidents` are
    the project's incidents on the page's monitors or placed on the page or its components
    (`statusPageIds`, `componentIds` of an incident), open or resolved in the last 14 days.
    `overallStatus` is the worse of what the components say and the `impact` of each open
    incident (low, medium: `degraded`; high: `partial_outage`; critical: `major_outage`), so a
    page with an open incident is never `operational`; `unknown` when no component has been
    checked and nothing is open (a client should read a value it does not know as not
    operational). Answers carry an `ETag` and `Cache-Control`; the page is built at most once
    per `UPWATCH_STATUS_PAGE_MAX_AGE_SECONDS`, and no answer is older than the newest state
    change it shows plus that age."""
    snapshot = await visible_snapshot(snapshots, slug, visitor)
    return page_answer(snapshot, False, "", snapshots.max_age, if_none_match)


@public.post(
    "/slug/{slug}/unlock",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="unlockStatusPage",
    responses=problem_responses(401, 404, 422, 429),
)
async def unlock_status_page(
    slug: Annotated[str, Path(max_length=63)],
    body: UnlockIn,
    request: Request,
    snapshots: SnapshotsDep,
    visitor: VisitorDep,
) -> Response:
    """Open a `password` page: the right password sets an HttpOnly cookie (SameSite=Lax,
    Secure over https, 30 days) that every route of the page then accepts, until its
    password changes. A wrong password is 401; past `UPWATCH_LOGIN_FAILURES_ALLOWED` wrong
    ones in `UPWATCH_LOGIN_WINDOW_SECONDS` from one client address, 429 with
    `Retry-After`. A page that takes no password, or an address outside its allowlist, is
    404 like a missing page."""
    snapshot = await snapshots.get(slug)
    if snapshot is None:
        raise NotFound("no such status page")
    value = await unlock(visitor, snapshot.page_id, snapshot.gate, body.password)
    response = Response(status_code=status.HTTP_204_NO_CONTENT)
    give_pass(request, response, snapshot.page_id, value)
    return response


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
    snapshots: SnapshotsDep,
    visitor: VisitorDep,
) -> SubscribeOut:
    """Ask for e-mail about the page's incidents and maintenance (of the chosen components,
    `componentIds`, or all); no token needed. A confirmation link is
    mailed first (double opt-in), and every notice carries a one-click unsubscribe link. The
    answer is the same whether or not the address was subscribed already. Throttled per client
    address (`UPWATCH_SUBSCRIBE_REQUESTS_ALLOWED` per `UPWATCH_SUBSCRIBE_WINDOW_SECONDS`) and
    to three confirmation e-mails an hour per address and page (429). Only a `public` page
    takes subscribers (e-mail leaves the page's walls); any other is 404."""
    await visible_snapshot(snapshots, slug, visitor)
    await VisitorSubscriptions(session, runtime).subscribe(
        slug, body.email, client, body.componentIds
    )
    return SubscribeOut()
