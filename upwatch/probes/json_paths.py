"""JSONPath for assertions: parsed once per path, evaluated lazily within a step budget.

jsonpath-ng parses well but evaluates eagerly and without a bound: it builds every match of
every step, with its whole path, before the first is read, so ``$..*..*..*`` on a 601-byte
body took 22 s of a probe worker's loop. Here the parsed tree is walked as generators that
stop at the first value an assertion reads, and every value visited spends one step of a
budget the whole check shares; a path that would visit more fails its check, naming itself.
The semantics (and the order of values) are jsonpath-ng's, for the parts of its grammar
taken here.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any, Final

from jsonpath_ng.jsonpath import (
    Child,
    Descendants,
    Fields,
    Index,
    JSONPath,
    Root,
    Slice,
    This,
    Wildcard,
    _Union,
)
from jsonpath_ng.parser import parse as parse_jsonpath

# Values one check may visit (and names or indexes it may try) across its JSONPaths: every
# value of a large body a few times over, 70-170 ms of the judging process's time at most.
STEPS: Final = 100_000
# A recursive descent visits the whole body; two in one path visit it once per value.
MOST_DESCENTS: Final = 1
_TAKEN: Final = (Root, This, Child, Descendants, Fields, Wildcard, Index, Slice, _Union)


class BadPath(ValueError):
    """Why a JSONPath cannot be used, in words for the person who wrote it."""


class OverBudget(Exception):
    """A path visited more values than the check's budget allows."""


class Budget:
    """The steps a check's paths may still take."""

    __slots__ = ("left",)

    def __init__(self, steps: int = STEPS) -> None:
        self.left = steps

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise OverBudget


@lru_cache(maxsize=4096)
def compiled(path: str) -> JSONPath:
    """The parsed path (once per distinct path, not once per check), or ``BadPath``."""
    try:
        tree = parse_jsonpath(path)
    except Exception as exc:  # the parser raises its own types and plain ones
        raise BadPath(f"not a JSONPath: {exc}") from None
    descents = 0
    pending: list[JSONPath] = [tree]
    while pending:
        node = pending.pop()
        if not isinstance(node, _TAKEN):
            raise BadPath(f"{node} is not supported in assertions (filters, parents and & aren't)")
        if isinstance(node, Descendants):
            descents += 1
        if isinstance(node, Child | Descendants | _Union):
            pending += [node.left, node.right]
    if descents > MOST_DESCENTS:
        raise BadPath("at most one recursive descent (..) per path: each visits the whole body")
    return tree


def first(path: str, document: Any, budget: Budget) -> tuple[bool, Any]:
    """``(True, value)`` for the first value ``path`` selects in ``document``, else
    ``(False, None)``. Raises ``OverBudget`` when the budget runs out first."""
    for value in _select(compiled(path), document, document, budget):
        return True, value
    return False, None


def _select(node: JSONPath, value: Any, root: Any, budget: Budget) -> Iterator[Any]:
    budget.spend()
    if isinstance(node, Root):
        yield root
    elif isinstance(node, This):
        yield value
    elif isinstance(node, Child):
        for left in _select(node.left, value, root, budget):
            yield from _select(node.right, left, root, budget)
    elif isinstance(node, Descendants):
        for left in _select(node.left, value, root, budget):
            yield from _descend(node.right, left, root, budget)
    elif isinstance(node, _Union):
        yield from _select(node.left, value, root, budget)
        yield from _select(node.right, value, root, budget)
    elif isinstance(node, Fields):
        if isinstance(value, dict):
            for name in node.fields:  # each name looked up is a step: $..['q','q',...]
                budget.spend()
                if name in value:
                    yield value[name]
    elif isinstance(node, Wildcard):
        yield from _children(value, budget)
    elif isinstance(node, Index):
        if isinstance(value, list) and value:
            for i in node.indices:
                budget.spend()
                if -len(value) <= i < len(value):
                    yield value[i]
    elif isinstance(node, Slice):
        if isinstance(value, list) and node.step != 0:
            yield from (value[i] for i in range(len(value))[node.start : node.end : node.step])
    else:  # pragma: no cover - compiled() refuses every other node
        raise BadPath(f"{node} is not supported in assertions")


def _children(value: Any, budget: Budget) -> Iterator[Any]:
    if isinstance(value, list):
        items: Iterator[Any] = iter(value)
    elif isinstance(value, dict):
        items = iter(value.values())
    else:
        return
    for item in items:
        budget.spend()
        yield item


def _descend(node: JSONPath, value: Any, root: Any, budget: Budget) -> Iterator[Any]:
    """``node`` applied to ``value`` and each value under it, in pre-order, as jsonpath-ng
    orders ``..``; a stack, not recursion, so a deep body cannot overflow it."""
    stack = [value]
    while stack:
        current = stack.pop()
        yield from _select(node, current, root, budget)
        children = list(_children(current, budget))
        children.reverse()
        stack += children
