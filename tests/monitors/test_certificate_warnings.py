"""Certificate expiry on monitors that read a certificate, end to end: an https target whose
certificate the test replaces, checked now through the API; the days left are stored with each
result, each warning day crossed opens one incident, and a renewed certificate resolves them."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp.connector
import httpx
import pytest
import trustme
from aiohttp import web
from fastapi import FastAPI
from sqlalchemy import select

from tests.app_settings import overriding, plans
from tests.conftest import Cast, InProject
from tests.factories import create_monitor
from upwatch.models import Alert, Monitor

settings_overrides = overriding(
    allow_private_targets=True,
    plans_file=plans(
        "[plans.free]\ncheckFrequencyMinutes = 0\nmonitorCount = 100\napiCallsPerDay = 1000000\n"
    ),
)


@dataclass
class HttpsTarget:
    """An https server on 127.0.0.1 whose certificate can be replaced between checks."""

    ca: trustme.CA
    context: ssl.SSLContext
    port: int

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/"

    def expiring_in(self, days: int) -> None:
        """Present a certificate with ``days`` whole days (and an hour) left."""
        not_after = datetime.now(UTC) + timedelta(days=days, hours=1)
        self.ca.issue_cert("127.0.0.1", not_after=not_after).configure_cert(self.context)


@pytest.fixture
def trusted_ca(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> trustme.CA:
    """A test authority every check trusts: the TLS type's context reads SSL_CERT_FILE when
    made; aiohttp made its verifying context at import, so it is replaced by one that trusts
    the authority too."""
    ca = trustme.CA()
    pem = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    monkeypatch.setenv("SSL_CERT_FILE", str(pem))
    monkeypatch.setattr(
        aiohttp.connector, "_SSL_CONTEXT_VERIFIED", ssl.create_default_context(cafile=str(pem))
    )
    return ca


@pytest.fixture
async def https_target(trusted_ca: trustme.CA) -> AsyncIterator[HttpsTarget]:
    async def answer(_request: web.Request) -> web.Response:
        # Every check connects anew, so it sees the certificate presented now.
        return web.Response(text="ok", headers={"Connection": "close"})

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    app = web.Application()
    app.router.add_get("/", answer)
    runner = web.AppRunner(app, shutdown_timeout=1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    target = HttpsTarget(trusted_ca, context, int(runner.addresses[0][1]))
    target.expiring_in(300)
    yield target
    await runner.cleanup()


async def check_now(client: httpx.AsyncClient, cast: Cast, monitor: dict[str, Any]) -> Any:
    answer = await client.post(f"/monitors/{monitor['id']}/check", headers=cast.alice.headers)
    assert answer.status_code == 200, answer.text
    return answer.json()


async def incidents_of(
    client: httpx.AsyncClient, cast: Cast, monitor: dict[str, Any]
) -> list[dict[str, Any]]:
    answer = await client.get(
        "/incidents", headers=cast.alice.headers, params={"monitorId": monitor["id"]}
    )
    result: list[dict[str, Any]] = answer.json()
    return result


def opened(incidents: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(i["title"], i["severity"]) for i in incidents if i["status"] != "resolved"}


async def test_an_https_check_stores_the_days_its_certificate_has_left(
    client: httpx.AsyncClient, cast: Cast, https_target: HttpsTarget
) -> None:
    monitor = await create_monitor(client, cast.alice, cast.project_id, url=https_target.url)

    checked = await check_now(client, cast, monitor)

    assert (checked["status"], checked["certificateDays"]) == ("up", 300)
    listed = await client.get(f"/monitors/{monitor['id']}/checks", headers=cast.alice.headers)
    assert [c["certificateDays"] for c in listed.json()] == [300]
    assert await incidents_of(client, cast, monitor) == []


async def test_each_warning_day_crossed_opens_one_incident_and_a_renewal_resolves_them(
    app: FastAPI,
    client: httpx.AsyncClient,
    cast: Cast,
    as_alice: InProject,
    https_target: HttpsTarget,
) -> None:
    await as_alice.provider(type="webhook", name="ops", config={"url": "http://127.0.0.1:9/hook"})
    monitor = await create_monitor(client, cast.alice, cast.project_id, url=https_target.url)

    https_target.expiring_in(10)
    assert (await check_now(client, cast, monitor))["certificateDays"] == 10
    await check_now(client, cast, monitor)  # still 10 days: nothing more opens
    assert opened(await incidents_of(client, cast, monitor)) == {
        ("Certificate of 127.0.0.1 expires in 10 days", "low")
    }

    https_target.expiring_in(5)
    await check_now(client, cast, monitor)
    assert opened(await incidents_of(client, cast, monitor)) == {
        ("Certificate of 127.0.0.1 expires in 10 days", "low"),
        ("Certificate of 127.0.0.1 expires in 5 days", "medium"),
    }
    current = await client.get(f"/monitors/{monitor['id']}", headers=cast.alice.headers)
    assert current.json()["status"] == "up"  # a warning is not an outage

    https_target.expiring_in(300)
    await check_now(client, cast, monitor)
    incidents = await incidents_of(client, cast, monitor)
    assert [i["status"] for i in incidents] == ["resolved", "resolved"]
    said = {i["updates"][-1]["message"].rsplit(", ", 1)[-1] for i in incidents}
    assert said == {"no longer fewer than 14.", "no longer fewer than 7."}
    async with app.state.runtime.db.sessionmaker() as session:
        events = (await session.scalars(select(Alert.event))).all()
        stored = await session.get(Monitor, monitor["id"])
    assert stored is not None
    state = stored.state or {}
    # Opened and resolved, each incident told the project's provider.
    assert sorted(events) == sorted(
        ["incident.opened", "incident.opened", "incident.resolved", "incident.resolved"]
    )
    assert state["certificate"] == {"open": {}}
    assert state["regions"]  # the status machine's state is still beside it


async def test_a_monitors_own_warning_days_decide_which_incidents_open(
    client: httpx.AsyncClient, cast: Cast, https_target: HttpsTarget
) -> None:
    monitor = await create_monitor(
        client,
        cast.alice,
        cast.project_id,
        url=https_target.url,
        certificateWarningDays=[30, 3],
    )
    https_target.expiring_in(20)

    await check_now(client, cast, monitor)

    assert opened(await incidents_of(client, cast, monitor)) == {
        ("Certificate of 127.0.0.1 expires in 20 days", "low")
    }


async def test_a_tls_monitor_is_down_below_the_largest_of_its_warning_days(
    client: httpx.AsyncClient, cast: Cast, https_target: HttpsTarget
) -> None:
    https_target.expiring_in(20)
    fields = {"type": "tls", "host": "127.0.0.1", "port": https_target.port, "retries": 0}
    default = await create_monitor(client, cast.alice, cast.project_id, **fields)
    longer = await create_monitor(
        client, cast.alice, cast.project_id, **fields, certificateWarningDays=[30]
    )

    assert (await check_now(client, cast, default))["status"] == "up"
    refused = await check_now(client, cast, longer)

    assert (refused["status"], refused["errorKind"]) == ("down", "certificate_expiry")
    assert refused["certificateDays"] == 20
    assert "under 30" in refused["error"]
    # Down (its outage incident) and warned, under its one warning day.
    assert opened(await incidents_of(client, cast, longer)) == {
        ("Shop is down", "high"),
        ("Certificate of 127.0.0.1 expires in 20 days", "medium"),
    }
