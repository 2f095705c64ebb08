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
from upwatch.statuspages.schemas import PublicStatusPage, SubscribeIn, SubscribeOut
from upwatch.statuspages.serving import Answer, answer
from upwatch.statuspages.snapshot import Snapshot, Snapshots
from upwatch.statuspages.subscribers import VisitorSubscriptions

public = Routes("/status-pages/public", "public status pages", (400, 404, 422, 500))


async def get_snapshots(request: Request) -> Snapshots:
    snapshots: Snapshots = request.app.state.status_page_snapshots
    return snapshots


SnapshotsDep = Annotated[Snapshots, Depends(get_snapshots)]
IfNoneMatch = Annotated[str | None, Header(max_length=1000)]


async def visible_snapshot(snapshots: Snapshots, slug: str) -> Snapshot:
    """The page's snapshot, or 404 alike for a missing and a private page."""
    snapshot = await snapshots.get(slug)
    if snapshot is None:
        raise NotFound("no such status page")
    return snapshot


def answered(reply: Answer) -> Response:
    response = Response(content=reply.body, status_code=reply.status)
    response.raw_headers = list(reply.headers)
    return response


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
    if_none_match: IfNoneMatch = None,
) -> Response:
    """What the public sees of a page (seed 11); no token needed. A private page is 404
    exactly like a missing one. Never shows a monitor's address, headers, body or any
    secret. `days` are 90 UTC days per component from the daily aggregates; `incidents` are
    the project's incidents on the page's monitors, open or resolved in the last 14 days.
    Answers carry an `ETag` and `Cache-Control`; the page is built at most once per
    `UPWATCH_STATUS_PAGE_MAX_AGE_SECONDS`."""
    snapshot = await visible_snapshot(snapshots, slug)
    return answered(answer(snapshot, False, "", snapshots.max_age, if_none_match))


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
    """Ask for e-mail about the page's incidents and maintenance (of the chosen components,
    `componentIds`, or all); no token needed. A confirmation link is
    mailed first (double opt-in), and every notice carries a one-click unsubscribe link. The
    answer is the same whether or not the address was subscribed already. Throttled per client
    address (`UPWATCH_SUBSCRIBE_REQUESTS_ALLOWED` per `UPWATCH_SUBSCRIBE_WINDOW_SECONDS`) and
    to three confirmation e-mails an hour per address and page (429)."""
    await VisitorSubscriptions(session, runtime).subscribe(
        slug, body.email, client, body.componentIds
    )
    return SubscribeOut()
