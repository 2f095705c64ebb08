"""One error model for every path: RFC 9457 problem documents (contract §3)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from sqlalchemy.exc import IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

log = logging.getLogger(__name__)

PROBLEM_BASE = "https://upwatch.dev/problems/"
PROBLEM_MEDIA_TYPE = "application/problem+json"


class FieldError(BaseModel):
    field: str
    message: str


class Problem(BaseModel):
    """An RFC 9457 problem document."""

    type: str = Field(examples=[PROBLEM_BASE + "validation"])
    title: str
    status: int
    detail: str | None = None
    errors: list[FieldError] | None = None


class ProblemError(Exception):
    status = 500
    slug = "internal"
    title = "Internal server error"
    default_headers: ClassVar[Mapping[str, str]] = MappingProxyType({})
    keep_changes = False

    def __init__(
        self,
        detail: str | None = None,
        *,
        errors: list[FieldError] | None = None,
        headers: dict[str, str] | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail or self.title)
        self.detail = detail
        self.errors = errors
        self.extensions = extensions or {}
        self.headers: dict[str, str] = {**self.default_headers, **(headers or {})}

    def document(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": PROBLEM_BASE + self.slug,
            "title": self.title,
            "status": self.status,
        }
        if self.detail:
            body["detail"] = self.detail
        if self.errors is not None:
            body["errors"] = [e.model_dump() for e in self.errors]
        return {**self.extensions, **body}


class BadRequest(ProblemError):
    status, slug, title = 400, "bad-request", "Bad request"


class Unauthorized(ProblemError):
    status, slug, title = 401, "unauthorized", "Authentication required"
    default_headers = MappingProxyType({"WWW-Authenticate": "Bearer"})


class Forbidden(ProblemError):
    status, slug, title = 403, "forbidden", "Forbidden"


class NotFound(ProblemError):
    status, slug, title = 404, "not-found", "Not found"


class MethodNotAllowed(ProblemError):
    status, slug, title = 405, "method-not-allowed", "Method not allowed"


class Conflict(ProblemError):
    status, slug, title = 409, "conflict", "Conflict"


class PayloadTooLarge(ProblemError):
    status, slug, title = 413, "payload-too-large", "Request body too large"


class PlanLimitExceeded(ProblemError):
    status, slug, title = 402, "plan-limit", "Plan limit reached"


class ValidationFailed(ProblemError):
    status, slug, title = 422, "validation", "Validation failed"

    @classmethod
    def on(cls, field: str, message: str) -> ValidationFailed:
        return cls(f"{field}: {message}", errors=[FieldError(field=field, message=message)])


class TooManyRequests(ProblemError):
    status, slug, title = 429, "rate-limited", "Too many requests"

    def __init__(
        self, detail: str | None = None, *, retry_after: int, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(
            detail, headers={**(headers or {}), "Retry-After": str(max(1, retry_after))}
        )


class ServiceUnavailable(ProblemError):
    status, slug, title = 503, "unavailable", "Service unavailable"


# Long enough for a database restart or failover to finish, short enough not to strand clients.
DATABASE_RETRY_AFTER_SECONDS = 5


class DatabaseUnavailable(ServiceUnavailable):
    """The database cannot be used right now (down, restarting, unopenable, locked): any
    operation answers 503 with Retry-After, and the client may simply try again."""

    default_headers = MappingProxyType({"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)})

    def __init__(self, reason: str) -> None:
        super().__init__("the database is unreachable; try again in a few seconds")
        # For the log only: driver text may name hosts and paths, which callers need not see.
        self.reason = reason


def problem_response(error: ProblemError) -> JSONResponse:
    return JSONResponse(
        error.document(),
        status_code=error.status,
        headers=error.headers or None,
        media_type=PROBLEM_MEDIA_TYPE,
    )


_BY_STATUS: dict[int, type[ProblemError]] = {
    cls.status: cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        Conflict,
        PayloadTooLarge,
        TooManyRequests,
        ServiceUnavailable,
    )
}


def _field_name(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body",)]
    return ".".join(parts) or "body"


def _validation_problem(exc: RequestValidationError) -> ProblemError:
    errors = exc.errors()
    for err in errors:
        loc = tuple(err.get("loc", ()))
        # Unparseable JSON, or a body that is not the object the operation needs, is a 400.
        if err.get("type") == "json_invalid":
            return BadRequest("the request body is not valid JSON")
        if loc == ("body",) and err.get("type") in {"model_attributes_type", "dict_type"}:
            return BadRequest("the request body must be a JSON object")
    items = [
        FieldError(field=_field_name(tuple(e.get("loc", ()))), message=plain_message(e))
        for e in errors
    ]
    detail = "; ".join(f"{i.field}: {i.message}" for i in items)
    return ValidationFailed(detail, errors=items)


def plain_message(err: Any) -> str:
    """One pydantic error in the words the API answers with."""
    message = str(err.get("msg", "invalid value"))
    # Pydantic prefixes messages raised from validators with "Value error, ".
    return message.removeprefix("Value error, ")


def _allowed_methods(request: Request) -> str:
    """Every method any route serves on this path (Starlette names only the first route's)."""
    methods: set[str] = set()
    for route in request.app.routes:
        regex = getattr(route, "path_regex", None)
        if regex is not None and regex.match(request.url.path):
            methods |= set(getattr(route, "methods", None) or ())
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods))


