"""What an import did with each object of the source: mapped, mapped approximately (how), or
skipped (why), and the environment variables its secrets now come from.

The printed form is stable (tests and people compare it): the objects grouped by outcome, each
group in the source's order, one line per object, then the variables to set and a summary.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final, Literal

Outcome = Literal["mapped", "approximate", "skipped"]
OUTCOMES: Final[tuple[Outcome, ...]] = ("mapped", "approximate", "skipped")


@dataclass
class Item:
    """One object of the source, and what became of it."""

    kind: str  # in the source's words: "monitor", "alert contact", "endpoint"
    name: str
    target: str | None = None  # where it went: "monitor website"
    notes: list[str] = field(default_factory=list)  # how it was approximated
    skip_reason: str | None = None
    secrets: list[str] = field(default_factory=list)  # environment variables' names

    def approximate(self, how: str) -> None:
        """Something of it was carried over differently (or left out): ``how`` says what."""
        if how not in self.notes:
            self.notes.append(how)

    def skip(self, why: str) -> None:
        self.skip_reason = why
        self.target = None

    @property
    def outcome(self) -> Outcome:
        if self.skip_reason is not None:
            return "skipped"
        return "approximate" if self.notes else "mapped"

    def line(self) -> str:
        text = f"  {self.kind} {self.name!r}"
        if self.target is not None:
            text += f" -> {self.target}"
        if self.skip_reason is not None:
            return f"{text}: {self.skip_reason}"
        if self.notes:
            text += ": " + "; ".join(self.notes)
        return text


@dataclass
class Report:
    """Every object of the source, in the source's order."""

    source: str  # the source's label: "UptimeRobot"
    items: list[Item] = field(default_factory=list)

    def item(self, kind: str, name: str) -> Item:
        made = Item(kind, name)
        self.items.append(made)
        return made

    def by_outcome(self, outcome: Outcome) -> list[Item]:
        return [item for item in self.items if item.outcome == outcome]

    @property
    def secrets(self) -> list[tuple[str, Item]]:
        """The variables the file names (a skipped object's are not in it)."""
        return [
            (name, item)
            for item in self.items
            if item.outcome != "skipped"
            for name in item.secrets
        ]

    def lines(self) -> Iterator[str]:
        for outcome in OUTCOMES:
            items = self.by_outcome(outcome)
            if items:
                yield f"{outcome} ({len(items)}):"
                yield from (item.line() for item in items)
        secrets = self.secrets
        if secrets:
            yield f"secrets ({len(secrets)}): set these environment variables before applying:"
            yield from (f"  {name} ({item.kind} {item.name!r})" for name, item in secrets)
        counts = ", ".join(f"{len(self.by_outcome(o))} {o}" for o in OUTCOMES)
        yield f"Imported from {self.source}: {counts}; {len(secrets)} secret(s) to set."

    def text(self) -> str:
        return "\n".join(self.lines()) + "\n"
