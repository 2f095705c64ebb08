"""Status pages as their owners manage them: pages, components, messages and subscribers
(seed 7-10, contract §10). What visitors read is ``public.py`` (JSON) and ``site.py``
(HTML, feeds, badges)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated

from fastapi import Depends
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.callers.access import ProjectPageParams
from upwatch.callers.dependencies import CurrentUser
from upwatch.dependencies import RuntimeDep, Session
from upwatch.kit.pagination import PageParams
from upwatch.kit.routes import Routes
from upwatch.kit.schemas import DeletedOut
from upwatch.models import StatusPage, StatusPageComponent, StatusPageGroup
from upwatch.runtime import Runtime
from upwatch.statuspages.repository import StatusPageRepository
from upwatch.statuspages.schemas import (
    ComponentCreate,
    ComponentOut,
    ComponentUpdate,
    GroupCreate,
    GroupOut,
    GroupUpdate,
    StatusMessageIn,
    StatusMessageOut,
    StatusPageCreate,
    StatusPageOut,
    StatusPageUpdate,
    SubscriberCreate,
    SubscriberCreated,
    SubscriberOut,
    SubscriberUpdate,
)
from upwatch.statuspages.service import StatusPageService, members_of

router = Routes("/status-pages", "status pages")


def _pages(session: Session, runtime: RuntimeDep) -> StatusPageService:
    return StatusPageService(session, runtime)


# For the handlers that need the service alone.
Pages = Annotated[StatusPageService, Depends(_pages)]


async def pages_out(
    session: AsyncSession, runtime: Runtime, pages: Sequence[StatusPage]
) -> list[StatusPageOut]:
    service = StatusPageService(session, runtime)
    components, messages, statuses = await service.shown(pages)
    groups = await service.groups(pages)
    base_url = runtime.settings.public_url
    return [
        StatusPageOut.model_validate(
            page,
            context={
                "message": messages.get(page.id),
                "components": [component_out(c, statuses) for c in components[page.id]],
                "groups": groups_out(groups[page.id], components[page.id], statuses),
                "base_url": base_url,
            },
        )
        for page in pages
    ]


async def page_out(session: AsyncSession, runtime: Runtime, page: StatusPage) -> StatusPageOut:
    return (await pages_out(session, runtime, [page]))[0]


def component_out(component: StatusPageComponent, statuses: Mapping[str, str]) -> ComponentOut:
    return ComponentOut.model_validate(component, context={"statuses": statuses})


def groups_out(
    groups: Sequence[StatusPageGroup],
    components: Sequence[StatusPageComponent],
    statuses: Mapping[str, str],
) -> list[GroupOut]:
    context = {"members": members_of(components), "statuses": statuses}
    return [GroupOut.model_validate(group, context=context) for group in groups]


async def group_out(pages: StatusPageService, group: StatusPageGroup) -> GroupOut:
    components = (await pages.pages.components([group.status_page_id]))[group.status_page_id]
    return groups_out([group], components, await pages.statuses(components))[0]


@router.creates("createStatusPage", 402, 409)
async def create_status_page(
    body: StatusPageCreate, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> StatusPageOut:
    """Create a status page in a project the caller belongs to (limit `statusPageCount`).
    `slug` and `customDomain` are unique across the service (409). Who may read it is its
    `visibility` (`public`, `password` with a write-only `password`, or `members`; default
    `public`, or `members` when `isPublic` is false) within its `allowedNetworks`; everyone
    else gets 404 as for a missing page. Its address is `publicUrl`. Every plan has private
    pages."""
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


@router.updates("updateStatusPage", 409)
async def update_status_page(
    id: str, body: StatusPageUpdate, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> StatusPageOut:
    """Change a page (seed 7); fields left out stay as they are. A new `slug` or
    `customDomain` another page has is a 409; the old address stops answering at once.
    `isPublic: true` makes the page `public`, `false` makes a public page `members`; a new
    `password` signs out every visitor who gave the old one; a change of visibility or
    allowlist holds from the moment it answers."""
    page = await StatusPageService(session, runtime).update(user, id, body)
    return await page_out(session, runtime, page)


@router.deletes("deleteStatusPage")
async def delete_status_page(id: str, user: CurrentUser, pages: Pages) -> DeletedOut:
    """Delete a page with its components and message history."""
    await pages.delete(user, id)
    return DeletedOut(id=id)


@router.creates("addStatusPageComponent", 409, path="/{id}/components")
async def add_component(
    id: str, body: ComponentCreate, user: CurrentUser, pages: Pages
) -> ComponentOut:
    """Show a monitor on the page (seed 9). The monitor must be in the page's project (422;
    404 when the caller cannot see it), and a page shows a monitor once (409). `name`
    defaults to the monitor's name, `order` to after the last component or group; `groupId`
    puts it in a group of this page (422 for any other). Deleting the monitor removes its
    components."""
    component = await pages.add_component(user, id, body)
    return component_out(component, await pages.statuses([component]))


@router.updates("updateStatusPageComponent", path="/{id}/components/{componentId}")
async def update_component(
    id: str,
    componentId: str,
    body: ComponentUpdate,
    user: CurrentUser,
    pages: Pages,
) -> ComponentOut:
    """Rename, describe, reorder or regroup a component; components show by ascending
    `order` (within their group, if any). `groupId` moves it into a group of this page (422
    for any other), null takes it out of its group."""
    component = await pages.update_component(user, id, componentId, body)
    return component_out(component, await pages.statuses([component]))


@router.deletes("deleteStatusPageComponent", path="/{id}/components/{componentId}")
async def delete_component(
    id: str, componentId: str, user: CurrentUser, pages: Pages
) -> DeletedOut:
    """Remove a component from the page (seed 10); the monitor stays."""
    await pages.delete_component(user, id, componentId)
    return DeletedOut(id=componentId)


@router.creates("addStatusPageGroup", 409, path="/{id}/groups")
async def add_group(id: str, body: GroupCreate, user: CurrentUser, pages: Pages) -> GroupOut:
    """Add a named component group to the page; put components in it with their `groupId`.
    The page lists its groups and ungrouped components together by `order` (default: after
    the last of them); a group shows its worst member's status, its members under it. Names
    are unique on a page (409)."""
    return await group_out(pages, await pages.add_group(user, id, body))


@router.updates("updateStatusPageGroup", 409, path="/{id}/groups/{groupId}")
async def update_group(
    id: str, groupId: str, body: GroupUpdate, user: CurrentUser, pages: Pages
) -> GroupOut:
    """Rename or reorder a group; another group of the page with the new name is a 409."""
    return await group_out(pages, await pages.update_group(user, id, groupId, body))


@router.deletes("deleteStatusPageGroup", path="/{id}/groups/{groupId}")
async def delete_group(id: str, groupId: str, user: CurrentUser, pages: Pages) -> DeletedOut:
    """Delete a group; its components stay on the page, ungrouped."""
    await pages.delete_group(user, id, groupId)
    return DeletedOut(id=groupId)


@router.updates("postStatusPageMessage", path="/{id}/status")
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
    id: str, user: CurrentUser, pages: Pages, page: PageParams
) -> list[StatusMessageOut]:
    """The page's message history, newest first (empty messages are the clearings)."""
    items, total = await pages.message_history(user, id, page.limit, page.offset)
    page.total(total)
    return [StatusMessageOut.model_validate(m) for m in items]


