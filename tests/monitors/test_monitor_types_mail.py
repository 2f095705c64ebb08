"""The smtp, imap and pop3 monitor types through the API, ``upwatch apply`` and the console:
made, checked now (up, then down once the server stops), their password masked and kept."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
from argon2 import PasswordHasher

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, assert_problem
from tests.console.forms import signed_in, submit
from tests.mail_servers import (
    PASSWORD,
    USER,
    Dovecot,
    SmtpServers,
    running_dovecot,
    smtp_servers_of,
)
from upwatch.client.apply import exported
from upwatch.kit.security import SECRET_MASK

settings_overrides = overriding(allow_private_targets=True)


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def trusted(ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The service trusts the test's authority, as it would a public one (SSL_CERT_FILE is
    read by Python's default TLS context)."""
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    monkeypatch.setenv("SSL_CERT_FILE", str(path))


@pytest.fixture
async def smtp_servers(ca: trustme.CA) -> AsyncIterator[SmtpServers]:
    async with smtp_servers_of(ca) as servers:
        yield servers


@pytest.fixture
async def dovecot(ca: trustme.CA) -> AsyncIterator[Dovecot]:
    async with running_dovecot(ca) as server:
        yield server


async def _check(client: httpx.AsyncClient, cast: Cast, monitor_id: str) -> dict[str, Any]:
    result = await client.post(f"/monitors/{monitor_id}/check", headers=cast.alice.headers)
    assert result.status_code == 200, result.text
    checked: dict[str, Any] = result.json()
    return checked


async def test_an_smtp_monitor_is_up_and_down_once_its_server_stops(
    client: httpx.AsyncClient,
    cast: Cast,
    as_alice: InProject,
    smtp_servers: SmtpServers,
    trusted: None,
) -> None:
    port = await smtp_servers.start("starttls")
    monitor = await as_alice.monitor(
        name="Mail",
        type="smtp",
        host="127.0.0.1",
        port=port,
        username=USER,
        password=PASSWORD,
        intervalSeconds=3600,
    )
    assert monitor["tls"] == "starttls"
    assert monitor["password"].startswith(SECRET_MASK)

    up = await _check(client, cast, monitor["id"])
    assert up["status"] == "up", up["error"]
    assert up["timings"]["tlsMs"] is not None

    await smtp_servers.stop(port)
    down = await _check(client, cast, monitor["id"])
    assert (down["status"], down["errorKind"]) == ("down", "connect")


async def test_a_wrong_smtp_password_is_down_and_the_password_is_never_shown(
    client: httpx.AsyncClient,
    cast: Cast,
    as_alice: InProject,
    smtp_servers: SmtpServers,
    trusted: None,
) -> None:
    port = await smtp_servers.start("implicit")
    monitor = await as_alice.monitor(
        name="Mail",
        type="smtp",
        host="127.0.0.1",
        port=port,
        tls="implicit",
        username=USER,
        password="not-the-password-7",
        intervalSeconds=3600,
    )

    down = await _check(client, cast, monitor["id"])

    assert (down["status"], down["errorKind"]) == ("down", "login")
    url = f"/monitors/{monitor['id']}"
    shown = [
        (await client.get(url, headers=cast.alice.headers)).text,
        (await client.get(f"{url}/checks", headers=cast.alice.headers)).text,
        (await client.get("/monitors", headers=cast.alice.headers)).text,
    ]
    for text in shown:
        assert "not-the-password-7" not in text
    stored = (await client.get(url, headers=cast.alice.headers)).json()
    assert stored["password"].startswith(SECRET_MASK)


async def test_a_masked_password_sent_back_keeps_the_stored_one(
    client: httpx.AsyncClient,
    cast: Cast,
    as_alice: InProject,
    smtp_servers: SmtpServers,
    trusted: None,
) -> None:
    port = await smtp_servers.start("starttls")
    monitor = await as_alice.monitor(
        name="Mail",
        type="smtp",
        host="127.0.0.1",
        port=port,
        username=USER,
        password=PASSWORD,
        intervalSeconds=3600,
    )
    url = f"/monitors/{monitor['id']}"

    renamed = await client.patch(
        url, headers=cast.alice.headers, json={"name": "Mail out", "password": monitor["password"]}
    )

    assert renamed.status_code == 200, renamed.text
    assert (await _check(client, cast, monitor["id"]))["status"] == "up"


async def test_a_username_without_a_password_is_refused_naming_the_field(
    as_alice: InProject,
) -> None:
    refused = await as_alice.post(
        "/monitors", name="Mail", type="imap", host="127.0.0.1", username=USER
    )

    problem = assert_problem(refused, 422)
    assert "password" in str(problem), problem


