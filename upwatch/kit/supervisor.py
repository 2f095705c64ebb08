"""Every background loop runs under a supervisor: nothing in the background dies silently.

A role is a long-running coroutine (the scheduler, a worker pool, the ingester, a sender...).
When it fails, the supervisor logs the failure with its stack, counts it in
``upwatch_role_restarts_total{role}`` and restarts that role alone after a back-off; the other
roles keep running. A streak of the same failure (the database is away) is logged in full once,
then one line per retry, and its end is logged too, so an outage reads as a story, not a flood.

Roles report progress with ``beat()``. Readiness asks ``stalled()``: a role that made no progress
for several times its expected period while it had work is reported, so a loop stuck on a lock
or a dead connection shows up in ``/readyz`` instead of hiding behind a live process.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from upwatch.kit.backoff import jittered_seconds
from upwatch.kit.errors import DatabaseUnavailable
from upwatch.kit.metrics import Metrics
from upwatch.kit.progress import current_role, progress, stop_if_cancelled

__all__ = ["Role", "Supervisor", "progress"]

log = logging.getLogger(__name__)


def _always_busy() -> bool:
    return True


@dataclass
class Role:
    """One supervised loop and what readiness knows of it."""

    name: str
    run: Callable[[], Awaitable[None]]
    # How often the role beats while it has work; readiness waits several of these.
    period_seconds: float
    # Whether the role has work now: an idle ingester with nothing pending is not stalled.
    busy: Callable[[], bool] = _always_busy
    last_beat: float = field(default_factory=time.monotonic)
    failures: int = 0
    restarts: int = 0
    last_error: str | None = None
    task: asyncio.Task[None] | None = None

    def beat(self) -> None:
        """Progress: call after real work succeeded (not merely on entering the loop), so a
        streak of failures ends in the log only when the role truly works again."""
        self.last_beat = time.monotonic()
        if self.failures:
            log.warning("role %s works again after %d failures", self.name, self.failures)
            self.failures = 0
            self.last_error = None


class Supervisor:
    def __init__(
        self,
        metrics: Metrics,
        first_backoff_seconds: float = 1.0,
        max_backoff_seconds: float = 30.0,
        stall_seconds: float = 60.0,
    ) -> None:
        self.metrics = metrics
        self.first_backoff = first_backoff_seconds
        self.max_backoff = max_backoff_seconds
        self.stall_seconds = stall_seconds
        self.roles: dict[str, Role] = {}
        self._watches: list[Callable[[], list[str]]] = []
        # upwatch_role_stalled{role} asks this supervisor at each scrape (the latest one made
        # for these metrics, when a process makes several in turn).
        metrics.role_stalls.source = self.role_states

    def start(
        self,
        name: str,
        run: Callable[[], Awaitable[None]],
        period_seconds: float,
        busy: Callable[[], bool] = _always_busy,
    ) -> Role:
        """Run ``run(role)`` under supervision from now on; it should beat while it works."""
        if name in self.roles:
            raise ValueError(f"role {name} is already supervised")
        role = Role(name=name, run=run, period_seconds=period_seconds, busy=busy)
        self.roles[name] = role
        self.metrics.role_restarts.labels(name).inc(0)  # the series exists before any failure
        role.task = asyncio.create_task(self._keep(role), name=name)
        return role

    async def _keep(self, role: Role) -> None:
        current_role.set(role)  # this task's context only: the role's own tasks inherit it
        while True:
            try:
                await role.run()
                error = "it returned"
                log.error("role %s stopped without an error; restarting it", role.name)
            except asyncio.CancelledError:
                raise
            except DatabaseUnavailable as exc:
                # The database logs its outage once itself; a stack per role would only
                # repeat it.
                error = f"database unavailable: {exc.reason}"
                if role.failures == 0:
                    log.warning("role %s waits for the database", role.name)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}".strip()
                if role.failures == 0:
                    log.exception("role %s failed; restarting it", role.name)
                else:
                    log.warning(
                        "role %s failed again (%d in a row): %s",
                        role.name,
                        role.failures + 1,
                        error,
                    )
            # A stop that a driver turned into an ordinary error is still a stop: restarting
            # here would swallow it, and the role would outlive its process's shutdown.
            stop_if_cancelled()
            role.failures += 1
            role.restarts += 1
            role.last_error = error
            self.metrics.role_restarts.labels(role.name).inc()
            delay = jittered_seconds(role.failures, self.first_backoff, self.max_backoff)
            await asyncio.sleep(delay)

    def watch(self, behind: Callable[[], list[str]]) -> None:
        """Add a readiness check: ``behind`` names what cannot keep up (empty when all can)."""
        self._watches.append(behind)

    def stalled(self) -> list[str]:
        """Roles that made no progress for several periods while they had work, and what the
        watches say cannot keep up, with why."""
        now = time.monotonic()
        reasons = [reason for behind in self._watches for reason in behind()]
        reasons += [
            reason for role in self.roles.values() if (reason := self._stall(role, now)) is not None
        ]
        return reasons

    def role_states(self) -> list[tuple[str, bool]]:
        """Each role, and whether it is stalled by the rule of ``stalled`` (for metrics)."""
        now = time.monotonic()
        return [(role.name, self._stall(role, now) is not None) for role in self.roles.values()]

    def _stall(self, role: Role, now: float) -> str | None:
        limit = max(self.stall_seconds, 3 * role.period_seconds)
        if role.task is not None and role.task.done():
            return f"role {role.name} is not running"
        if now - role.last_beat > limit and role.busy():
            return f"role {role.name} made no progress for {now - role.last_beat:.0f} s"
        return None

    @property
    def tasks(self) -> list[asyncio.Task[None]]:
        return [role.task for role in self.roles.values() if role.task is not None]