@router.get("/{id}/subscribers", operation_id="listStatusPageSubscribers")
async def list_subscribers(
    id: str, user: CurrentUser, pages: Pages, page: PageParams
) -> list[SubscriberOut]:
    """The page's subscribers, oldest first: e-mail visitors (`confirmedAt` is null until they
    followed the link mailed to them; only confirmed ones are told), webhooks and Slack
    channels (URLs masked), each with the components it follows."""
    items, total = await pages.subscribers(user, id, page.limit, page.offset)
    page.total(total)
    return [SubscriberOut.model_validate(s) for s in items]


@router.deletes("deleteStatusPageSubscriber", path="/{id}/subscribers/{subscriberId}")
async def delete_subscriber(
    id: str, subscriberId: str, user: CurrentUser, pages: Pages
) -> DeletedOut:
    """Remove a subscriber: no further notice goes to them."""
    await pages.delete_subscriber(user, id, subscriberId)
    return DeletedOut(id=subscriberId)


@router.creates("addStatusPageSubscriber", path="/{id}/subscribers")
async def add_subscriber(
    id: str, body: SubscriberCreate, user: CurrentUser, pages: Pages
) -> SubscriberCreated:
    """Add a webhook or Slack subscriber (a member of the page's project; confirmed at once).
    A webhook subscriber's `secret` signs its notices (Standard Webhooks) and is shown in this
    answer only. E-mail subscribers subscribe themselves on the public page (double opt-in)."""
    subscriber, secret = await pages.add_subscriber(user, id, body)
    out = SubscriberOut.model_validate(subscriber)
    return SubscriberCreated(**out.model_dump(), secret=secret)


@router.updates("updateStatusPageSubscriber", path="/{id}/subscribers/{subscriberId}")
async def update_subscriber(
    id: str, subscriberId: str, body: SubscriberUpdate, user: CurrentUser, pages: Pages
) -> SubscriberOut:
    """Change a subscriber's components, or a webhook or Slack subscriber's URL (sent back
    masked, the stored one stays)."""
    subscriber = await pages.update_subscriber(user, id, subscriberId, body)
    return SubscriberOut.model_validate(subscriber)
