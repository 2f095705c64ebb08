"""A running Upwatch service, reached over its HTTP API with an API key.

``UPWATCH_API_URL`` says where (default http://127.0.0.1:8000) and ``UPWATCH_API_KEY`` with
what; the key's project is the one the commands act on.
"""

from __future__ import annotations

import os
from typing import Any, Final

import httpx

from upwatch import __version__

DEFAULT_URL: Final = "http://127.0.0.1:8000"
PAGE: Final = 1000


class ServiceError(Exception):
    """The service refused or could not be reached; the message says why, in its words."""


def _problem(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    if not isinstance(body, dict):
        return f"HTTP {response.status_code}"
    text = str(body.get("detail") or body.get("title") or f"HTTP {response.status_code}")
    fields = [f"{e.get('field')}: {e.get('message')}" for e in body.get("errors") or []]
    return "; ".join([text, *fields]) if fields and text not in fields[0] else text


class Service:
    def __init__(self, url: str, key: str, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {key}", "User-Agent": f"upwatch/{__version__}"},
            timeout=timeout,
        )
        self._project_id: str | None = None

    @classmethod
    def from_environment(cls, url: str | None = None, key: str | None = None) -> Service:
        """The service the flags name, else UPWATCH_API_URL and UPWATCH_API_KEY."""
        key = key or os.environ.get("UPWATCH_API_KEY")
        if not key:
            raise ServiceError(
                "set UPWATCH_API_KEY (or --api-key) to an API key of the project "
                "(POST /projects/{id}/api-keys) and UPWATCH_API_URL (or --url) to the service"
            )
        return cls(url or os.environ.get("UPWATCH_API_URL") or DEFAULT_URL, key)

    def close(self) -> None:
        self.http.close()

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ServiceError(f"cannot reach {self.url}: {exc}") from None
        if response.status_code >= 400:
            raise ServiceError(f"{method} {path}: {response.status_code} {_problem(response)}")
        try:
            return response.json() if response.content else None
        except ValueError:
            raise ServiceError(
                f"{method} {path}: the answer is not JSON (is it Upwatch?)"
            ) from None

    def listed(self, path: str, **params: Any) -> list[dict[str, Any]]:
        """Every item of a list operation, page by page."""
        items: list[dict[str, Any]] = []
        while True:
            page = self.call("GET", path, params={**params, "limit": PAGE, "offset": len(items)})
            items.extend(page)
            if len(page) < PAGE:
                return items

    @property
    def project_id(self) -> str:
        """The API key's project: the one it lists."""
        if self._project_id is None:
            projects = self.call("GET", "/projects")
            if len(projects) != 1:
                raise ServiceError(
                    "UPWATCH_API_KEY must be a project's API key (it lists one project)"
                )
            self._project_id = str(projects[0]["id"])
        return self._project_id
