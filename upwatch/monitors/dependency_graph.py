"""Monitor dependencies as a pure rule: a monitor names the monitors it depends on (its
parents), and the graph may have no cycle. What a parent's outage means for a child's
incident is the incidents domain's (``incidents/rules.py``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping


def cycle_through(
    parents: Mapping[str, Collection[str]], monitor_id: str, new_parents: Collection[str]
) -> list[str] | None:
    """A path from ``monitor_id`` back to itself if it depended on ``new_parents`` (the other
    monitors keep their ``parents``), or None when the graph stays acyclic."""
    graph = {**{m: list(p) for m, p in parents.items()}, monitor_id: list(new_parents)}
    # Depth first with an explicit stack (a chain of thousands of monitors must not recurse).
    came_from: dict[str, str] = {}
    stack = [monitor_id]
    while stack:
        node = stack.pop()
        for parent in graph.get(node, ()):
            if parent == monitor_id:
                path = [node]
                while path[-1] != monitor_id:
                    path.append(came_from[path[-1]])
                return [*reversed(path), monitor_id]
            if parent not in came_from:
                came_from[parent] = node
                stack.append(parent)
    return None
