"""One error model for every path: RFC 9457 problem documents (contract §3), one type per
kind of problem, and how the OpenAPI document describes them. The FastAPI handlers that answer
with them live in kit/error_handlers.py, validation errors in words in kit/validation_words.py
(``FieldError``, ``field_errors`` and ``described`` are imported here too, where their many
callers have always found them)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from upwatch.kit.validation_words import FieldError, described, field_errors

__all__ = [
    "DATABASE_RETRY_AFTER_SECONDS",
    "PROBLEM_BASE",
    "PROBLEM_MEDIA_TYPE",
    "BadRequest",
    "Conflict",
    "DatabaseBusy",
    "DatabaseUnavailable",
    "FieldError",
    "Forbidden",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "PlanLimitExceeded",
    "Problem",
    "ProblemError",
    "ServiceUnavailable",
    "TooManyRequests",
    "TwoFactorRequired",
    "Unauthorized",
    "ValidationFailed",
    "described",
    "field_errors",
    "problem_responses",
]

PROBLEM_BASE = "https://upwatch.dev/problems/"
PROBLEM_MEDIA_TYPE = "application/problem+json"


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

    def __init_subclass__(
        cls,
        *,
        status: int | None = None,
        slug: str | None = None,
        title: str | None = None,
        **kwargs: Any,
    ) -> None:
        """A kind of problem declares its status, slug and title on its class line; a
        refinement of one (``DatabaseBusy``) keeps its base's."""
        super().__init_subclass__(**kwargs)
        if status is not None and slug is not None and title is not None:
            cls.status, cls.slug, cls.title = status, slug, title

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


class BadRequest(ProblemError, status=400, slug="bad-request", title="Bad request"):
    """The request cannot be read: its body is not JSON, not an object, or nests too deep."""


class Unauthorized(ProblemError, status=401, slug="unauthorized", title="Authentication required"):
    default_headers = MappingProxyType({"WWW-Authenticate": "Bearer"})


class Forbidden(ProblemError, status=403, slug="forbidden", title="Forbidden"):
    """The caller is known, and may not do this."""


class TwoFactorRequired(
    Forbidden,
    status=403,
    slug="mfa-required-by-project",
    title="The project requires two-factor sign-in",
):
    """The caller belongs to a project whose owner requires a second factor, and has none:
    only people are refused (an API key acts for the owner), and only members and
    administrators, who may know the project exists (anyone else gets a 404)."""

    def __init__(self) -> None:
        super().__init__(
            "this project requires two-factor authentication: turn it on for your account "
            "in your security settings (/app/settings/security), then open the project again"
        )


class NotFound(ProblemError, status=404, slug="not-found", title="Not found"):
    """No such resource, or one the caller may not see: the same answer either way."""


class MethodNotAllowed(
    ProblemError, status=405, slug="method-not-allowed", title="Method not allowed"
):
    """The path exists; the method does not (Allow names those that do)."""


class Conflict(ProblemError, status=409, slug="conflict", title="Conflict"):
    """The change conflicts with an existing resource or with the resource's state."""


class PayloadTooLarge(
    ProblemError, status=413, slug="payload-too-large", title="Request body too large"
):
    """The body is over the size limit (kit/boundary.py)."""


class PlanLimitExceeded(ProblemError, status=402, slug="plan-limit", title="Plan limit reached"):
    """The owner's plan allows no more of this."""


class ValidationFailed(ProblemError, status=422, slug="validation", title="Validation failed"):
    @classmethod
    def on(cls, field: str, message: str) -> ValidationFailed:
        return cls.listing([FieldError(field=field, message=message)])

    @classmethod
    def listing(cls, errors: list[FieldError]) -> ValidationFailed:
        """The detail repeats every error, so a client that shows only it misses none."""
        return cls("; ".join(f"{e.field}: {e.message}" for e in errors), errors=errors)


class TooManyRequests(ProblemError, status=429, slug="rate-limited", title="Too many requests"):
    def __init__(
        self, detail: str | None = None, *, retry_after: int, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(
            detail, headers={**(headers or {}), "Retry-After": str(max(1, retry_after))}
        )


class ServiceUnavailable(ProblemError, status=503, slug="unavailable", title="Service unavailable"):
    """Something the request needs is away for now; the client may try again."""


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
    the request again a few times (``RETRYABLE``, kit/error_handlers.py) before it answers
    503."""

    default_headers = MappingProxyType({"Retry-After": "1"})

    def __init__(self, reason: str) -> None:
        super().__init__(reason, "the database is busy with other writes; try again in a moment")


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
