"""The headers the API answers with, declared in its OpenAPI description: FastAPI describes
bodies, not the headers a dependency adds (``X-Total-Count`` by ``kit/pagination``, the
``RateLimit-*`` fields by the metering of authenticated requests in ``billing/service``)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from upwatch.kit.inputs import worded

# Header values are text; this text is a whole number.
_COUNT = {"type": "string", "pattern": worded("^[0-9]+$", "a whole number, in digits")}
HEADERS: dict[str, dict[str, Any]] = {
    "X-Total-Count": {
        "description": "How many items the list holds in all, across its pages (contract §2).",
        "schema": _COUNT,
    },
    "RateLimit-Limit": {
        "description": "Requests the account's plan allows per UTC day (apiCallsPerDay).",
        "schema": _COUNT,
    },
    "RateLimit-Remaining": {
        "description": "Requests left today.",
        "schema": _COUNT,
    },
    "RateLimit-Reset": {
        "description": "Seconds until the count starts again (the next UTC day).",
        "schema": _COUNT,
    },
}
_RATE = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")


def _refer(response: dict[str, Any], names: tuple[str, ...]) -> None:
    headers = response.setdefault("headers", {})
    for name in names:
        headers.setdefault(name, {"$ref": f"#/components/headers/{name}"})


def declare(app: FastAPI) -> None:
    """Lists answer ``X-Total-Count``; requests made with a token answer ``RateLimit-*`` (and
    with 429 once the day's allowance is spent)."""
    build = app.openapi

    def described() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        schema.setdefault("components", {}).setdefault("headers", {}).update(HEADERS)
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                if not isinstance(operation, dict) or "responses" not in operation:
                    continue
                query = {
                    p.get("name") for p in operation.get("parameters", []) if p.get("in") == "query"
                }
                listed = {"limit", "offset"} <= query
                metered = any("bearer" in need for need in operation.get("security", []))
                for code, response in operation["responses"].items():
                    if not isinstance(response, dict) or "$ref" in response:
                        continue
                    ok = code.startswith("2")
                    if ok and listed:
                        _refer(response, ("X-Total-Count",))
                    if metered and (ok or code == "429"):
                        _refer(response, _RATE)
        app.openapi_schema = schema
        return schema

    app.openapi = described  # type: ignore[method-assign]