async def test_a_tls_mode_sent_as_null_is_the_default_again(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    monitor = await as_alice.monitor(
        name="Mail", type="pop3", host="127.0.0.1", tls="implicit", intervalSeconds=3600
    )

    cleared = await client.patch(
        f"/monitors/{monitor['id']}", headers=cast.alice.headers, json={"tls": None}
    )

    assert cleared.status_code == 200, cleared.text
    assert cleared.json()["tls"] == "starttls"


async def test_a_tls_mode_other_than_the_three_is_refused(as_alice: InProject) -> None:
    refused = await as_alice.post(
        "/monitors", name="Mail", type="pop3", host="127.0.0.1", tls="ssl"
    )

    assert_problem(refused, 422)


@pytest.mark.parametrize("kind", ["imap", "pop3"])
async def test_an_imap_or_pop3_monitor_is_up_and_down_once_dovecot_stops(
    client: httpx.AsyncClient,
    cast: Cast,
    as_alice: InProject,
    dovecot: Dovecot,
    trusted: None,
    kind: str,
) -> None:
    monitor = await as_alice.monitor(
        name=kind,
        type=kind,
        host="127.0.0.1",
        port=dovecot.ports[f"{kind}s"],
        tls="implicit",
        username=USER,
        password=PASSWORD,
        intervalSeconds=3600,
    )

    up = await _check(client, cast, monitor["id"])
    assert up["status"] == "up", up["error"]

    await dovecot.stop()
    down = await _check(client, cast, monitor["id"])
    assert (down["status"], down["errorKind"]) == ("down", "connect")


async def test_the_console_form_makes_an_smtp_monitor_with_a_masked_password(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    form = (await client.get("/app/monitors/new?type=smtp")).text
    assert re.search(r'<input[^>]*type="password"[^>]*name="password"', form) or re.search(
        r'<input[^>]*name="password"[^>]*type="password"', form
    ), form

    made = await submit(
        client,
        "/app/monitors/new",
        csrf,
        projectId=cast.project_id,
        type="smtp",
        name="Mail",
        host="127.0.0.1",
        port="2525",
        tls="implicit",
        username=USER,
        password="console-pw-55",
        intervalSeconds="300",
    )

    assert made.status_code == 303, made.text
    monitor_id = made.headers["location"].rsplit("/", 1)[1]
    stored = (await client.get(f"/monitors/{monitor_id}", headers=cast.alice.headers)).json()
    assert (stored["type"], stored["port"], stored["tls"]) == ("smtp", 2525, "implicit")
    assert stored["username"] == USER
    assert stored["password"].startswith(SECRET_MASK)
    edit = await client.get(f"/app/monitors/{monitor_id}/edit")
    assert edit.status_code == 200
    assert "console-pw-55" not in edit.text


def test_upwatch_apply_makes_an_smtp_monitor_with_its_password_from_the_environment(
    tmp_path: Path,
) -> None:
    from tests.client.test_apply_live import Project  # a live server: only for this test

    project = Project(tmp_path)
    document = {
        "version": 1,
        "monitors": [
            {
                "key": "mail",
                "name": "Mail",
                "type": "smtp",
                "host": "127.0.0.1",
                "port": 2525,
                "tls": "implicit",
                "username": USER,
                "password": {"env": "MAIL_PASSWORD"},
                "intervalSeconds": 600,
            }
        ],
    }
    try:
        first = project.apply(document, MAIL_PASSWORD=PASSWORD)
        again = project.apply(document, MAIL_PASSWORD=PASSWORD)
        [monitor] = project.api.get(
            "/monitors", headers=project.headers, params={"projectId": project.project_id}
        ).json()
        changed = project.apply(document, MAIL_PASSWORD="a-new-password")
        [after] = project.api.get(
            "/monitors", headers=project.headers, params={"projectId": project.project_id}
        ).json()
    finally:
        project.api.close()
        project.server.stop()

    assert "1 to create" in first, first
    assert "1 unchanged" in again, again
    assert "0 to update" in again, again
    assert (monitor["type"], monitor["tls"], monitor["port"]) == ("smtp", "implicit", 2525)
    assert monitor["password"].startswith(SECRET_MASK)
    reference = monitor["secretRefs"]["password"]
    assert reference["env"] == "MAIL_PASSWORD"
    assert PasswordHasher().verify(reference["digest"], PASSWORD)
    # A new value in the environment is a change, sent with its reference.
    assert "1 to update" in changed, changed
    assert PasswordHasher().verify(after["secretRefs"]["password"]["digest"], "a-new-password")


class TestWithoutPrivateTargets:
    settings_overrides = overriding(allow_private_targets=False)

    @pytest.mark.parametrize("kind", ["smtp", "imap", "pop3"])
    async def test_a_mail_monitor_of_a_private_address_is_refused(
        self, as_alice: InProject, kind: str
    ) -> None:
        refused = await as_alice.post(
            "/monitors", name="Mail", type=kind, host="127.0.0.1", intervalSeconds=3600
        )

        problem = assert_problem(refused, 422)
        assert "host" in str(problem), problem


def test_export_writes_a_mail_password_given_by_reference_as_that_reference() -> None:
    monitor = {
        "id": "m",
        "key": "mail",
        "name": "Mail",
        "type": "imap",
        "host": "imap.example.com",
        "tls": "implicit",
        "username": USER,
        "password": f"{SECRET_MASK}word",
        "secretRefs": {"password": {"env": "IMAP_PASSWORD", "digest": None}},
    }
    empty: list[dict[str, Any]] = []
    current = {"monitors": [monitor], "providers": empty, "statusPages": empty}

    document = exported({**current, "maintenance": empty}, lambda _said: None)

    [entry] = document["monitors"]
    assert entry["password"] == {"env": "IMAP_PASSWORD"}
    assert (entry["type"], entry["tls"], entry["username"]) == ("imap", "implicit", USER)
