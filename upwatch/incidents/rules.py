"""Pure rules of automatic incidents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from upwatch.kit.languages import N_

# The first entry of a timeline opened without a description: stored in English, shown in the
# reader's language (the console's incident page, the public page).
OPENED: Final = N_("Incident opened.")


def down_parent(parents: Sequence[tuple[str, str]]) -> str | None:
    """The first parent (id, status) that is down: while a parent is down a child's failure is
    the parent's outage, not an incident of its own, and alerts no one."""
    return next((parent_id for parent_id, status in parents if status == "down"), None)
