"""Everything the app builds once in its lifespan and hands to requests.

Only kit pieces and the ports of ``upwatch.ports``: a request never reaches the engine or a
sender object itself, so an API process can run with no engine at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from upwatch.config import Settings
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database
from upwatch.kit.metrics import Metrics
from upwatch.kit.net import NetworkGuard
from upwatch.kit.plans import Plan, PlanCatalog
from upwatch.kit.security import AccessTokens, Passwords
from upwatch.kit.supervisor import Supervisor
from upwatch.kit.throttle import RedisWindow, SlidingWindow, Window
from upwatch.mail.sender import Mailer
from upwatch.ports import (
    AlertSending,
    ApiMeter,
    CheckRunner,
    IncidentFollowers,
    MonitorChanges,
    StatusPageChanges,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis


@dataclass
class Throttles:
    login_account: Window
    login_address: Window
    password_mail: Window
    password_mail_address: Window
    contact_address: Window
    provider_test: Window
    subscribe_client: Window
    subscribe_address: Window
    # Wrong status page passwords, per client address (statuspages/access.py).
    page_password: Window

    @classmethod
    def from_settings(
        cls, settings: Settings, clock: Clock, redis: Redis | None = None
    ) -> Throttles:
        """In memory, or in Redis (shared by every API process) when ``redis`` is given."""

        def window(name: str, limit: int, seconds: float) -> Window:
            if redis is None:
                return SlidingWindow(limit, seconds, clock)
            return RedisWindow(redis, name, limit, seconds, clock, settings.broker_prefix)

        login = (settings.login_failures_allowed, settings.login_window_seconds)
        contact = (settings.contact_submissions_allowed, settings.contact_window_seconds)
        return cls(
            login_account=window("login-account", *login),
            login_address=window("login-address", *login),
            password_mail=window("password-mail", 5, 15 * 60),
            password_mail_address=window("password-mail-address", 20, 15 * 60),
            contact_address=window("contact-address", *contact),
            # Test messages go to addresses users type in: bound what one account can send.
            provider_test=window("provider-test", 20, 10 * 60),
            subscribe_client=window(
                "subscribe-client",
                settings.subscribe_requests_allowed,
                settings.subscribe_window_seconds,
            ),
            # Confirmation e-mails to one address for one page: three an hour.
            subscribe_address=window("subscribe-address", 3, 60 * 60),
            page_password=window("page-password", *login),
        )


class PlanCache:
    """Each account's plan for a minute, so metering costs no query per request. Plan
    changes in this process forget the entry at once; elsewhere it ages out."""

    ttl_seconds = 60.0

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._plans: dict[str, tuple[Plan, float]] = {}

    def get(self, user_id: str) -> Plan | None:
        entry = self._plans.get(user_id)
        if entry is None or entry[1] < self.clock.now().timestamp():
            return None
        return entry[0]

    def put(self, user_id: str, plan: Plan) -> None:
        if len(self._plans) > 100_000:
            self._plans.clear()
        self._plans[user_id] = (plan, self.clock.now().timestamp() + self.ttl_seconds)

    def forget(self, user_id: str) -> None:
        self._plans.pop(user_id, None)


@dataclass
class Runtime:
    settings: Settings
    clock: Clock
    db: Database
    metrics: Metrics
    passwords: Passwords
    tokens: AccessTokens
    mailer: Mailer
    throttles: Throttles
    catalog: PlanCatalog
    meter: ApiMeter
    plan_cache: PlanCache
    # The one guard for every user-supplied address: probes, webhooks, chat hooks.
    guard: NetworkGuard
    supervisor: Supervisor
    monitor_changes: MonitorChanges
    checks: CheckRunner
    alerts: AlertSending
    status_pages: StatusPageChanges
    # Status-page subscribers, told of each incident change in the request's transaction.
    incident_followers: IncidentFollowers


def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


class DomainService:
    """What every domain service is: built for one request from its session and the
    process's runtime. What it works with it names as class attributes (``uses``)."""

    def __init__(self, session: AsyncSession, runtime: Runtime) -> None:
        self.session = session
        self.runtime = runtime


_Part = TypeVar("_Part")


class uses(Generic[_Part]):  # noqa: N801  (read as a declaration: ``users = uses(UserRepository)``)
    """A repository (built from the session) or another ``DomainService`` (from the session
    and the runtime) that a service works with, built on first use and kept for the request."""

    def __init__(self, part: type[_Part]) -> None:
        self.part = part
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, service: None, owner: type) -> uses[_Part]: ...
    @overload
    def __get__(self, service: DomainService, owner: type) -> _Part: ...
    def __get__(self, service: DomainService | None, owner: type) -> Any:
        if service is None:
            return self
        make: Any = self.part
        made = (
            make(service.session, service.runtime)
            if issubclass(self.part, DomainService)
            else make(service.session)
        )
        service.__dict__[self.name] = made  # later reads find it without this descriptor
        return made
