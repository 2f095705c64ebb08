"""Status page rules: who may see and change a page, unique slugs and domains, the plan's
page limit, components of the page's own project, and the message history."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterable, Sequence

from pydantic.alias_generators import to_snake

from upwatch.billing.repository import UsageRepository
from upwatch.billing.service import PlanLimits
from upwatch.engine.status import decode_state, region_status, settings_of
from upwatch.kit.db import after_commit
from upwatch.kit.declared import require_free_key
from upwatch.kit.errors import Conflict, NotFound, ValidationFailed
from upwatch.kit.net import TargetRefused
from upwatch.kit.security import SECRET_MASK
from upwatch.models import (
    Monitor,
    StatusMessage,
    StatusPage,
    StatusPageComponent,
    StatusPageGroup,
    StatusPageSubscriber,
    User,
)
from upwatch.projects.repository import ProjectRepository
from upwatch.runtime import DomainService, uses
from upwatch.statuspages.repository import StatusPageRepository
from upwatch.statuspages.rules import ComponentStatus, component_status
from upwatch.statuspages.schemas import (
    ComponentCreate,
    ComponentUpdate,
    GroupCreate,
    GroupUpdate,
    StatusMessageIn,
    StatusPageCreate,
    StatusPageUpdate,
    SubscriberCreate,
    SubscriberUpdate,
)


def members_of(components: Iterable[StatusPageComponent]) -> dict[str, list[str]]:
    """Each group's members (component ids), in the order ``components`` come in."""
    members: dict[str, list[str]] = {}
    for component in components:
        if component.group_id is not None:
            members.setdefault(component.group_id, []).append(component.id)
    return members


def monitor_component_status(monitor: Monitor | None) -> ComponentStatus:
    """A component's status from its monitor's stored state (``rules.component_status``)."""
    if monitor is None:
        return "unknown"
    if not monitor.is_active:
        return component_status("paused")
    state = decode_state(monitor)
    settings = settings_of(monitor, tuple(state.regions))
    regions = [region_status(state.regions.get(r), settings) for r in settings.region_ids]
    return component_status(monitor.status, regions)


