"""What each console route does of the API, named by the API operation's ``operationId``.

A route declares it where it is defined (``@router.post(..., openapi_extra=offers(...))``);
console routes are left out of the OpenAPI document, so the declaration is read only by the
test that finds API capabilities the console lacks (tests/console/test_console_coverage.py).
"""

from __future__ import annotations

from typing import Any, Final

OFFERS: Final = "x-console-offers"


def offers(*operations: str) -> dict[str, Any]:
    """The ``openapi_extra`` of a console route that does what ``operations`` do."""
    return {OFFERS: list(operations)}
