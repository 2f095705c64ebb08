"""One error model for every path: RFC 9457 problem documents (contract §3)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
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

from upwatch.kit.inputs import ISO_INSTANT_EXPECTED, PATTERN_WORDS

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
        return cls.listing([FieldError(field=field, message=message)])

    @classmethod
    def listing(cls, errors: list[FieldError]) -> ValidationFailed:
        """The detail repeats every error, so a client that shows only it misses none."""
        return cls("; ".join(f"{e.field}: {e.message}" for e in errors), errors=errors)


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

    def __init__(
        self, reason: str, detail: str = "the database is unreachable; try again in a few seconds"
    ) -> None:
        super().__init__(detail)
        # For the log only: driver text may name hosts and paths, which callers need not see.
        self.reason = reason


class DatabaseBusy(DatabaseUnavailable):
    """Concurrent writes kept this transaction from running now: SQLite's write lock (taken
    past the busy timeout, or by a writer that committed after this transaction read),
    PostgreSQL's serialization failure or deadlock. The database is there and answering, so
    this is no outage (nothing is logged, readiness is untouched). The request boundary runs
    the request again a few times (``RETRYABLE``) before it answers 503."""

    default_headers = MappingProxyType({"Retry-After": "1"})

    def __init__(self, reason: str) -> None:
        super().__init__(reason, "the database is busy with other writes; try again in a moment")


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


# --- Validation errors in words ------------------------------------------------------------
#
# Pydantic's messages are written for Python programmers ("Input should be a valid integer",
# "String should match pattern '^https?://...'") and its error paths carry its own schema
# labels. Every validation error a client sees passes through ``field_errors``: the field as
# the client sent it and what is allowed, in words.

# Segments pydantic adds to an error path for the branch of a union it tried
# (``function-after[check(), str]``, ``list[str]``); no field a client sends looks like that.
_SCHEMA_LABEL = re.compile(r"^[a-z][a-z-]*\[.*\]$", re.DOTALL)
# Where the name, not the value, of a dict entry was wrong.
_KEY = "[key]"


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _one_of(expected: str) -> str:
    """pydantic's "'a', 'b' or 'c'" as "one of a, b, c"."""
    choices = [part.strip("'") for part in re.split(r", | or ", expected)]
    return f"one of {', '.join(choices)}" if len(choices) > 1 else f"must be {choices[0]}"


def _count(ctx: dict[str, Any], bound: str) -> str:
    noun = "entries" if ctx.get("field_type") == "Dictionary" else "items"
    return f"{_number(ctx[bound])} {noun}"


def _characters(n: Any) -> str:
    return f"{n} character" if n == 1 else f"{n} characters"


_WORDS: dict[str, Callable[[dict[str, Any]], str]] = {
    "missing": lambda _: "required",
    "extra_forbidden": lambda _: "unknown field",
    "string_type": lambda _: "must be text",
    "string_too_short": lambda c: (
        "may not be empty" if c["min_length"] == 1 else f"at least {_characters(c['min_length'])}"
    ),
    "string_too_long": lambda c: f"at most {_characters(c['max_length'])}",
    "string_pattern_mismatch": lambda c: PATTERN_WORDS.get(
        str(c["pattern"]), "not in the expected form"
    ),
    "too_short": lambda c: f"at least {_count(c, 'min_length')}",
    "too_long": lambda c: f"at most {_count(c, 'max_length')}",
    "greater_than": lambda c: f"more than {_number(c['gt'])}",
    "greater_than_equal": lambda c: f"at least {_number(c['ge'])}",
    "less_than": lambda c: f"less than {_number(c['lt'])}",
    "less_than_equal": lambda c: f"at most {_number(c['le'])}",
    "multiple_of": lambda c: f"a multiple of {_number(c['multiple_of'])}",
    "literal_error": lambda c: _one_of(str(c["expected"])),
    "enum": lambda c: _one_of(str(c["expected"])),
    "bool_type": lambda _: "must be true or false",
    "bool_parsing": lambda _: "must be true or false",
    "int_type": lambda _: "must be a whole number",
    "int_parsing": lambda _: "must be a whole number",
    "int_from_float": lambda _: "must be a whole number",
    "int_parsing_size": lambda _: "too large",
    "float_type": lambda _: "must be a number",
    "float_parsing": lambda _: "must be a number",
    "finite_number": lambda _: "must be a finite number",
    "list_type": lambda _: "must be a list",
    "dict_type": lambda _: "must be an object",
    "model_type": lambda _: "must be an object",
    "model_attributes_type": lambda _: "must be an object",
    "datetime_type": lambda _: ISO_INSTANT_EXPECTED,
    "datetime_parsing": lambda _: ISO_INSTANT_EXPECTED,
    "datetime_from_date_parsing": lambda _: ISO_INSTANT_EXPECTED,
    "timezone_aware": lambda _: "needs its UTC offset, e.g. 2026-11-22T06:00:00Z",
    "union_tag_invalid": lambda c: _one_of(str(c["expected_tags"])),
    "union_tag_not_found": lambda _: "required",
}


