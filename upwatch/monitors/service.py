"""Monitor rules: who may see and change a monitor, limits, safe targets, statistics."""

from __future__ import annotations

import logging
from datetime import datetime
from functools import partial
from typing import Any, Literal

from pydantic import ValidationError
from pydantic.alias_generators import to_snake
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.audit import kinds
from upwatch.audit.service import record, secrets_changed
from upwatch.billing.service import PlanLimits, frequency_within, within
from upwatch.escalation.repository import EscalationRepository
from upwatch.kit.db import after_commit, end_transaction
from upwatch.kit.declared import SecretWrite, digested, require_free_key
from upwatch.kit.errors import Conflict, NotFound, ValidationFailed
from upwatch.kit.logs import log_event
from upwatch.kit.net import TargetRefused, check_host_name
from upwatch.kit.plans import Plan
from upwatch.kit.security import new_opaque_token
from upwatch.models import CheckResult, Monitor, Region, User
from upwatch.monitors import secrets, statistics
from upwatch.monitors.dependency_graph import cycle_through
from upwatch.monitors.repository import MonitorRepository, RegionRepository
from upwatch.monitors.schemas import (
    SETTING_FIELDS,
    MonitorFields,
    MonitorUpdate,
    NewMonitor,
)
from upwatch.probes.assertions import assertion_of
from upwatch.probes.assertions import validate_all as validate_assertions
from upwatch.probes.heartbeat import BadSchedule, validate_schedule, zone_of
from upwatch.probes.registry import kind_of
from upwatch.projects.repository import ProjectRepository
from upwatch.runtime import DomainService, Runtime, uses

DEFAULT_TIMEOUT_SECONDS = 10.0
# Create fields with rules of their own; every other one is stored as sent, by column name.
SEPARATELY_CREATED = {
    "secretHeaders",
    "intervalSeconds",
    "timeoutSeconds",
    "regionIds",
    "dependsOn",
    "assertions",
    "secretRefs",
}
# Update fields with rules of their own; every other one is stored as sent, by column name.
SEPARATELY_UPDATED = {
    "headers",
    "secretHeaders",
    "regionIds",
    "isActive",
    "dependsOn",
    "assertions",
    "key",
    "secretRefs",
}


log = logging.getLogger(__name__)


def _log_pause(monitor: Monitor, caller: User, was: str, active: bool) -> None:
    """A person paused or resumed a monitor (the engine logs the changes results make)."""
    log_event(
        log,
        "monitor.status_changed",
        "monitor %s (%s) is %s, was %s (%s by user %s)",
        monitor.id,
        monitor.name,
        monitor.status,
        was,
        "resumed" if active else "paused",
        caller.id,
        monitor_id=monitor.id,
        project_id=monitor.project_id,
        status=monitor.status,
        previous_status=was,
        user_id=caller.id,
    )


def _secret_part(monitor: Monitor | None) -> dict[str, Any]:
    """Where a monitor's secrets are, as config files name them: ``headers.X``, a secret
    setting by name, and ``url`` (a database URL's password)."""
    if monitor is None:
        return {"headers": {}}
    return {
        **(monitor.settings or {}),
        "headers": dict(monitor.headers or {}),
        "url": monitor.url,
    }


async def admin_region_event(
    session: AsyncSession, runtime: Runtime, admin: User, region: Region, action: str
) -> None:
    await record(
        session,
        kinds.ADMIN_ACTION,
        runtime.clock.now(),
        actor=admin,
        target_type="region",
        target_id=region.id,
        target_label=region.code,
        details={"action": action},
    )


# What a heartbeat ping reports (GET or POST /heartbeat/{token}[/start|/fail]).
PingKind = Literal["success", "start", "fail"]


def default_interval(plan: Plan) -> int:
    """A new monitor's interval when none is given: the plan's shortest, and at least a
    minute where the plan has no minimum (the console's form says the same)."""
    return max(plan.checkFrequencyMinutes * 60, 60)


