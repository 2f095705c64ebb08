"""Apprise sends through its own ``requests`` connections: to a local receiver with Apprise's
``json://`` and ``form://`` services, whose payloads Apprise documents
(https://github.com/caronc/apprise/wiki/Notify_Custom_JSON, …/Notify_Custom_Form), and only
past the address guard. The receiver runs on the test's event loop, so every delivery here
also shows that Apprise's blocking send does not hold the loop.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.conftest import make_settings
from tests.notifications.test_transports import (
    Receiver,
    channel_test_event,
    opened_event,
    receiving,
    resolved_event,
)
from upwatch.kit.net import NetworkGuard, guarded_session
from upwatch.mail.sender import SmtpTransport
from upwatch.notifications.channels import (
    REGISTRY,
    DeliveryKit,
    TransportError,
    deliver,
    keep_secrets,
    masked,
    refused_urls,
    validate_config,
)
from upwatch.notifications.channels.apprise import SCHEMES

pytestmark = pytest.mark.db_independent
TOKEN_PATH = "/notify/s3cr3t-T0ken-9f8e7d"


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with receiving() as served:
        yield served


def kit_for(tmp_path: Path, **settings: Any) -> DeliveryKit:
    values = {"allow_private_targets": True, "alert_timeout_seconds": 5.0, **settings}
    config = make_settings("sqlite:///unused.db", tmp_path, **values)
    # Apprise does not use this session; the channel builds its guard from the settings.
    http = guarded_session(NetworkGuard(allow_private=True, loopback_only=True))
    return DeliveryKit(settings=config, http=http, smtp=SmtpTransport(config))


@pytest.fixture
async def kit(tmp_path: Path) -> AsyncIterator[DeliveryKit]:
    kit = kit_for(tmp_path)
    yield kit
    await kit.http.close()


def json_url(receiver: Receiver, scheme: str = "json") -> str:
    return f"{scheme}://{receiver.url.removeprefix('http://')}{TOKEN_PATH}"


async def failure_of(config: dict[str, Any], kit: DeliveryKit, event: Any = None) -> TransportError:
    with pytest.raises(TransportError) as caught:
        await deliver("apprise", config, event or opened_event(), kit)
    return caught.value


async def test_a_json_url_gets_apprises_documented_payload(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    await deliver("apprise", {"urls": [json_url(receiver)]}, opened_event(), kit)

    request = receiver.only()
    assert (request.method, request.path) == ("POST", TOKEN_PATH)
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["User-Agent"] == "Upwatch"
    event = opened_event()
    assert request.json() == {
        "version": "1.0",
        "title": event.headline,
        "message": "\n".join(event.lines()),
        "attachments": [],
        "type": "failure",
    }


async def test_a_form_url_gets_the_same_fields_as_a_form(
    kit: DeliveryKit, receiver: Receiver
) -> None:
    await deliver("apprise", {"urls": [json_url(receiver, "form")]}, resolved_event(), kit)

    request = receiver.only()
    assert request.method == "POST"
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    form = request.form()
    assert form["title"] == "UP: Checkout API is back after 1h 2m 3s"
    assert form["type"] == "success"
    assert form["version"] == "1.0"
    assert "Recovered at: 2025-03-14T10:28:56Z" in form["message"]


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        (opened_event(severity="high"), "failure"),
        (opened_event(severity="medium"), "warning"),
        (opened_event(severity="low"), "warning"),
        (resolved_event(), "success"),
        (channel_test_event(), "info"),
    ],
)
async def test_the_notify_type_follows_the_event_and_its_severity(
    kit: DeliveryKit, receiver: Receiver, event: Any, kind: str
) -> None:
    await deliver("apprise", {"urls": [json_url(receiver)]}, event, kit)

    assert receiver.only().json()["type"] == kind


async def test_every_url_gets_the_alert(kit: DeliveryKit, receiver: Receiver) -> None:
    urls = [json_url(receiver), json_url(receiver, "form")]

    await deliver("apprise", {"urls": urls}, opened_event(), kit)

    assert [r.headers["Content-Type"] for r in receiver.requests] == [
        "application/json",
        "application/x-www-form-urlencoded",
    ]


@pytest.mark.parametrize(
    ("status", "retryable"), [(500, True), (503, True), (429, True), (400, False), (404, False)]
)
async def test_a_failure_says_whether_a_retry_helps_and_never_shows_the_url(
    kit: DeliveryKit, receiver: Receiver, status: int, retryable: bool
) -> None:
    receiver.answer(status, "no")

    error = await failure_of({"urls": [json_url(receiver)]}, kit)

    assert error.retryable is retryable
    assert error.message == f"Apprise: URL 1 (json://): HTTP {status}"
    assert "s3cr3t" not in error.message


async def test_a_closed_port_is_retryable(kit: DeliveryKit, receiver: Receiver) -> None:
    from tests.notifications.test_transports import closed_url

    closed = closed_url().removeprefix("http://")

    error = await failure_of({"urls": [f"json://{closed}{TOKEN_PATH}"]}, kit)

    assert error.retryable
    assert error.message.startswith("Apprise: URL 1 (json://): not delivered")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_an_internal_address_is_refused_when_sending_and_nothing_is_sent(
    tmp_path: Path, receiver: Receiver, host: str
) -> None:
    # The operator's policy: no private targets, and this machine reaches only itself.
    kit = kit_for(tmp_path, allow_private_targets=False)
    port = receiver.url.rsplit(":", 1)[1]
    try:
        error = await failure_of({"urls": [f"json://{host}:{port}{TOKEN_PATH}"]}, kit)
    finally:
        await kit.http.close()

    assert not error.retryable
    assert "URL 1 (json://): the address is refused" in error.message
    assert receiver.requests == []


async def test_a_redirect_to_an_internal_address_is_refused_too(
    tmp_path: Path, receiver: Receiver
) -> None:
    # json:// follows no redirects unless told to (redirects=yes): then the guard decides.
    receiver.answer(302, headers={"Location": "http://10.1.2.3/steal"})
    kit = kit_for(tmp_path)
    try:
        error = await failure_of({"urls": [json_url(receiver) + "?redirects=yes"]}, kit)
    finally:
        await kit.http.close()

    assert not error.retryable
    assert "the address is refused (10.1.2.3" in error.message


# --- The config: schemes, masking, the guard on save --------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "mailto://user:pass@mail.example.com",  # SMTP: a connection of its own
        "syslog://",  # the local syslog
        "mqtt://broker.example.com/topic",
        "gnome://",  # a desktop notification
        "file:///etc/passwd",
        "nosuchservice://host/path",
    ],
)
def test_a_scheme_that_is_not_an_http_service_is_refused(url: str) -> None:
    with pytest.raises(ValidationError) as caught:
        validate_config("apprise", {"urls": [url]})

    [error] = caught.value.errors()
    assert error["loc"] == ("urls", 0)
    assert "is not one of the Apprise services Upwatch sends to" in error["msg"]
    assert "pass" not in error["msg"]


def test_a_url_apprise_cannot_read_is_refused_without_echoing_it() -> None:
    with pytest.raises(ValidationError) as caught:
        validate_config("apprise", {"urls": ["discord://only-one-part"]})

    [error] = caught.value.errors()
    assert "Apprise cannot read this discord:// URL" in error["msg"]
    assert "only-one-part" not in error["msg"]


def test_every_allowed_scheme_is_an_apprise_service_that_speaks_http_through_requests() -> None:
    from apprise.manager_plugins import NotificationManager

    plugins = NotificationManager()
    known = {f"{scheme}://" for scheme in plugins.schemas()}
    assert set(SCHEMES) <= known
    for scheme in SCHEMES:
        source = inspect.getsource(inspect.getmodule(plugins[scheme.removesuffix("://")]))
        assert "requests." in source, scheme
        for other in ("import socket", "smtplib", "subprocess", "paho", "slixmpp", "dbus"):
            assert other not in source, (scheme, other)


def test_urls_are_masked_to_their_scheme_and_a_masked_one_sent_back_keeps_the_stored() -> None:
    stored = {"urls": ["discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV", "json://hooks.example/t"]}

    shown = masked("apprise", stored)

    assert shown == {"urls": ["discord://****", "json://****"]}
    kept = keep_secrets("apprise", shown, stored)
    assert kept == stored
    # A new URL in the second place replaces that one only.
    changed = keep_secrets(
        "apprise", {"urls": ["discord://****", "ntfys://ntfy.sh/alerts"]}, stored
    )
    assert changed == {"urls": [stored["urls"][0], "ntfys://ntfy.sh/alerts"]}
    assert REGISTRY["apprise"].is_secret_path("config.urls.1")


@pytest.mark.parametrize(
    "url", ["json://127.0.0.1:8080/hook", "gotifys://10.0.0.5/token", "mmost://[::1]/hook"]
)
def test_a_self_hosted_service_at_an_internal_address_is_refused_when_saved(url: str) -> None:
    guard = NetworkGuard(allow_private=False)
    config = validate_config("apprise", {"urls": ["ntfys://ntfy.sh/topic", url]})

    [(field, why)] = refused_urls(guard, "apprise", config)

    assert field == "urls.1"
    assert why.startswith("refused address:")


def test_apprise_is_imported_on_the_first_send_not_with_the_registry() -> None:
    script = (
        "import sys, upwatch.notifications.channels\n"
        "assert 'apprise' not in sys.modules, 'apprise imported'\n"
    )
    run = subprocess.run(  # noqa: S603 - this interpreter, this script
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr


def test_a_masked_url_is_refused_where_no_stored_url_stands_behind_it() -> None:
    stored = {"urls": ["json://hooks.example/one"]}

    # Sent back in another place (or for a new provider), the mask is no URL.
    sent = keep_secrets("apprise", {"urls": ["ntfys://ntfy.sh/a", "json://****"]}, stored)

    with pytest.raises(ValidationError) as caught:
        validate_config("apprise", sent)
    [error] = caught.value.errors()
    assert error["loc"] == ("urls", 1)
    assert "masked: give the URL itself" in error["msg"]
