"""Filling in the console's forms as a browser would: the CSRF token, signing in."""

from __future__ import annotations

import re

import httpx

from tests.conftest import PASSWORD


def csrf_of(page: httpx.Response) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


async def submit(
    client: httpx.AsyncClient, path: str, csrf: str, /, **fields: str
) -> httpx.Response:
    """A form of ``fields`` sent to ``path`` with the session's CSRF token."""
    return await client.post(path, data={"csrf": csrf, **fields})


async def signed_in(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> str:
    """Signs ``client`` in through the form; the session's CSRF token."""
    form = await client.get("/app/login")
    done = await submit(client, "/app/login", csrf_of(form), email=email, password=password)
    assert done.status_code == 303, done.text
    assert done.headers["location"] == "/app/dashboard"
    return csrf_of(await client.get("/app/monitors"))
