"""Escalation, reminders and acknowledgement end to end, with a controlled clock and real
local receivers: a monitor goes down, step 1 is alerted, no one acknowledges, step 2 is paged
after its delay, step 1 is reminded, a member acknowledges (reminders stop), the monitor
recovers and everyone who was alerted is told."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.app_settings import overriding
from tests.conftest import Account, Cast, InProject, assert_problem, eventually
from tests.factories import Target, create_provider, ingest, log_in
from tests.receivers import Receiver
from upwatch.escalation import pager as pager_module
from upwatch.kit.clock import ManualClock

settings_overrides = overriding(
    allow_private_targets=True,
    alert_poll_seconds=0.1,
    # The test pages by the clock it controls; the loop's own passes come too seldom to
    # matter.
    pager_poll_seconds=3600.0,
)


def move_to(clock: ManualClock, moment: datetime) -> None:
    clock.advance(moment - clock.now())


async def fresh_token(client: httpx.AsyncClient, account: Account) -> dict[str, str]:
    answer = await log_in(client, account.email, account.password)
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


def events(receiver: Receiver, path: str) -> list[str]:
    return [r.json()["event"] for r in receiver.to(path)]


async def webhook(
    client: httpx.AsyncClient, cast: Cast, receiver: Receiver, path: str, **fields: Any
) -> str:
    provider = await create_provider(
        client,
        cast.alice.headers,
        cast.project_id,
        type="webhook",
        name=path.strip("/"),
        config={"url": receiver.url(path)},
        **fields,
    )
    return str(provider["id"])


async def test_an_unacknowledged_outage_escalates_reminds_stops_at_acknowledgement_and_tells_everyone_alerted_of_the_recovery(  # noqa: E501
    app: FastAPI,
    client: httpx.AsyncClient,
    cast: Cast,
    clock: ManualClock,
    receiver: Receiver,
    target: Target,
    as_alice: InProject,
) -> None:
    # Checks the engine makes as the clock moves agree with the results the test ingests.
    target.status = 503
    on_call = await webhook(client, cast, receiver, "/on-call", repeatEveryMinutes=5)
    manager = await webhook(client, cast, receiver, "/manager")
    await webhook(client, cast, receiver, "/bystander", repeatEveryMinutes=5)
    policy = await as_alice.post(
        "/escalation-policies",
        name="Shop on call",
        steps=[
            {"providerIds": [on_call], "delayMinutes": 0},
            {"providerIds": [manager], "delayMinutes": 10},
        ],
    )
    assert policy.status_code == 201, policy.text
    monitor = await as_alice.monitor(
        url=target.url, retries=0, intervalSeconds=300, escalationPolicyId=policy.json()["id"]
    )
    assert monitor["escalationPolicyId"] == policy.json()["id"]
    engine, pager = app.state.engine, app.state.pager
    opened = clock.now()

    await ingest(engine, monitor["id"], opened, ok=False)
    await eventually(lambda: events(receiver, "/on-call") == ["incident.opened"])
    assert events(receiver, "/manager") == []  # step 2 waits for its delay

    move_to(clock, opened + timedelta(minutes=5))
    assert await pager.page_due() == 1  # a reminder to step 1
    await eventually(lambda: len(receiver.to("/on-call")) == 2)
    assert receiver.to("/on-call")[1].json()["summary"].startswith("STILL DOWN: Shop")

    move_to(clock, opened + timedelta(minutes=10))
    assert await pager.page_due() == 1  # step 2, and step 1's second reminder
    assert await pager.page_due() == 0  # nothing twice
    await eventually(lambda: events(receiver, "/manager") == ["incident.opened"])
    await eventually(lambda: len(receiver.to("/on-call")) == 3)

    listed = await client.get(
        "/incidents", headers=cast.bob.headers, params={"monitorId": monitor["id"]}
    )
    incident = listed.json()[0]
    assert incident["escalationStep"] == 2
    acknowledged = await client.post(
        f"/incidents/{incident['id']}/acknowledge", headers=cast.bob.headers
    )
    assert acknowledged.status_code == 200, acknowledged.text
    taken = acknowledged.json()
    assert taken["acknowledgedBy"] == cast.bob.id
    assert taken["acknowledgedAt"] is not None
    entry = taken["updates"][-1]
    assert (entry["message"], entry["internal"]) == ("Acknowledged by bob@example.com.", True)
    assert any("escalated to step 2" in u["message"] for u in taken["updates"])
    again = await client.post(f"/incidents/{incident['id']}/acknowledge", headers=cast.bob.headers)
    assert_problem(again, 409)

    move_to(clock, opened + timedelta(minutes=60))
    assert await pager.page_due() == 0  # acknowledged: no reminder, no step

    target.status = 200
    move_to(clock, opened + timedelta(minutes=61))
    await ingest(engine, monitor["id"], clock.now(), ok=True)
    await eventually(lambda: events(receiver, "/manager")[-1:] == ["incident.resolved"])
    await eventually(lambda: events(receiver, "/on-call")[-1:] == ["incident.resolved"])
    assert events(receiver, "/on-call") == [
        "incident.opened",
        "incident.reminder",
        "incident.reminder",
        "incident.resolved",
    ]
    assert events(receiver, "/bystander") == []  # not in the policy: never paged
    bob = await fresh_token(client, cast.bob)  # the clock moved past the first one's life
    alerts = await client.get(f"/incidents/{incident['id']}/alerts", headers=bob)
    assert {a["providerId"] for a in alerts.json()} == {on_call, manager}  # no personal channel
    resolved = await client.post(f"/incidents/{incident['id']}/acknowledge", headers=bob)
    assert_problem(resolved, 409)


async def test_without_a_policy_every_provider_is_alerted_and_reminded_until_resolution(
    app: FastAPI,
    client: httpx.AsyncClient,
    cast: Cast,
    clock: ManualClock,
    receiver: Receiver,
    target: Target,
    as_alice: InProject,
) -> None:
    target.status = 503
    await webhook(client, cast, receiver, "/repeating", repeatEveryMinutes=30)
    await webhook(client, cast, receiver, "/once")
    monitor = await as_alice.monitor(url="http://127.0.0.1:9/", retries=0, intervalSeconds=300)
    engine, pager = app.state.engine, app.state.pager
    opened = clock.now()
    await ingest(engine, monitor["id"], opened, ok=False)
    await eventually(lambda: len(receiver.received) == 2)
    move_to(clock, opened + timedelta(minutes=29))
    assert await pager.page_due() == 0
    move_to(clock, opened + timedelta(minutes=30))
    assert await pager.page_due() == 1
    await eventually(lambda: events(receiver, "/repeating")[-1:] == ["incident.reminder"])
    target.status = 200
    move_to(clock, opened + timedelta(minutes=31))
    await ingest(engine, monitor["id"], clock.now(), ok=True)
    await eventually(lambda: len(receiver.received) == 5)
    move_to(clock, opened + timedelta(minutes=120))
    assert await pager.page_due() == 0  # resolved: no more reminders
    assert events(receiver, "/once") == ["incident.opened", "incident.resolved"]


async def test_one_pass_reaches_every_open_incident_and_a_paused_monitor_reminds_no_one(
    app: FastAPI,
    client: httpx.AsyncClient,
    cast: Cast,
    clock: ManualClock,
    receiver: Receiver,
    target: Target,
    monkeypatch: pytest.MonkeyPatch,
    as_alice: InProject,
) -> None:
    monkeypatch.setattr(pager_module, "BATCH", 1)  # every incident on a page of its own
    target.status = 503
    await webhook(client, cast, receiver, "/repeating", repeatEveryMinutes=10)
    monitors = [
        await as_alice.monitor(name=name, url=target.url, retries=0, intervalSeconds=300)
        for name in ("Shop", "API", "Admin")
    ]  # fmt: skip
    engine, pager, opened = app.state.engine, app.state.pager, clock.now()
    for monitor in monitors:
        await ingest(engine, monitor["id"], opened, ok=False)
    await eventually(lambda: len(receiver.received) == 3)
    move_to(clock, opened + timedelta(minutes=10))
    assert await pager.page_due() == 3
    paused = await client.patch(
        f"/monitors/{monitors[0]['id']}", headers=cast.alice.headers, json={"isActive": False}
    )
    assert paused.status_code == 200, paused.text
    move_to(clock, opened + timedelta(minutes=20))
    assert await pager.page_due() == 2  # the paused monitor's incident is left alone
