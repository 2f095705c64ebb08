"""What a supervised loop calls: progress for its supervisor, and a check that it was told to
stop, without importing the supervisor.

Kept apart from ``kit/supervisor.py`` so code that also runs unsupervised (a worker process's
check loop) reports progress without loading what the supervisor needs (the error types of
the web layer, the metrics registry).
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Protocol


class Beating(Protocol):
    def beat(self) -> None: ...


# Set by the supervisor in each role's task; the role's own tasks inherit it.
current_role: contextvars.ContextVar[Beating | None] = contextvars.ContextVar("role", default=None)


def progress() -> None:
    """The calling role made progress (no-op outside a supervised role). Loops call this
    instead of carrying a callback, so the same loop runs supervised or on its own."""
    role = current_role.get()
    if role is not None:
        role.beat()


def stop_if_cancelled() -> None:
    """Re-raise a pending cancellation that a library turned into an ordinary error (network
    and database drivers do), so a loop that catches errors still stops when told to."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
