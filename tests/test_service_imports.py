"""The service process imports what a route needs only when it is called (issue 39): the
single sign-on client, passkeys, QR codes and the config file's models weigh 30 MB that most
services never use."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from upwatch.client import SCHEMA_PATH

# Imported by the routes that use them, never at start.
# Babel: on the first text in another language than English (upwatch/kit/languages.py).
ON_USE = (
    "authlib",
    "babel",
    "httpx",
    "joserfc",
    "segno",
    "upwatch.client.document",
    "webauthn",
    "yaml",
)


@pytest.mark.db_independent
def test_building_the_app_imports_none_of_the_libraries_only_some_routes_use() -> None:
    script = (
        "import json, sys\n"
        "from upwatch.app import create_app\n"
        "from upwatch.config import Settings\n"
        "create_app(Settings())\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    modules = set(json.loads(done.stdout))
    assert "upwatch.accounts.passkeys" in modules  # the routes are there
    assert sorted(m for m in modules if m in ON_USE or m.split(".")[0] in ON_USE) == []


async def test_the_config_file_schema_is_served_once_asked_for(client: httpx.AsyncClient) -> None:
    response = await client.get(SCHEMA_PATH)
    assert response.status_code == 200
    assert response.json()["$schema"] == "https://json-schema.org/draft/2020-12/schema"