class MonitorService(DomainService):
    monitors = uses(MonitorRepository)
    regions = uses(RegionRepository)
    projects = uses(ProjectRepository)
    limits = uses(PlanLimits)

    @staticmethod
    def _check_assertions(monitor: Monitor) -> None:
        if monitor.assertions and monitor.type != "http":
            raise ValidationFailed.on("assertions", "only http monitors have them")
        refused = validate_assertions([assertion_of(a) for a in monitor.assertions or []])
        if refused is not None:
            index, exc = refused
            raise ValidationFailed.on(f"assertions.{index}.{exc.field}", str(exc))

    def _check_heartbeat(self, monitor: Monitor) -> None:
        """Schedules are for heartbeats, and must occur (read as they will be stored)."""
        if monitor.type != "heartbeat":
            for field, value in (
                ("schedule", monitor.schedule),
                ("timezone", monitor.timezone),
                ("graceSeconds", monitor.grace_seconds),
            ):
                if value is not None:
                    raise ValidationFailed.on(field, "only heartbeat monitors have one")
            return
        try:
            if monitor.timezone is not None:
                zone_of(monitor.timezone)
            if monitor.schedule is not None:
                validate_schedule(
                    monitor.schedule, monitor.timezone or "UTC", self.runtime.clock.now()
                )
        except BadSchedule as exc:
            field = "timezone" if "time zone" in str(exc) else "schedule"
            raise ValidationFailed.on(field, str(exc)) from None

    async def _check_parents(
        self, monitor_id: str | None, project_id: str, parents: list[str]
    ) -> None:
        """Monitors of the same project, not itself, and no cycle (422 naming the path).
        The project's graph is read only when there are parents to check: creating a monitor
        in a project of thousands must not read them all."""
        if not parents:
            return
        graph = await self.monitors.dependencies_in(project_id)
        unknown = [p for p in parents if p not in graph or p == monitor_id]
        if unknown:
            raise ValidationFailed.on(
                "dependsOn", f"not other monitors of the project: {', '.join(unknown)}"
            )
        if monitor_id is not None:
            cycle = cycle_through(graph, monitor_id, parents)
            if cycle is not None:
                raise ValidationFailed.on(
                    "dependsOn", f"a monitor may not depend on itself: {' -> '.join(cycle)}"
                )

    async def _check_policy(self, body: MonitorFields, project_id: str) -> None:
        policy_id = body.escalationPolicyId
        if policy_id is not None and not await EscalationRepository(self.session).in_project(
            policy_id, project_id
        ):
            raise ValidationFailed.on(
                "escalationPolicyId", "no such escalation policy in the monitor's project"
            )

    @staticmethod
    def _check_type(monitor: Monitor) -> None:
        """The monitor's own fields, as stored, against its type's config model: bounds and
        rules a field shared with other types (``url``) does not say in the common schema."""
        kind = kind_of(monitor.type)
        settings = monitor.settings or {}
        values: dict[str, Any] = {}
        for name in kind.config.model_fields:
            value = (
                settings.get(name) if name in SETTING_FIELDS else getattr(monitor, to_snake(name))
            )
            if value is not None:
                values[name] = value
        try:
            kind.config.model_validate(values)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "type"
            raise ValidationFailed.on(where, str(error["msg"])) from None

    async def _check_fields(self, body: MonitorFields, schemes: tuple[str, ...]) -> None:
        """Targets and regions (422); the plan's frequency is the caller's to check after."""
        guard = self.runtime.guard
        for field, value in (("url", body.url), ("host", body.host)):
            if value is None:
                continue
            try:
                if field == "url":
                    guard.check_url(value, schemes)
                else:
                    check_host_name(value)
                    guard.check_literal(value)
            except TargetRefused as exc:
                raise ValidationFailed.on(field, f"refused target: {exc}") from exc
            except ValueError as exc:
                raise ValidationFailed.on(field, str(exc)) from exc
        if body.regionIds:
            known = {r.id for r in await self.regions.all()}
            unknown = [r for r in body.regionIds if r not in known]
            if unknown:
                raise ValidationFailed.on("regionIds", f"unknown regions: {', '.join(unknown)}")

    def _notify(self, monitor_id: str) -> None:
        after_commit(self.session, lambda: self.runtime.monitor_changes.changed(monitor_id))

    async def create(self, caller: User, body: NewMonitor) -> Monitor:
        # Two statements for access and the plan limit: the lock (which reads the plan), then
        # access with the owner's count, which must come after the lock: PostgreSQL sees a
        # concurrent create's commit only in a later statement.
        plan = await self.limits.lock_owner_of(body.projectId)
        _, count = await self.projects.get_visible_with(
            caller, body.projectId, self.monitors.count_of_owner()
        )
        within(plan, "monitorCount", count)
        interval = body.intervalSeconds or default_interval(plan)
        await self._check_fields(body, kind_of(body.type).url_schemes)
        frequency_within(plan, interval)
        await self._check_policy(body, body.projectId)
        parents = list(dict.fromkeys(body.dependsOn or []))
        await self._check_parents(None, body.projectId, parents)
        await require_free_key(self.session, Monitor, "monitor", body.projectId, body.key)
        timeout = body.timeoutSeconds or min(DEFAULT_TIMEOUT_SECONDS, interval / 2)
        if timeout >= interval:
            raise ValidationFailed.on("timeoutSeconds", "must be shorter than intervalSeconds")
        monitor = Monitor(
            **body.columns(exclude=SEPARATELY_CREATED),
            secret_headers=secrets.unique(body.secretHeaders or []),
            interval_seconds=interval,
            timeout_seconds=timeout,
            region_ids=list(dict.fromkeys(body.regionIds or [])),
            depends_on=parents,
            assertions=[a.stored() for a in body.assertions or []],
            status="pending" if body.isActive is not False else "paused",
            state={},
            heartbeat_token=new_opaque_token() if body.type == "heartbeat" else None,
        )
        await self._refresh_secret_refs(monitor, _secret_part(None), body, body.secretRefs or {})
        self._check_type(monitor)
        self._check_heartbeat(monitor)
        self._check_assertions(monitor)
        await self.monitors.add(monitor)
        self._notify(monitor.id)
        return monitor

    async def update(self, caller: User, monitor_id: str, body: MonitorUpdate) -> Monitor:
        monitor = await self.monitors.get_visible(caller, monitor_id)
        access = await self.projects.access(caller, monitor.project_id)
        assert access is not None
        kind = kind_of(monitor.type)
        await self._check_fields(body, kind.url_schemes)
        if body.intervalSeconds is not None:
            await self.limits.require_frequency(access.project.owner_id, body.intervalSeconds)
        await self._check_policy(body, monitor.project_id)
        if body.dependsOn is not None:
            parents = list(dict.fromkeys(body.dependsOn))
            await self._check_parents(monitor.id, monitor.project_id, parents)
            monitor.depends_on = parents
        secrets_before = _secret_part(monitor)
        marked_before = list(monitor.secret_headers or [])
        self._update_headers(monitor, body)
        if "key" in body.model_fields_set:
            await require_free_key(
                self.session, Monitor, "monitor", monitor.project_id, body.key, monitor.id
            )
            monitor.key = body.key
        # Fields null is refused for on every type are refused by the schema (Omittable);
        # what null is refused for depends on the type, so it is checked here.
        needed = kind.targets
        sent = body.model_dump(exclude_unset=True, exclude=SEPARATELY_UPDATED)
        target_before = (monitor.url, monitor.host, monitor.port)
        settings = dict(monitor.settings or {})
        kept_masked: str | None = None
        for field, value in sent.items():
            if value is None and field in needed:
                raise ValidationFailed.on(
                    field, f"may not be null: a {monitor.type} monitor checks its {field}"
                )
            if field in SETTING_FIELDS:
                if field not in kind.config.model_fields:
                    if value is None:
                        continue  # another type's field, sent back null as it was read
                    raise ValidationFailed.on(field, f"a {monitor.type} monitor has no {field}")
                if value is None:
                    settings.pop(field, None)
                    value = kind.defaults.get(field)
                elif field in kind.secrets and value != (
                    kept := secrets.kept_setting(value, settings.get(field))
                ):
                    value, kept_masked = kept, field
                if value is not None:
                    settings[field] = value
                continue
            if field == "url" and kind.url_password_secret:
                try:
                    value = secrets.kept_url_password(value, monitor.url)
                except secrets.SecretNotKept:
                    raise ValidationFailed.on(
                        "url", "give the password again when the URL points elsewhere"
                    ) from None
            setattr(monitor, to_snake(field), value)
        if kept_masked and (monitor.url, monitor.host, monitor.port) != target_before:
            raise ValidationFailed.on(
                kept_masked, "give the secret again when the monitor points elsewhere"
            )
        monitor.settings = settings
        await self._refresh_secret_refs(monitor, secrets_before, body, body.secretRefs)
        await self._record_secret_change(caller, monitor, secrets_before, marked_before)
        if body.regionIds is not None:
            monitor.region_ids = list(dict.fromkeys(body.regionIds))
        if monitor.timeout_seconds >= monitor.interval_seconds:
            raise ValidationFailed.on("timeoutSeconds", "must be shorter than intervalSeconds")
        if body.assertions is not None:
            monitor.assertions = [a.stored() for a in body.assertions]
        self._check_type(monitor)
        self._check_heartbeat(monitor)
        self._check_assertions(monitor)
        if body.isActive is not None and body.isActive != monitor.is_active:
            after_commit(
                self.session, partial(_log_pause, monitor, caller, monitor.status, body.isActive)
            )
            monitor.is_active = body.isActive
            # Pausing forgets nothing; resuming starts from pending with fresh region memory.
            monitor.status = "paused" if not body.isActive else "pending"
            if body.isActive:
                monitor.state = {"regions": {}, "incident": (monitor.state or {}).get("incident")}
        await self.session.flush()
        await self.session.refresh(monitor)
        self._notify(monitor.id)
        return monitor

    async def _refresh_secret_refs(
        self,
        monitor: Monitor,
        before: dict[str, Any],
        body: MonitorFields,
        names: dict[str, str] | None,
    ) -> None:
        """The secrets a config file names (headers, a type's secret settings, a database
        URL), with digests of their values now."""
        secret = secrets.secret_names(monitor.secret_headers or [])
        kind = kind_of(monitor.type)
        sent = {
            name: value
            for name, value in body.model_dump(exclude_unset=True).items()
            if value is not None and (name in ("headers", "url") or name in kind.secrets)
        }

        def is_secret(path: str) -> bool:
            if path.startswith("headers."):
                return path[8:].lower() in secret
            return path in kind.secrets or (path == "url" and kind.url_password_secret)

        write = SecretWrite(
            before=before,
            after=_secret_part(monitor),
            sent=sent,
            is_secret=is_secret,
        )
        monitor.secret_refs = await digested(
            self.runtime.passwords, write, names, monitor.secret_refs or {}
        )

    async def _record_secret_change(
        self, caller: User, monitor: Monitor, before: dict[str, Any], marked_before: list[str]
    ) -> None:
        """A ``monitor.secret_changed`` event naming the secret fields that changed (a header
        secret before or after, a type's secret setting, a connection URL's password)."""
        kind = kind_of(monitor.type)
        headers = secrets.secret_names([*marked_before, *(monitor.secret_headers or [])])
        after = _secret_part(monitor)
        if kind.url_password_secret:
            before = {**before, "url": secrets.url_password(before.get("url"))}
            after = {**after, "url": secrets.url_password(after.get("url"))}

        def is_secret(path: str) -> bool:
            if path.startswith("headers."):
                return path[8:].lower() in headers
            return path in kind.secrets or (path == "url" and kind.url_password_secret)

        changed = secrets_changed(before, after, is_secret)
        if changed:
            await record(
                self.session,
                kinds.MONITOR_SECRET_CHANGED,
                self.runtime.clock.now(),
                actor=caller,
                project_id=monitor.project_id,
                target_type="monitor",
                target_id=monitor.id,
                target_label=monitor.name,
                details={"fields": ",".join(changed)},
            )

    def _update_headers(self, monitor: Monitor, body: MonitorUpdate) -> None:
        """Headers and their secrecy; a masked secret sent back keeps the stored value."""
        stored = {str(k): str(v) for k, v in (monitor.headers or {}).items()}
        marked = list(monitor.secret_headers or [])
        new_url = body.url if "url" in body.model_fields_set else monitor.url
        headers = stored
        if body.headers is not None:
            try:
                headers = secrets.keep_secrets(body.headers, stored, marked, monitor.url, new_url)
            except secrets.SecretNotKept as exc:
                raise ValidationFailed.on(
                    f"headers.{exc.name}", "give the secret again when url points elsewhere"
                ) from exc
        else:
            carried = secrets.moved_with_secrets(stored, marked, monitor.url, new_url)
            if carried is not None:
                raise ValidationFailed.on(
                    "url", f"give the secret {carried} header again when url points elsewhere"
                )
        # A stored secret stays secret while its value is kept: unmarking alone reveals nothing.
        still_secret = [
            name
            for name, value in headers.items()
            if name.lower() in secrets.secret_names(marked)
            and name.lower() not in secrets.ALWAYS_SECRET
            and stored.get(name) == value
        ]
        wanted = body.secretHeaders if body.secretHeaders is not None else marked
        monitor.headers = headers
        monitor.secret_headers = secrets.unique([*wanted, *still_secret])

    async def delete(self, caller: User, monitor_id: str) -> None:
        monitor = await self.monitors.get_visible(caller, monitor_id)
        for child in await self.monitors.depending_on(monitor):
            child.depends_on = [p for p in child.depends_on if p != monitor.id]
            self._notify(child.id)
        await self.monitors.delete(monitor)
        self._notify(monitor_id)

    async def check_now(self, caller: User, monitor_id: str) -> CheckResult:
        monitor = await self.monitors.get_visible(caller, monitor_id)
        if not monitor.is_active:
            raise Conflict("the monitor is paused; resume it to check it")
        # The probe takes as long as the target does; the engine stores its result itself.
        await end_transaction(self.session)
        stored = await self.runtime.checks.check_now(monitor)
        if stored is None:
            raise NotFound("no such monitor")  # deleted while the check ran
        return stored

    async def stats(
        self, caller: User, monitor_id: str, period: str
    ) -> tuple[Monitor, statistics.Figures]:
        monitor = await self.monitors.get_visible(caller, monitor_id)
        now = self.runtime.clock.now()
        if period == "24h":
            rows = await self.monitors.recent_results([monitor.id], statistics.since_24h(now))
            return monitor, statistics.from_results(rows)
        first_day = statistics.first_day(period, now)
        days = await self.monitors.aggregates([monitor.id], first_day)
        buckets = await self.monitors.histogram_buckets([monitor.id], first_day)
        return monitor, statistics.from_aggregates(days, buckets)

    async def delete_region(self, admin: User, region_id: str) -> None:
        """Delete a region and take it out of every monitor (the built-in one stays: 409)."""
        region = await self.regions.get(region_id)
        if region is None:
            raise NotFound("no such region")
        if region.builtin:
            raise Conflict("the built-in region cannot be deleted")
        for monitor in await self.monitors.using_region(region.id):
            monitor.region_ids = [r for r in monitor.region_ids if r != region.id]
            self._notify(monitor.id)
        await self.regions.delete(region)
        await admin_region_event(self.session, self.runtime, admin, region, "delete_region")

    async def ping(self, token: str, now: datetime, report: PingKind = "success") -> None:
        """The job reports: it succeeded, it started, or it failed (``probes/heartbeat.py``)."""
        monitor = await self.monitors.by_heartbeat_token(token)
        if monitor is None:
            raise NotFound("no such heartbeat")
        if report == "start":
            monitor.last_start_at = now
        elif report == "fail":
            monitor.last_fail_at = now
        else:
            monitor.last_ping_at = now
        await self.session.flush()
        self._notify(monitor.id)
