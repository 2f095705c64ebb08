"""The FastAPI exception handlers: every error a request meets answers as a problem document
(kit/errors.py), validation errors in words (kit/validation_words.py)."""

from __future__ import annotations

import logging

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from upwatch.kit.errors import (
    DATABASE_RETRY_AFTER_SECONDS,
    PROBLEM_MEDIA_TYPE,
    BadRequest,
    Conflict,
    DatabaseBusy,
    DatabaseUnavailable,
    Forbidden,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    ProblemError,
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
    ValidationFailed,
)
from upwatch.kit.validation_words import field_errors

log = logging.getLogger(__name__)


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
