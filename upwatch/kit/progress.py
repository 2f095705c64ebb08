"""How a loop tells its supervisor it made progress, without importing the supervisor.

Kept apart from ``kit/supervisor.py`` so code that also runs unsupervised (a worker process's
check loop) reports progress without loading what the supervisor needs (the error types of
the web layer, the metrics registry).
"""

from __future__ import annotations

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
