"""The log tells the story (issue 12): one line per monitor state change, incident opened or
resolved, alert delivered or given up, with ids; JSON lines for log collectors from the real
``upwatch serve``, uvicorn's included, and never a token once SMTP is configured."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest

from tests.app_settings import overriding
from tests.conftest import (
    PASSWORD,
    Account,
    SignUp,
    SmtpServer,
    eventually,
)
from tests.factories import Target, create_incident, create_provider
from tests.live_server import LiveServer, ThreadedTarget
from tests.receivers import Receiver
from upwatch.kit.clock import Clock
from upwatch.kit.logs import AccessTokenMask, json_formatter, mask_tokens


def _events(caplog: pytest.LogCaptureFixture, event: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == event]


def test_tokens_in_request_paths_are_masked() -> None:
    assert mask_tokens("/reset-password?token=abc_DEF-1") == "/reset-password?token=****"
    assert mask_tokens("/invitations/accept?x=1&token=abc") == "/invitations/accept?x=1&token=****"
    assert mask_tokens("/heartbeat/abc_DEF-1?status=ok") == "/heartbeat/****?status=ok"
    assert mask_tokens("/monitors/abc?limit=1") == "/monitors/abc?limit=1"


def test_an_access_line_is_written_with_its_token_masked_in_json() -> None:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", "/reset-password?token=s3cr3t-t0ken", "1.1", 404),
        None,
    )
    AccessTokenMask().filter(record)
    line = json.loads(json_formatter().format(record))
    assert line["message"] == '127.0.0.1:5000 - "GET /reset-password?token=**** HTTP/1.1" 404'
    assert (line["level"], line["logger"]) == ("INFO", "uvicorn.access")
    assert line["time"].endswith("+00:00")
    assert "s3cr3t" not in json.dumps(line)


@pytest.mark.parametrize(
    "name",
    [
        "api_key",
        "apiKey",
        "key",
        "APIKEY",
        "access_token",
        "Token",
        "password",
        "PassWord",
        "secret",
        "client_secret",
        "api%5Fkey",  # api_key with its underscore percent-encoded
        "%41PI%4Bey",  # APIKey, letters percent-encoded
        "pass+word",
        "code",  # an OAuth authorization code, on the single sign-on callback
    ],
)
def test_sensitive_query_parameters_are_masked_in_the_access_line_whatever_their_spelling(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    access = logging.getLogger("uvicorn.access")
    mask = AccessTokenMask()
    access.addFilter(mask)
    try:
        with caplog.at_level(logging.INFO, logger="uvicorn.access"):
            # As uvicorn writes it: the path and the query string as the client sent them.
            path = f"/monitors?projectId=p1&{name}=s3cr3t-V4lue&limit=5#{name}=s3cr3t-V4lue"
            access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", path, "1.1", 200)
    finally:
        access.removeFilter(mask)
    [record] = caplog.records
    line = record.getMessage()
    assert "s3cr3t" not in line
    assert f"/monitors?projectId=p1&{name}=****&limit=5#{name}=****" in line


def test_other_query_parameters_stay_as_sent_in_the_access_line() -> None:
    path = "/monitors?projectId=p1&limit=5&offset=0&period=24h&tokenless&monkeys=3"
    assert mask_tokens(path) == path


class TestTheStoryOfAnOutage:
    @pytest.fixture
    def clock(self) -> Clock:
        return Clock()  # alert retries run on real time

    settings_overrides = overriding(
        allow_private_targets=True,
        alert_retry_seconds=0.1,
        alert_retry_max_seconds=0.2,
        alert_poll_seconds=0.1,
        alert_max_attempts=2,
    )

    @pytest.fixture
    async def receivers(self) -> AsyncIterator[tuple[Receiver, Receiver]]:
        good, broken = await Receiver().start(), await Receiver().start()
        broken.status = 500
        yield good, broken
        await good.stop()
        await broken.stop()

    async def test_state_changes_incidents_and_alert_outcomes_each_log_one_line_with_ids(
        self,
        client: httpx.AsyncClient,
        sign_up: SignUp,
        target: Target,
        receivers: tuple[Receiver, Receiver],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        caplog.set_level(logging.INFO)
        good, broken = receivers
        alice = await sign_up("alice@example.com")
        headers = alice.headers
        project = (await client.post("/projects", headers=headers, json={"name": "Shop"})).json()
        hook = await create_provider(
            client, headers, project["id"], type="webhook", name="Ops", config={"url": good.url()}
        )
        dead = await create_provider(
            client, headers, project["id"], type="webhook", name="Old", config={"url": broken.url()}
        )
        created = await client.post(
            "/monitors",
            headers=headers,
            json={
                "projectId": project["id"],
                "name": "Checkout",
                "type": "http",
                "url": target.url,
            },
        )
        monitor_id = created.json()["id"]

        async def status_is(expected: str) -> bool:
            got = await client.get(f"/monitors/{monitor_id}", headers=headers)
            return bool(got.json()["status"] == expected)

        await eventually(lambda: status_is("up"))  # the scheduled first check
        target.status = 503
        await client.post(f"/monitors/{monitor_id}/check", headers=headers)
        await eventually(lambda: len(_events(caplog, "alert.given_up")) == 1)
        await eventually(lambda: len(_events(caplog, "alert.delivered")) == 1)
        target.status = 200
        await client.post(f"/monitors/{monitor_id}/check", headers=headers)
        await eventually(lambda: len(_events(caplog, "alert.delivered")) == 2)
        # The recovery goes to the broken receiver too, and is given up as well.
        await eventually(lambda: len(_events(caplog, "alert.given_up")) == 2)

        changes = _events(caplog, "monitor.status_changed")
        assert [(r.previous_status, r.status) for r in changes] == [  # type: ignore[attr-defined]
            ("pending", "up"),
            ("up", "down"),
            ("down", "up"),
        ]
        assert all(r.monitor_id == monitor_id for r in changes)  # type: ignore[attr-defined]
        assert all(r.levelno == logging.INFO for r in changes)
        assert f"monitor {monitor_id} (Checkout) is down, was up" in changes[1].getMessage()

        [opened] = _events(caplog, "incident.opened")
        [resolved] = _events(caplog, "incident.resolved")
        incident_id = opened.incident_id  # type: ignore[attr-defined]
        assert resolved.incident_id == incident_id  # type: ignore[attr-defined]
        assert opened.monitor_id == resolved.monitor_id == monitor_id  # type: ignore[attr-defined]
        assert opened.levelno == resolved.levelno == logging.INFO
        assert "is down: unexpected HTTP status: HTTP 503" in opened.getMessage()

        delivered = _events(caplog, "alert.delivered")
        assert {r.provider_id for r in delivered} == {hook["id"]}  # type: ignore[attr-defined]
        assert all(
            (r.provider_type, r.incident_id, r.monitor_id)  # type: ignore[attr-defined]
            == ("webhook", incident_id, monitor_id)
            for r in delivered
        )
        assert all(isinstance(r.alert_id, int) for r in delivered)  # type: ignore[attr-defined]
        for given_up in _events(caplog, "alert.given_up"):
            assert given_up.provider_id == dead["id"]  # type: ignore[attr-defined]
            assert given_up.incident_id == incident_id  # type: ignore[attr-defined]
            assert given_up.attempts == 2  # type: ignore[attr-defined]
            assert given_up.levelno == logging.ERROR  # a person was not told
            assert "given up after 2 attempt(s): webhook: HTTP 500" in given_up.getMessage()

    async def test_a_person_opening_resolving_reopening_and_pausing_is_logged(
        self, client: httpx.AsyncClient, sign_up: SignUp, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO)
        alice = await sign_up("alice@example.com")
        project = (
            await client.post("/projects", headers=alice.headers, json={"name": "Shop"})
        ).json()
        incident = await create_incident(client, alice, project["id"])
        path = f"/incidents/{incident['id']}"
        await client.patch(path, headers=alice.headers, json={"status": "identified"})
        await client.patch(path, headers=alice.headers, json={"status": "resolved"})
        await client.post(
            f"{path}/updates",
            headers=alice.headers,
            json={"status": "investigating", "message": "It is back"},
        )
        events = [
            (r.event, r.incident_id, r.user_id)  # type: ignore[attr-defined]
            for r in caplog.records
            if getattr(r, "event", "").startswith("incident.")
        ]
        assert events == [
            ("incident.opened", incident["id"], alice.id),
            ("incident.resolved", incident["id"], alice.id),
            ("incident.reopened", incident["id"], alice.id),
        ]

        monitor = await client.post(
            "/monitors",
            headers=alice.headers,
            json={
                "projectId": project["id"],
                "name": "Beat",
                "type": "heartbeat",
                "intervalSeconds": 300,
            },
        )
        await client.patch(
            f"/monitors/{monitor.json()['id']}", headers=alice.headers, json={"isActive": False}
        )
        [paused] = _events(caplog, "monitor.status_changed")
        assert paused.monitor_id == monitor.json()["id"]  # type: ignore[attr-defined]
        assert "is paused, was pending (paused by user" in paused.getMessage()


# ---- the real process, JSON format ----


def _wait_until(condition: Callable[[], bool], within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.1)


def _body(server: SmtpServer, address: str) -> str:
    payload = server.mailbox.to(address)[-1].get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode()


def test_serve_writes_json_lines_with_ids_and_no_token_once_smtp_is_configured(
    tmp_path: Path, service_env: dict[str, str], smtp: SmtpServer
) -> None:
    target = ThreadedTarget().start()
    env = {
        **service_env,
        "UPWATCH_LOG_FORMAT": "json",
        "UPWATCH_SMTP_HOST": "127.0.0.1",
        "UPWATCH_SMTP_PORT": str(smtp.port),
        "UPWATCH_MAIL_POLL_SECONDS": "0.2",
        "UPWATCH_ALLOW_PRIVATE_TARGETS": "true",
    }
    server = LiveServer(tmp_path, env, log_level="info").start()
    try:
        url = server.url
        signup = httpx.post(
            f"{url}/auth/signup", json={"email": "alice@example.com", "password": PASSWORD}
        )
        assert signup.status_code == 201
        alice = Account(
            id=signup.json()["user"]["id"],
            email="alice@example.com",
            password=PASSWORD,
            access_token=signup.json()["access_token"],
            refresh_token=signup.json()["refresh_token"],
        )
        project = httpx.post(f"{url}/projects", headers=alice.headers, json={"name": "Shop"})
        invited = httpx.post(
            f"{url}/projects/{project.json()['id']}/users",
            headers=alice.headers,
            json={"email": "dave@example.com"},
        )
        assert invited.status_code == 201
        httpx.post(f"{url}/auth/forgot-password", json={"email": "alice@example.com"})
        _wait_until(lambda: bool(smtp.mailbox.to("alice@example.com")))
        _wait_until(lambda: bool(smtp.mailbox.to("dave@example.com")))
        reset = re.search(r"token=([\w-]+)", _body(smtp, "alice@example.com"))
        invitation = re.search(r"token: ([\w-]+)", _body(smtp, "dave@example.com"))
        assert reset
        assert invitation
        tokens = [reset.group(1), invitation.group(1)]
        # A person opens the reset link on the API's host: the access line must not keep it.
        httpx.get(f"{url}/reset-password", params={"token": tokens[0]})
        beat = httpx.post(
            f"{url}/monitors",
            headers=alice.headers,
            json={
                "projectId": project.json()["id"],
                "name": "Beat",
                "type": "heartbeat",
                "intervalSeconds": 300,
            },
        ).json()
        heartbeat_token = beat["heartbeatUrl"].rsplit("/", 1)[1]
        tokens.append(heartbeat_token)
        assert httpx.get(f"{url}/heartbeat/{heartbeat_token}").status_code == 200
        monitor = httpx.post(
            f"{url}/monitors",
            headers=alice.headers,
            json={
                "projectId": project.json()["id"],
                "name": "Site",
                "type": "http",
                "url": f"{target.base}/",
                "intervalSeconds": 300,
            },
        ).json()
        _wait_until(
            lambda: (
                httpx.get(f"{url}/monitors/{monitor['id']}", headers=alice.headers).json()["status"]
                == "up"
            )
        )
    finally:
        server.stop()
        target.stop()

    text = server.log.read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert all({"time", "level", "logger", "message"} <= line.keys() for line in lines)
    loggers = {line["logger"] for line in lines}
    assert {"uvicorn.error", "uvicorn.access", "upwatch.app"} <= loggers
    [up] = [
        line
        for line in lines
        if line.get("event") == "monitor.status_changed" and line["monitor_id"] == monitor["id"]
    ]
    assert (up["previous_status"], up["status"], up["level"]) == ("pending", "up", "INFO")
    assert any("/reset-password?token=****" in line["message"] for line in lines)
    assert any("/heartbeat/****" in line["message"] for line in lines)
    assert not any(token in text for token in tokens)
