"""Notification providers (seed 25-27, contract §9)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from upwatch.callers.access import ProjectPageParams
from upwatch.callers.dependencies import CurrentUser
from upwatch.dependencies import RuntimeDep, Session
from upwatch.kit.routes import Routes
from upwatch.kit.schemas import DeletedOut
from upwatch.models import NotificationProvider
from upwatch.notifications.repository import ProviderRepository
from upwatch.notifications.schemas import ProviderCreate, ProviderOut, ProviderUpdate
from upwatch.notifications.service import ProviderService

router = Routes("/notification-providers", "notification providers")


def _providers(session: Session, runtime: RuntimeDep) -> ProviderService:
    return ProviderService(session, runtime)


# For the handlers that need the service alone.
Providers = Annotated[ProviderService, Depends(_providers)]


def provider_out(provider: NotificationProvider) -> ProviderOut:
    return ProviderOut.model_validate(provider)


@router.creates("createNotificationProvider", 402, 409)
async def create_provider(
    body: ProviderCreate, user: CurrentUser, providers: Providers
) -> ProviderOut:
    """Add a channel to a project the caller belongs to. `config` depends on `type`; a type
    outside the project owner's plan (`notificationChannels`) is refused with 402, a URL at an
    internal address with 422, as is an Apprise URL of a service Upwatch does not let Apprise
    reach (only HTTP services) or that Apprise cannot read. Quiet hours need both ends: one of
    them null or left out while the other is set is a 422 naming it (contract §9); both null
    or left out, none.
    Secrets are masked in every response (an Apprise URL shows its scheme only)."""
    return provider_out(await providers.create(user, body))


@router.get("/user", operation_id="listMyNotificationProviders")
async def list_providers(
    user: CurrentUser,
    session: Session,
    page: ProjectPageParams,
) -> list[ProviderOut]:
    """The providers in projects the caller belongs to, newest first."""
    return [provider_out(p) for p in await page.of(ProviderRepository(session), user)]


@router.get("/{id}", operation_id="getNotificationProvider")
async def get_provider(id: str, user: CurrentUser, session: Session) -> ProviderOut:
    return provider_out(await ProviderRepository(session).get_visible(user, id))


@router.updates("updateNotificationProvider", 402, 409)
async def update_provider(
    id: str, body: ProviderUpdate, user: CurrentUser, providers: Providers
) -> ProviderOut:
    """Change a provider; fields left out stay as they are. A new `config` replaces the
    stored one and is validated against the provider's type, or the new `type` sent with it
    (a `type` requires a `config`; 422 when the config does not suit the type or a URL in it
    points at an internal address, contract §9). Send a masked secret back unchanged to keep
    it (not towards a new destination). `name`, `isEnabled`, `type` and `projectId` may not
    be null. Quiet hours need both ends (one null while the other is set, or stored, is a
    422 naming it); send both as null to remove them."""
    return provider_out(await providers.update(user, id, body))


@router.deletes("deleteNotificationProvider")
async def delete_provider(id: str, user: CurrentUser, providers: Providers) -> DeletedOut:
    """Remove a provider; its past alerts stay in the incidents' history."""
    await providers.delete(user, id)
    return DeletedOut(id=id)


@router.post("/{id}/test", operation_id="testNotificationProvider")
async def test_provider(id: str, user: CurrentUser, providers: Providers) -> bool:
    """Send a real test message through the provider now: `true` when it was delivered,
    `false` when delivery failed (the error is kept in the alert history). Quiet hours do not
    apply to tests. At most 20 tests per account in 10 minutes (429)."""
    return await providers.test(user, id)