class StatusPageService(DomainService):
    pages = uses(StatusPageRepository)
    projects = uses(ProjectRepository)
    limits = uses(PlanLimits)
    usage = uses(UsageRepository)

    async def _require_free(
        self, slug: str | None, domain: str | None, besides: str | None = None
    ) -> None:
        taken = await self.pages.taken(slug, domain, besides)
        if "slug" in taken:
            raise Conflict("another status page has this slug")
        if "customDomain" in taken:
            raise Conflict("another status page has this custom domain")

    async def create(self, caller: User, body: StatusPageCreate) -> StatusPage:
        access = await self.projects.get_visible(caller, body.projectId)
        owner_id = access.project.owner_id
        await self.limits.lock(owner_id)
        await self.limits.require(
            owner_id, "statusPageCount", await self.usage.status_pages(owner_id)
        )
        await self._require_free(body.slug, body.customDomain)
        await require_free_key(self.session, StatusPage, "status page", body.projectId, body.key)
        visibility = body.visibility or ("public" if body.isPublic else "members")
        if "isPublic" in body.model_fields_set and body.isPublic != (visibility == "public"):
            raise ValidationFailed.on("isPublic", f"contradicts visibility {visibility}")
        page = StatusPage(
            project_id=body.projectId,
            name=body.name,
            slug=body.slug,
            description=body.description,
            is_public=visibility == "public",
            visibility=visibility,
            password_hash=None,
            allowed_networks=list(body.allowedNetworks),
            theme=body.theme,
            custom_domain=body.customDomain,
            custom_css=body.customCss,
            custom_js=body.customJs,
            key=body.key,
            time_zone=body.timeZone,
            language=body.language,
            visitor_language=body.visitorLanguage,
        )
        await self._set_access(page, visibility, body.password)
        await self.pages.add(page)
        self._touch(page)  # its domain may have been asked for before it existed
        return page

    async def _set_access(self, page: StatusPage, visibility: str, password: str | None) -> None:
        """The visibility, with ``is_public`` (the seed's view of it) following, and a new
        password hashed (never returned, so never sent back masked); a password page needs
        one."""
        if password is not None:
            page.password_hash = await self.runtime.passwords.hash(password)
        if visibility == "password" and page.password_hash is None:
            raise ValidationFailed.on("password", "a password page needs a password")
        page.visibility = visibility
        page.is_public = visibility == "public"

    async def update(self, caller: User, page_id: str, body: StatusPageUpdate) -> StatusPage:
        page = await self.pages.get_visible(caller, page_id)
        given = body.model_dump(exclude_unset=True)
        slug = given.get("slug")
        domain = given.get("customDomain")
        await self._require_free(
            slug if slug != page.slug else None,
            domain if domain != page.custom_domain else None,
            besides=page.id,
        )
        if "key" in given:
            await require_free_key(
                self.session, StatusPage, "status page", page.project_id, body.key, page.id
            )
        visibility = given.pop("visibility", None)
        public = given.pop("isPublic", None)
        if visibility is None and public is not None:
            if public:
                visibility = "public"
            elif page.visibility == "public":
                visibility = "members"
        elif visibility is not None and public is not None and public != (visibility == "public"):
            raise ValidationFailed.on("isPublic", f"contradicts visibility {visibility}")
        await self._set_access(page, visibility or page.visibility, given.pop("password", None))
        for field, value in given.items():
            setattr(page, to_snake(field), value)
        self._touch(page)
        await self.session.flush()
        return page

    async def delete(self, caller: User, page_id: str) -> None:
        page = await self.pages.get_visible(caller, page_id)
        self._touch(page)
        await self.pages.delete(page)

    def _touch(self, page: StatusPage) -> None:
        """Something the page shows changed: its ``updatedAt`` says when, and its public
        snapshot is dropped once the change is committed."""
        page.updated_at = self.runtime.clock.now()
        page_id, changes = page.id, self.runtime.status_pages
        after_commit(self.session, lambda: changes.changed(page_id))

    # ---- components ----

    async def add_component(
        self, caller: User, page_id: str, body: ComponentCreate
    ) -> StatusPageComponent:
        page = await self.pages.get_visible(caller, page_id)
        monitor = await self.session.get(Monitor, body.monitorId)
        if monitor is None or await self.projects.access(caller, monitor.project_id) is None:
            raise NotFound("no such monitor")
        if monitor.project_id != page.project_id:
            raise ValidationFailed.on("monitorId", "the monitor is not in the page's project")
        if await self.pages.shows(page.id, monitor.id):
            raise Conflict("the page already shows this monitor")
        group_id = await self._group_of(page, body.groupId)
        if body.order is None:
            last = await self.pages.last_position(page.id)
            order = 0 if last is None else last + 1
        else:
            order = body.order
        component = StatusPageComponent(
            status_page_id=page.id,
            monitor_id=monitor.id,
            name=body.name or monitor.name,
            description=body.description,
            position=order,
            group_id=group_id,
        )
        await self.pages.add(component)
        self._touch(page)
        return component

    async def _component(
        self, caller: User, page_id: str, component_id: str
    ) -> tuple[StatusPage, StatusPageComponent]:
        page = await self.pages.get_visible(caller, page_id)
        component = await self.pages.component(page.id, component_id)
        if component is None:
            raise NotFound("no such component on this status page")
        return page, component

    async def update_component(
        self, caller: User, page_id: str, component_id: str, body: ComponentUpdate
    ) -> StatusPageComponent:
        page, component = await self._component(caller, page_id, component_id)
        given = body.model_dump(exclude_unset=True)
        if "name" in given:
            component.name = given["name"]
        if "description" in given:
            component.description = given["description"]
        if "order" in given:
            component.position = given["order"]
        if "groupId" in given:
            component.group_id = await self._group_of(page, body.groupId)
        component.updated_at = self.runtime.clock.now()
        self._touch(page)
        await self.session.flush()
        return component

    async def delete_component(self, caller: User, page_id: str, component_id: str) -> None:
        page, component = await self._component(caller, page_id, component_id)
        await self.pages.delete(component)
        self._touch(page)

    async def _group_of(self, page: StatusPage, group_id: str | None) -> str | None:
        """``group_id`` when it is a group of ``page``; another page's (another project's)
        group is refused like an unknown one, without saying it exists."""
        if group_id is None:
            return None
        if await self.pages.group(page.id, group_id) is None:
            raise ValidationFailed.on("groupId", "not a group of this status page")
        return group_id

    # ---- groups ----

    async def _require_free_name(self, page: StatusPage, name: str, besides: str = "") -> None:
        same = await self.pages.group_named(page.id, name)
        if same is not None and same.id != besides:
            raise Conflict("the page has a group of this name")

    async def add_group(self, caller: User, page_id: str, body: GroupCreate) -> StatusPageGroup:
        page = await self.pages.get_visible(caller, page_id)
        await self._require_free_name(page, body.name)
        if body.order is None:
            last = await self.pages.last_position(page.id)
            order = 0 if last is None else last + 1
        else:
            order = body.order
        group = StatusPageGroup(status_page_id=page.id, name=body.name, position=order)
        await self.pages.add(group)
        self._touch(page)
        return group

    async def _group(
        self, caller: User, page_id: str, group_id: str
    ) -> tuple[StatusPage, StatusPageGroup]:
        page = await self.pages.get_visible(caller, page_id)
        group = await self.pages.group(page.id, group_id)
        if group is None:
            raise NotFound("no such group on this status page")
        return page, group

    async def update_group(
        self, caller: User, page_id: str, group_id: str, body: GroupUpdate
    ) -> StatusPageGroup:
        page, group = await self._group(caller, page_id, group_id)
        if body.name is not None:
            await self._require_free_name(page, body.name, besides=group.id)
            group.name = body.name
        if body.order is not None:
            group.position = body.order
        group.updated_at = self.runtime.clock.now()
        self._touch(page)
        await self.session.flush()
        return group

    async def delete_group(self, caller: User, page_id: str, group_id: str) -> None:
        """The group goes; its components stay on the page, ungrouped."""
        page, group = await self._group(caller, page_id, group_id)
        await self.pages.ungroup(group.id)
        await self.pages.delete(group)
        self._touch(page)

    async def groups(self, pages: Sequence[StatusPage]) -> dict[str, list[StatusPageGroup]]:
        """Each page's groups in their order."""
        return await self.pages.groups([p.id for p in pages])

    async def statuses(
        self, components: Sequence[StatusPageComponent]
    ) -> dict[str, ComponentStatus]:
        monitors = await self.pages.monitors([c.monitor_id for c in components])
        return {c.id: monitor_component_status(monitors.get(c.monitor_id)) for c in components}

    async def shown(
        self, pages: Sequence[StatusPage]
    ) -> tuple[
        dict[str, list[StatusPageComponent]],
        dict[str, StatusMessage],
        dict[str, ComponentStatus],
    ]:
        """What the owner's view of ``pages`` shows besides the rows: components in order,
        current messages, and each component's status."""
        ids = [p.id for p in pages]
        components = await self.pages.components(ids)
        messages = await self.pages.current_messages(ids)
        statuses = await self.statuses([c for p in pages for c in components[p.id]])
        return components, messages, statuses

    # ---- messages ----

    async def post_message(self, caller: User, page_id: str, body: StatusMessageIn) -> StatusPage:
        page = await self.pages.get_visible(caller, page_id)
        ids = list(dict.fromkeys(body.componentIds))
        known = {c.id for c in (await self.pages.components([page.id]))[page.id]}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise ValidationFailed.on(
                "componentIds", f"not components of this page: {', '.join(unknown)}"
            )
        now = self.runtime.clock.now()
        await self.pages.add(
            StatusMessage(
                status_page_id=page.id,
                message=body.message,
                component_ids=ids,
                user_id=caller.id,
                created_at=now,
            )
        )
        self._touch(page)
        await self.session.flush()
        return page

    async def message_history(
        self, caller: User, page_id: str, limit: int, offset: int
    ) -> tuple[Sequence[StatusMessage], int]:
        page = await self.pages.get_visible(caller, page_id)
        return await self.pages.messages(page.id, limit, offset)

    # ---- subscribers ----

    async def subscribers(
        self, caller: User, page_id: str, limit: int, offset: int
    ) -> tuple[Sequence[StatusPageSubscriber], int]:
        page = await self.pages.get_visible(caller, page_id)
        return await self.pages.subscribers(page.id, limit, offset)

    async def delete_subscriber(self, caller: User, page_id: str, subscriber_id: str) -> None:
        page = await self.pages.get_visible(caller, page_id)
        subscriber = await self.pages.subscriber(page.id, subscriber_id)
        if subscriber is None:
            raise NotFound("no such subscriber of this status page")
        await self.pages.delete(subscriber)

    async def add_subscriber(
        self, caller: User, page_id: str, body: SubscriberCreate
    ) -> tuple[StatusPageSubscriber, str | None]:
        """A webhook or Slack subscriber, confirmed at once (a member of the project adds it;
        nobody outside can make the page post to an address); a webhook's signing secret,
        which only this answer shows."""
        page = await self.pages.get_visible(caller, page_id)
        chosen = await chosen_components(self.pages, page.id, body.componentIds)
        self._guarded(body.url)
        secret = new_webhook_secret() if body.kind == "webhook" else None
        now = self.runtime.clock.now()
        subscriber = StatusPageSubscriber(
            status_page_id=page.id,
            kind=body.kind,
            url=body.url,
            secret=secret,
            component_ids=chosen,
            created_at=now,
            confirmed_at=now,
        )
        await self.pages.add(subscriber)
        return subscriber, secret

    async def update_subscriber(
        self, caller: User, page_id: str, subscriber_id: str, body: SubscriberUpdate
    ) -> StatusPageSubscriber:
        page = await self.pages.get_visible(caller, page_id)
        subscriber = await self.pages.subscriber(page.id, subscriber_id)
        if subscriber is None:
            raise NotFound("no such subscriber of this status page")
        given = body.model_fields_set
        if body.url is not None and SECRET_MASK not in body.url:
            if subscriber.kind == "email":
                raise ValidationFailed.on("url", "an e-mail subscriber has no URL")
            self._guarded(body.url)
            subscriber.url = body.url
        if "componentIds" in given:
            subscriber.component_ids = await chosen_components(
                self.pages, page.id, body.componentIds
            )
        await self.session.flush()
        return subscriber

    def _guarded(self, url: str) -> None:
        """The address guard's verdict now (it checks again at every delivery)."""
        try:
            self.runtime.guard.check_url(url)
        except TargetRefused as exc:
            raise ValidationFailed.on("url", f"refused address: {exc}") from None
        except ValueError as exc:
            raise ValidationFailed.on("url", str(exc)) from None


def new_webhook_secret() -> str:
    """A Standard Webhooks secret: ``whsec_`` and 24 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


async def chosen_components(
    pages: StatusPageRepository, page_id: str, component_ids: Sequence[str] | None
) -> list[str] | None:
    """The page's components a subscriber chose (None: all); another page's is refused."""
    if component_ids is None:
        return None
    known = {c.id for c in (await pages.components([page_id]))[page_id]}
    unknown = [c for c in component_ids if c not in known]
    if unknown:
        raise ValidationFailed.on("componentIds", f"not components of this page: {unknown[0]}")
    if not component_ids:
        raise ValidationFailed.on("componentIds", "choose at least one, or leave it out for all")
    return list(dict.fromkeys(component_ids))
