"""A real OpenID provider on loopback for the single sign-on tests (tests/accounts/
oidc_provider.mjs runs the npm package oidc-provider under Node), and the walk through its
login form over plain HTTP."""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO
from urllib.parse import urljoin

import httpx
import pytest

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "accounts" / "oidc_provider.mjs"
PACKAGE = ROOT / "node_modules" / "oidc-provider" / "package.json"
CLIENT_ID = "upwatch-console"
# Long and recognisable: a test looks for it in every answer and log line.
CLIENT_SECRET = "client-secret-7d1f0c9a4b2e8f6a3c5d7e9b1a2c4e6f"
# How long the provider may take to start on a loaded machine (a bound, not a speed).
START_SECONDS = 60.0


def require_provider() -> str:
    """Node's path; skips with the reason where Node or the package is missing (fails in CI,
    UPWATCH_REQUIRE_BROWSER=1, as the browser does)."""
    node = shutil.which("node")
    if node and PACKAGE.is_file():
        return node
    reason = (
        "needs Node.js and the npm package oidc-provider (package.json): npm ci"
        if node
        else "needs Node.js (node) to run the OpenID provider oidc-provider"
    )
    if os.environ.get("UPWATCH_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


class OpenIdServer:
    """The provider's process on one port: ``restart`` brings it back on the same issuer
    with a new signing key (a key rotation)."""

    def __init__(self, node: str, redirect_uris: tuple[str, ...], port: int) -> None:
        self.command = [node, str(SCRIPT), str(port), CLIENT_ID, CLIENT_SECRET]
        self.command.append(",".join(redirect_uris))
        self.port = port
        self.issuer = f"http://127.0.0.1:{port}"
        # What the provider printed: its warnings and the errors it met (for a failing test).
        self.output: list[str] = []
        self.process: subprocess.Popen[bytes] | None = None
        self.drain: threading.Thread | None = None

    def start(self) -> None:
        self.process = process = subprocess.Popen(  # noqa: S603 - this repository's script
            self.command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            # Unbuffered: a line read ahead into a buffer would hide from select() below.
            bufsize=0,
        )
        assert process.stdout is not None
        deadline = time.monotonic() + START_SECONDS
        while True:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([process.stdout], [], [], max(remaining, 0))
            if not ready:
                raise RuntimeError("oidc-provider did not start:\n" + "".join(self.output))
            line = process.stdout.readline().decode()
            if not line:
                raise RuntimeError("oidc-provider exited:\n" + "".join(self.output))
            self.output.append(line)
            if line.startswith("ready "):
                break
        # The rest is read as it comes, so a full pipe never stalls the provider.
        self.drain = threading.Thread(
            target=_drain, args=(process.stdout, self.output), daemon=True
        )
        self.drain.start()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=START_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if self.drain is not None:
            self.drain.join(timeout=START_SECONDS)
        assert process.stdout is not None
        process.stdout.close()

    def restart(self) -> None:
        self.stop()
        self.start()


@contextmanager
def openid_provider(*redirect_uris: str, port: int | None = None) -> Iterator[OpenIdServer]:
    server = OpenIdServer(require_provider(), redirect_uris, port or free_port())
    try:
        server.start()
        yield server
    finally:
        server.stop()


def _drain(stream: IO[bytes], into: list[str]) -> None:
    for line in iter(stream.readline, b""):
        into.append(line.decode(errors="replace"))


def is_redirect(response: httpx.Response) -> bool:
    return response.status_code in (302, 303, 307)


async def sign_in_at_provider(
    browser: httpx.AsyncClient, authorization_url: str, login: str, back_to: str
) -> str:
    """Follow ``authorization_url`` at the provider with ``browser`` (its own cookie jar),
    fill its login form as ``login``, and return the address it sends the visitor back to
    (which starts with ``back_to``)."""
    response = await browser.get(authorization_url)
    while is_redirect(response):
        response = await browser.get(urljoin(str(response.url), response.headers["location"]))
    assert response.status_code == 200, response.text
    found = re.search(r'<form[^>]*action="([^"]+)"', response.text)
    assert found, response.text
    action = urljoin(str(response.url), found.group(1).replace("&amp;", "&"))
    response = await browser.post(
        action, data={"prompt": "login", "login": login, "password": "anything"}
    )
    while is_redirect(response):
        location = urljoin(str(response.url), response.headers["location"])
        if location.startswith(back_to):
            return location
        response = await browser.get(location)
    raise AssertionError(f"the provider did not send the visitor back: {response.text[:500]}")


async def cancel_at_provider(
    browser: httpx.AsyncClient, authorization_url: str, back_to: str
) -> str:
    """Follow ``authorization_url`` and press the login form's Cancel link instead."""
    response = await browser.get(authorization_url)
    while is_redirect(response):
        response = await browser.get(urljoin(str(response.url), response.headers["location"]))
    found = re.search(r'href="([^"]*abort[^"]*)"', response.text)
    assert found, response.text
    response = await browser.get(urljoin(str(response.url), found.group(1)))
    while is_redirect(response):
        location = urljoin(str(response.url), response.headers["location"])
        if location.startswith(back_to):
            return location
        response = await browser.get(location)
    raise AssertionError(f"the provider did not send the visitor back: {response.text[:500]}")
