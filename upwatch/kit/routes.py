"""How the API declares its routes: a router per resource, with its tag and the problems every
route of it may answer, and the status and extra problems of its create, update and delete
routes (contract §2)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, status
from fastapi.types import DecoratedCallable

from upwatch.kit.errors import problem_responses

# Any route a signed-in caller uses may answer a malformed or invalid request, a missing or bad
# token, too many requests and a fault.
SIGNED_IN = (400, 401, 422, 429, 500)
# Routes of rows the caller reaches by id add 404: an id it cannot see is one that is not there.
OF_RESOURCE = (400, 401, 404, 422, 429, 500)


class Routes(APIRouter):
    """A router whose routes share one tag and the problems each of them may answer."""

    def __init__(self, prefix: str, tag: str, problems: tuple[int, ...] = OF_RESOURCE) -> None:
        super().__init__(prefix=prefix, tags=[tag], responses=problem_responses(*problems))

    def creates(
        self, operation_id: str, *problems: int, path: str = ""
    ) -> Callable[[DecoratedCallable], DecoratedCallable]:
        """POST that makes a row: 201, and the problems it adds (402 over a plan's limit...)."""
        return self.post(
            path,
            status_code=status.HTTP_201_CREATED,
            operation_id=operation_id,
            responses=problem_responses(*problems),
        )

    def updates(
        self, operation_id: str, *problems: int, path: str = "/{id}"
    ) -> Callable[[DecoratedCallable], DecoratedCallable]:
        """PATCH of a row: fields left out stay as they are."""
        return self.patch(path, operation_id=operation_id, responses=problem_responses(*problems))

    def deletes(
        self, operation_id: str, *problems: int, path: str = "/{id}"
    ) -> Callable[[DecoratedCallable], DecoratedCallable]:
        """DELETE of a row, answered with its id."""
        return self.delete(path, operation_id=operation_id, responses=problem_responses(*problems))