def install_error_handlers(app: FastAPI) -> None:
    async def on_problem(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ProblemError)
        return problem_response(exc)

    async def on_validation(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return problem_response(_validation_problem(exc))

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        cls = _BY_STATUS.get(exc.status_code)
        if cls is None:
            error = ProblemError(str(exc.detail))
            error.status = exc.status_code
            error.slug = "http-" + str(exc.status_code)
            error.title = str(exc.detail)
        else:
            detail = None if exc.detail in (cls.title, None) else str(exc.detail)
            error = cls(detail)
        error.headers.update(exc.headers or {})
        if exc.status_code == 405:
            error.headers["Allow"] = _allowed_methods(request)
        return problem_response(error)

    async def on_integrity(request: Request, exc: Exception) -> JSONResponse:
        # A uniqueness race lost between our check and the insert is still a conflict;
        # any other integrity error is a bug and answers 500.
        text = str(getattr(exc, "orig", exc)).lower()
        if "unique" in text or "duplicate" in text:
            log.info("uniqueness race mapped to 409: %s", text)
            return problem_response(Conflict("the resource conflicts with an existing one"))
        return await on_unexpected(request, exc)

    async def on_pool_timeout(_request: Request, exc: Exception) -> JSONResponse:
        # Every pooled connection stayed busy (or stuck connecting) past the pool's timeout:
        # the database is not serving this request, which is not a bug of the request.
        log.warning("no database connection became free in time: %s", exc)
        return problem_response(DatabaseUnavailable(str(exc)))

    async def on_unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return problem_response(ProblemError())

    app.add_exception_handler(ProblemError, on_problem)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(IntegrityError, on_integrity)
    app.add_exception_handler(PoolTimeout, on_pool_timeout)
    app.add_exception_handler(Exception, on_unexpected)


_DESCRIPTIONS = {
    400: "Body is not JSON, or not an object",
    401: "Missing, malformed, expired or revoked token",
    402: "A plan limit would be exceeded",
    403: "Authenticated but not allowed",
    404: "Unknown id, or not visible to the caller",
    409: "Conflicts with an existing resource",
    413: "Request body too large",
    422: "Validation failed",
    429: "Rate limited; see Retry-After",
    500: "Unexpected error",
    503: "Temporarily unavailable (e.g. the database is unreachable); see Retry-After",
}


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the problem documents an operation may answer with."""
    return {
        status: {
            "description": _DESCRIPTIONS[status],
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status in statuses
    }
