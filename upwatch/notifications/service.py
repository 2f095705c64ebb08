"""Notification provider rules: access, plan channels, per-type config, safe addresses."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import ValidationError
from pydantic.alias_generators import to_snake

from upwatch.audit import kinds
from upwatch.audit.service import record, secrets_changed
from upwatch.billing.service import PlanLimits
from upwatch.kit.db import end_transaction
from upwatch.kit.declared import SecretWrite, digested, require_free_key
from upwatch.kit.errors import (
    Forbidden,
    TooManyRequests,
    ValidationFailed,
    field_errors,
)
from upwatch.models import AlertAttempt, NotificationProvider, Project, User
from upwatch.notifications.channels import (
    SecretNotKept,
    is_secret_path,
    keep_secrets,
    refused_urls,
    validate_config,
)
from upwatch.notifications.delivery import alert_row, to_provider
from upwatch.notifications.events import AlertEvent, EventKind
from upwatch.notifications.repository import AlertRepository, ProviderRepository
from upwatch.notifications.schemas import NewProvider, ProviderUpdate
from upwatch.projects.repository import ProjectRepository
from upwatch.runtime import DomainService, uses

# Every state change writes one alert per provider inside the ingester's shared transaction:
# a bound keeps one project from slowing every tenant's results (and from becoming a mailer).
MAX_PROVIDERS_PER_PROJECT = 50
PROVIDER = "notification provider"


def normalise_time(value: str | None) -> str | None:
    """``7:05`` -> ``07:05``."""
    if value is None:
        return None
    hours, minutes = value.split(":")
    return f"{int(hours):02d}:{minutes}"


def require_quiet_pair(start: str | None, end: str | None) -> None:
    if (start is None) != (end is None):
        missing = "quietHoursEnd" if end is None else "quietHoursStart"
        raise ValidationFailed.on(missing, "quiet hours need both a start and an end")


class ProviderService(DomainService):
    providers = uses(ProviderRepository)
    projects = uses(ProjectRepository)
    limits = uses(PlanLimits)

    async def _project(self, caller: User, project_id: str) -> Project:
        access = await self.projects.get_visible(caller, project_id)
        return access.project

    async def _own(self, provider: NotificationProvider) -> Project:
        """The project of a provider ``visible`` already let through."""
        project = await self.projects.get(provider.project_id)
        assert project is not None  # the provider's foreign key holds it
        return project

    def _check_addresses(self, channel: str, config: dict[str, Any]) -> None:
        """Refuse URLs at internal addresses now; they are checked again at send time."""
        for field, why in refused_urls(self.runtime.guard, channel, config):
            raise ValidationFailed.on(f"config.{field}", why)

    async def _require_room(self, project: Project) -> None:
        await self.limits.lock(project.owner_id)  # concurrent creations cannot overshoot
        if await self.providers.count_in_project(project.id) >= MAX_PROVIDERS_PER_PROJECT:
            raise ValidationFailed.on(
                "projectId",
                f"a project holds at most {MAX_PROVIDERS_PER_PROJECT} notification providers",
            )

    async def create(self, caller: User, body: NewProvider) -> NotificationProvider:
        project = await self._project(caller, body.projectId)
        await self.limits.require_channel(project.owner_id, body.type)
        await self._require_room(project)
        config = body.config.model_dump(mode="json", by_alias=True, exclude_none=True)
        self._check_addresses(body.type, config)
        start, end = normalise_time(body.quietHoursStart), normalise_time(body.quietHoursEnd)
        require_quiet_pair(start, end)
        await require_free_key(self.session, NotificationProvider, PROVIDER, project.id, body.key)
        provider = NotificationProvider(
            project_id=project.id,
            type=body.type,
            name=body.name,
            config=config,
            is_enabled=body.isEnabled if body.isEnabled is not None else True,
            quiet_hours_start=start,
            quiet_hours_end=end,
            repeat_every_minutes=body.repeatEveryMinutes,
            key=body.key,
        )
        sent = body.config.model_dump(mode="json", by_alias=True, exclude_none=True)
        await self._refresh_secret_refs(provider, {}, sent, body.secretRefs or {})
        return await self.providers.add(provider)

    async def _refresh_secret_refs(
        self,
        provider: NotificationProvider,
        before: dict[str, Any],
        sent: dict[str, Any] | None,
        names: dict[str, str] | None,
    ) -> None:
        """The secrets a config file names, with digests of their values now."""
        channel = provider.type
        write = SecretWrite(
            before={"config": before},
            after={"config": provider.config or {}},
            sent=None if sent is None else {"config": sent},
            is_secret=lambda path: is_secret_path(channel, path),
        )
        provider.secret_refs = await digested(
            self.runtime.passwords, write, names, provider.secret_refs or {}
        )

    async def update(
        self, caller: User, provider_id: str, body: ProviderUpdate
    ) -> NotificationProvider:
        provider = await self.providers.get_visible(caller, provider_id)
        config_before = dict(provider.config or {}) if body.type in (None, provider.type) else {}
        given = body.model_fields_set
        if body.type is not None and body.config is None:
            # The schema says so too (dependentRequired): a type is validated with its config.
            raise ValidationFailed.on("config", f"a type comes with its config ({body.type})")
        target = body.projectId or provider.project_id
        moving = target != provider.project_id
        project = await self._project(caller, target) if moving else await self._own(provider)
        if moving:
            source = await self.projects.access(caller, provider.project_id)
            if source is None or not source.can_manage_members:
                raise Forbidden("moving a provider needs the owner or a project manager")
            await self._require_room(project)
            # Alerts about the old project's incidents must not reach the new project.
            await AlertRepository(self.session).cancel_pending(
                provider.id, "the provider moved to another project"
            )
        channel = body.type or provider.type
        if channel != provider.type or project.id != provider.project_id:
            await self.limits.require_channel(project.owner_id, channel)
        if body.config is not None:
            stored = provider.config if channel == provider.type else {}
            try:
                config = validate_config(channel, keep_secrets(channel, body.config, stored))
            except SecretNotKept as exc:
                raise ValidationFailed.on(
                    exc.field, "give the secret again when the destination changes"
                ) from exc
            except ValidationError as exc:
                errors = field_errors(exc.errors(), within=("config",))
                raise ValidationFailed.listing(errors) from exc
            self._check_addresses(channel, config)
            provider.config = config
        start = (
            normalise_time(body.quietHoursStart)
            if "quietHoursStart" in given
            else provider.quiet_hours_start
        )
        end = (
            normalise_time(body.quietHoursEnd)
            if "quietHoursEnd" in given
            else provider.quiet_hours_end
        )
        require_quiet_pair(start, end)
        if "key" in given or moving:
            key = body.key if "key" in given else provider.key
            await require_free_key(
                self.session, NotificationProvider, PROVIDER, project.id, key, provider.id
            )
            provider.key = key
        provider.type = channel
        provider.project_id = project.id
        await self._refresh_secret_refs(provider, config_before, body.config, body.secretRefs)
        changed = secrets_changed(
            {"config": config_before},
            {"config": provider.config or {}},
            lambda path: is_secret_path(channel, path),
        )
        if changed:
            # Which fields, never their values.
            await record(
                self.session,
                kinds.PROVIDER_SECRET_CHANGED,
                self.runtime.clock.now(),
                actor=caller,
                project_id=project.id,
                target_type="notification_provider",
                target_id=provider.id,
                target_label=body.name or provider.name,
                details={"fields": ",".join(changed), "type": channel},
            )
        provider.quiet_hours_start, provider.quiet_hours_end = start, end
        # The schema refuses null for these; left out means unchanged.
        for field, value in body.model_dump(
            exclude_unset=True, include={"name", "isEnabled", "repeatEveryMinutes"}
        ).items():
            setattr(provider, to_snake(field), value)
        await self.session.flush()
        await self.session.refresh(provider)
        return provider

    async def delete(self, caller: User, provider_id: str) -> None:
        await self.providers.delete(await self.providers.get_visible(caller, provider_id))

    async def test(self, caller: User, provider_id: str) -> bool:
        """Send a real test message now; recorded in the alert history like any alert."""
        provider = await self.providers.get_visible(caller, provider_id)
        window = self.runtime.throttles.provider_test
        wait = await window.take(caller.id)
        if wait is not None:
            raise TooManyRequests("too many test messages; try again later", retry_after=wait)
        project = await self._own(provider)
        now = self.runtime.clock.now()
        event = AlertEvent(
            kind=EventKind.TEST,
            delivery_id=f"test:{provider.id}:{uuid.uuid4().hex[:8]}",
            occurred_at=now,
            project_id=project.id,
            project_name=project.name,
            severity="low",
            language=project.alert_language,
        )
        await end_transaction(self.session)  # delivery waits on the provider
        failure = await self.runtime.alerts.send(provider, event)
        status, reason = ("sent", None) if failure is None else ("failed", failure.message)
        alert = alert_row(
            to_provider(provider), project.id, None, event, status, reason, now, attempts=1
        )
        AlertRepository(self.session).add(alert)
        await self.session.flush()
        self.session.add(
            AlertAttempt(
                alert_id=alert.id,
                attempt=1,
                outcome="sent" if failure is None else "failed",
                error=alert.reason,
                duration_ms=None,
                attempted_at=now,
            )
        )
        return failure is None
