"""How lists are queried: ``limit``/``offset`` with the ``X-Total-Count`` header (contract §2),
and the id filters that narrow a list."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query, Response

from upwatch.kit.inputs import worded


@dataclass(frozen=True)
class Page:
    limit: int
    offset: int
    response: Response

    def total(self, count: int) -> None:
        self.response.headers["X-Total-Count"] = str(count)


def _page(
    response: Response,
    limit: Annotated[int, Query(ge=1, le=1000, description="Items per page")] = 100,
    offset: Annotated[int, Query(ge=0, le=2**31, description="Items to skip")] = 0,
) -> Page:
    return Page(limit=limit, offset=offset, response=response)


PageParams = Annotated[Page, Depends(_page)]


# Ids are uuid4 hex (kit/db.new_id). A list narrowed to an id that cannot exist answers 422
# with the rule, not an empty list that looks like "nothing there".
ID_PATTERN = worded("^[0-9a-f]{32}$", "an id: 32 hexadecimal characters")
IdFilter = Annotated[
    str | None,
    Query(
        max_length=32,
        pattern=ID_PATTERN,
        description="Only rows of this id. An id the caller cannot see gives an empty list, as "
        "every list of project rows does.",
    ),
]