def _message(error: Any) -> str:
    words = _WORDS.get(error["type"])
    if words is not None:
        return words(error.get("ctx") or {})
    message = str(error.get("msg") or "invalid value")
    # Messages of our own validators arrive with pydantic's prefixes.
    return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def _path(error: Any) -> tuple[Any, ...]:
    loc = tuple(error.get("loc", ()))
    if error["type"] == "union_tag_not_found":  # pydantic's own, where TagInWords is not used
        loc = (*loc, str(error["ctx"]["discriminator"]).strip("'"))
    return tuple(part for part in loc if not (isinstance(part, str) and _SCHEMA_LABEL.match(part)))


def described(error: Any) -> tuple[tuple[Any, ...], str]:
    """One of pydantic's errors as the client reads it: the field's path as sent, and what is
    allowed, in words (the config file's errors use it too)."""
    return _path(error), _message(error)


def field_errors(errors: Iterable[Any], within: tuple[str, ...] = ()) -> list[FieldError]:
    """Pydantic's ``errors()`` as the client reads them: each field named as sent (dotted,
    camelCase, list indexes as numbers; ``within`` in front when the model was a part of the
    body) and what is allowed, in words. An entry whose name was refused says ``key: ...``."""
    result: list[FieldError] = []
    for error in errors:
        path = [*within, *_path(error)]
        message = _message(error)
        if path[-1:] == [_KEY]:
            path, message = path[:-1], f"key: {message}"
        item = FieldError(field=".".join(str(p) for p in path) or "body", message=message)
        if item not in result:  # the branches of a union may say the same twice
            result.append(item)
    return result


def _validation_problem(exc: RequestValidationError) -> ProblemError:
    errors = exc.errors()
    for err in errors:
        loc = tuple(err.get("loc", ()))
        # Unparseable JSON, or a body that is not the object the operation needs, is a 400.
        if err.get("type") == "json_invalid":
            return BadRequest("the request body is not valid JSON")
        if loc == ("body",) and err.get("type") in {"model_attributes_type", "dict_type"}:
            return BadRequest("the request body must be a JSON object")
    # A body field is named as the client sent it; a query, path or header parameter keeps
    # its place in front ("query.limit").
    return ValidationFailed.listing(
        field_errors(
            {**e, "loc": tuple(e["loc"])[1:]} if e["loc"][:1] == ("body",) else e for e in errors
        )
    )


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


# Set in a request's scope state when its answer is a DatabaseBusy 503: kit/boundary.py
# then runs the request again instead of sending that answer.
RETRYABLE = "upwatch_retryable"


def install_error_handlers(app: FastAPI) -> None:
    async def on_problem(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ProblemError)
        if isinstance(exc, DatabaseBusy):
            request.scope.setdefault("state", {})[RETRYABLE] = True
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
        elif isinstance(exc.__cause__, RecursionError):
            # FastAPI's 400 for a body Python's JSON parser could not read: nested too deep.
            error = cls("the request body nests too deeply to be read")
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


def install_redis_handlers(app: FastAPI) -> None:
    """503, not 500, while Redis (shared throttles and counts) is away: the request is fine,
    the service is not ready for it. Installed only where Redis is configured, so a process
    without it never imports the client."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    async def on_shared_unavailable(_request: Request, exc: Exception) -> JSONResponse:
        log.warning("Redis is unreachable: %s", exc)
        return problem_response(
            ServiceUnavailable(
                "a shared service is unreachable; try again in a few seconds",
                headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
            )
        )

    app.add_exception_handler(RedisConnectionError, on_shared_unavailable)
    app.add_exception_handler(RedisTimeoutError, on_shared_unavailable)


_DESCRIPTIONS = {
    400: "Body is not JSON, or not an object",
    401: "Missing, malformed, expired or revoked token",
    402: "A plan limit would be exceeded",
    403: "Authenticated but not allowed",
    404: "Unknown id, or not visible to the caller",
    409: "Conflicts with an existing resource",
    413: "Request body too large",
    422: "Validation failed: `errors` names each field as sent (unknown fields included, "
    "with the closest known field as a suggestion) and says what is allowed",
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
