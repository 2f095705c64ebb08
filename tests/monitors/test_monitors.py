"""Monitors through the HTTP API with the engine running against real local targets."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.app_settings import fixture_value, overriding
from tests.conftest import Account, Cast, InProject, SignUp, assert_problem, eventually, lifespan
from tests.factories import FAST_PLANS, Target, create_monitor, post_in_project
from upwatch.kit.clock import Clock

Promote = Callable[[Account, str], Awaitable[None]]


@pytest.fixture
def clock() -> Clock:
    return Clock()  # the engine schedules on real time


@pytest.fixture
def plans_file(tmp_path: Path) -> Path:
    path = tmp_path / "plans.toml"
    # Ten-second intervals (no minimum) and room for three monitors.
    path.write_text(FAST_PLANS)
    return path


settings_overrides = overriding(allow_private_targets=True, plans_file=fixture_value("plans_file"))


_monitor = create_monitor


async def _watching(
    client: httpx.AsyncClient, cast: Cast, target: Target, **fields: Any
) -> dict[str, Any]:
    """Alice's monitor of the target, as create_monitor makes it unless ``fields`` say otherwise."""
    return await create_monitor(client, cast.alice, cast.project_id, url=target.url, **fields)


async def test_creating_an_http_monitor_answers_201_with_every_field(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _watching(
        client, cast, target, expectedStatusCodes=[200], keyword="go", retries=1
    )
    assert {
        k: monitor[k]
        for k in (
            "projectId",
            "type",
            "url",
            "method",
            "intervalSeconds",
            "retries",
            "isActive",
            "status",
            "regionIds",
        )
    } == {
        "projectId": cast.project_id,
        "type": "http",
        "url": target.url,
        "method": "GET",
        "intervalSeconds": 60,
        "retries": 1,
        "isActive": True,
        "status": "pending",
        "regionIds": [],
    }
    assert monitor["heartbeatUrl"] is None


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"type": "http"}, "url"),
        ({"type": "tcp", "host": "example.com"}, "port"),
        ({"type": "http", "url": "ftp://example.com"}, "url"),
        ({"type": "http", "url": "https://example.com", "intervalSeconds": 5}, "intervalSeconds"),
        ({"type": "carrier-pigeon"}, "type"),
        ({"type": "http", "url": "https://example.com", "regionIds": ["nowhere"]}, "regionIds"),
    ],
)
async def test_monitor_fields_are_validated(
    client: httpx.AsyncClient, cast: Cast, fields: dict[str, Any], field: str
) -> None:
    body = {"projectId": cast.project_id, "name": "x", **fields}
    response = await client.post("/monitors", headers=cast.alice.headers, json=body)
    problem = assert_problem(response, 422)
    assert any(field in e["field"] for e in problem["errors"]), problem


async def test_the_first_scheduled_check_runs_within_seconds_and_is_stored(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _watching(client, cast, target)

    async def checked() -> bool:
        got = await client.get(f"/monitors/{monitor['id']}", headers=cast.alice.headers)
        return bool(got.json()["lastCheckedAt"])

    await eventually(checked, within=15)
    current = (await client.get(f"/monitors/{monitor['id']}", headers=cast.alice.headers)).json()
    assert current["status"] == "up"
    checks = await client.get(f"/monitors/{monitor['id']}/checks", headers=cast.alice.headers)
    [result] = checks.json()
    assert (result["status"], result["statusCode"]) == ("up", 200)
    assert result["responseTimeMs"] > 0
    assert target.hits >= 1


async def test_check_now_is_stored_and_moves_the_status_like_a_scheduled_check(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _watching(client, cast, target, retries=1, intervalSeconds=3600)
    url = f"/monitors/{monitor['id']}"

    async def scheduled_first_check_stored() -> bool:
        listed = await client.get(f"{url}/checks", headers=cast.alice.headers)
        return listed.headers["X-Total-Count"] == "1"

    # A new monitor is checked by the scheduler within seconds; the next is an hour away, so
    # from here on only the checks asked for below are made.
    await eventually(scheduled_first_check_stored)
    first = await client.post(f"{url}/check", headers=cast.alice.headers)
    assert first.status_code == 200
    assert first.json()["status"] == "up"
    assert (await client.get(url, headers=cast.alice.headers)).json()["status"] == "up"

    target.status = 503
    failed = await client.post(f"{url}/check", headers=cast.alice.headers)
    assert (failed.json()["status"], failed.json()["statusCode"]) == ("down", 503)
    assert failed.json()["errorKind"] == "status_code"
    # One failure is within the retries: still up.
    assert (await client.get(url, headers=cast.alice.headers)).json()["status"] == "up"
    await client.post(f"{url}/check", headers=cast.alice.headers)
    assert (await client.get(url, headers=cast.alice.headers)).json()["status"] == "down"

    target.status = 200
    await client.post(f"{url}/check", headers=cast.alice.headers)
    assert (await client.get(url, headers=cast.alice.headers)).json()["status"] == "up"
    checks = await client.get(f"{url}/checks", headers=cast.alice.headers)
    # Newest first; the oldest is the scheduled first check.
    assert [c["status"] for c in checks.json()] == ["up", "down", "down", "up", "up"]
    assert checks.headers["X-Total-Count"] == "5"


async def test_a_stored_check_carries_the_phase_timings_its_probe_measured(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _watching(client, cast, target)
    url = f"/monitors/{monitor['id']}"
    checked = (await client.post(f"{url}/check", headers=cast.alice.headers)).json()
    timings = checked["timings"]
    assert set(timings) == {"dnsMs", "connectMs", "tlsMs", "firstByteMs", "totalMs"}
    assert timings["tlsMs"] is None  # plain HTTP
    assert 0 < timings["firstByteMs"] <= timings["totalMs"]
    listed = (await client.get(f"{url}/checks", headers=cast.alice.headers)).json()
    [stored] = [c for c in listed if c["id"] == checked["id"]]
    assert stored["timings"] == timings


async def test_a_missing_keyword_is_a_down_check_that_says_so(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _watching(client, cast, target, keyword="checkout", intervalSeconds=3600)
    result = await client.post(f"/monitors/{monitor['id']}/check", headers=cast.alice.headers)
    assert (result.json()["status"], result.json()["errorKind"]) == ("down", "keyword")


async def test_stats_report_uptime_and_percentiles(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _watching(client, cast, target, intervalSeconds=3600)
    url = f"/monitors/{monitor['id']}"
    for status in (200, 200, 200, 500):
        target.status = status
        await client.post(f"{url}/check", headers=cast.alice.headers)
    for period in ("24h", "7d", "90d"):
        stats = (
            await client.get(f"{url}/stats?period={period}", headers=cast.alice.headers)
        ).json()
        assert (stats["totalChecks"], stats["upChecks"], stats["downChecks"]) == (4, 3, 1)
        assert stats["uptimePercentage"] == 75.0
        assert 0 < stats["p50ResponseTimeMs"] <= stats["p99ResponseTimeMs"]
    assert_problem(await client.get(f"{url}/stats?period=1y", headers=cast.alice.headers), 422)


async def test_pausing_stops_checks_and_resuming_starts_from_pending(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _watching(client, cast, target, intervalSeconds=3600)
    url = f"/monitors/{monitor['id']}"
    await client.post(f"{url}/check", headers=cast.alice.headers)
    paused = await client.patch(url, headers=cast.alice.headers, json={"isActive": False})
    assert (paused.json()["isActive"], paused.json()["status"]) == (False, "paused")
    assert_problem(await client.post(f"{url}/check", headers=cast.alice.headers), 409)
    resumed = await client.patch(url, headers=cast.alice.headers, json={"isActive": True})
    assert resumed.json()["status"] == "pending"


async def test_monitor_count_and_check_frequency_are_plan_limits(
    client: httpx.AsyncClient, cast: Cast, target: Target, plans_file: Path, as_alice: InProject
) -> None:
    for n in range(3):
        await _watching(client, cast, target, name=f"m{n}", intervalSeconds=3600)
    response = await as_alice.post("/monitors", name="one too many", type="http", url=target.url)
    problem = assert_problem(response, 402)
    assert "monitorCount" in problem["detail"]
    usage = (await client.get("/subscriptions/current", headers=cast.alice.headers)).json()
    assert usage["usage"]["monitors"]["current"] == 3


async def test_a_members_monitors_count_against_the_project_owners_limit_not_the_members(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    await _watching(client, cast, target, name="alice's", intervalSeconds=3600)
    for n in range(2):
        await create_monitor(client, cast.bob, cast.project_id, url=target.url, name=f"bob's {n}")
    over = await post_in_project(
        client, cast.bob, cast.project_id, "/monitors", name="x", type="http", url=target.url
    )
    assert "monitorCount" in assert_problem(over, 402)["detail"]
    own = await client.post("/projects", headers=cast.bob.headers, json={"name": "Bob's"})
    assert own.status_code == 201, own.text
    await create_monitor(client, cast.bob, own.json()["id"], url=target.url, name="in his own")


async def test_concurrent_creates_stop_exactly_at_the_monitor_limit(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    creates = [
        post_in_project(
            client,
            cast.bob if n % 2 else cast.alice,
            cast.project_id,
            "/monitors",
            name=f"m{n}",
            type="http",
            url=target.url,
            intervalSeconds=3600,
        )
        for n in range(8)
    ]
    statuses = sorted(r.status_code for r in await asyncio.gather(*creates))
    assert statuses == [201] * 3 + [402] * 5


async def test_charlie_gets_404_on_every_monitor_route(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _monitor(
        client, cast.bob, cast.project_id, url=target.url, intervalSeconds=3600
    )
    url = f"/monitors/{monitor['id']}"
    for method, path, body in (
        ("GET", url, None),
        ("PATCH", url, {"name": "mine"}),
        ("DELETE", url, None),
        ("POST", f"{url}/check", None),
        ("GET", f"{url}/checks", None),
        ("GET", f"{url}/stats", None),
    ):
        response = await client.request(method, path, headers=cast.charlie.headers, json=body)
        assert_problem(response, 404)
    create = await post_in_project(
        client, cast.charlie, cast.project_id, "/monitors", name="x", type="http", url=target.url
    )
    assert_problem(create, 404)
    assert (await client.get("/monitors", headers=cast.charlie.headers)).json() == []
    # Bob (a member) created it; Alice (the owner) sees it too.
    listing = await client.get(f"/monitors?projectId={cast.project_id}", headers=cast.alice.headers)
    assert [m["id"] for m in listing.json()] == [monitor["id"]]


@pytest.mark.parametrize(
    "path",
    [
        "/monitors?projectId=",
        "/incidents?projectId=",
        "/incidents?monitorId=",
        "/notification-providers/user?projectId=",
        "/dashboard/uptime?projectId=",
    ],
)
async def test_a_list_narrowed_to_a_malformed_id_answers_422_naming_the_rule(
    client: httpx.AsyncClient, cast: Cast, path: str
) -> None:
    response = await client.get(path + "not-an-id", headers=cast.alice.headers)
    body = assert_problem(response, 422)
    assert "32 hexadecimal characters" in str(body), body


async def test_deleting_a_monitor_removes_it(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _watching(client, cast, target, intervalSeconds=3600)
    url = f"/monitors/{monitor['id']}"
    await client.post(f"{url}/check", headers=cast.alice.headers)
    deleted = await client.delete(url, headers=cast.alice.headers)
    assert deleted.json() == {"id": monitor["id"], "deleted": True}
    assert_problem(await client.get(url, headers=cast.alice.headers), 404)


async def test_a_heartbeat_monitor_has_a_url_its_job_calls(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    monitor = await _monitor(client, cast.alice, cast.project_id, type="heartbeat")
    heartbeat = monitor["heartbeatUrl"]
    assert heartbeat.startswith("http://upwatch.test/heartbeat/")
    path = heartbeat.removeprefix("http://upwatch.test")
    assert (await client.post(path)).json() == {"ok": True}
    assert (await client.get(path)).status_code == 200
    assert_problem(await client.post("/heartbeat/not-a-token"), 404)
    result = await client.post(f"/monitors/{monitor['id']}/check", headers=cast.alice.headers)
    assert result.json()["status"] == "up"


class TestWithoutPrivateTargets:
    settings_overrides = overriding(
        allow_private_targets=False, plans_file=fixture_value("plans_file")
    )

    @pytest.mark.parametrize(
        "fields",
        [
            {"type": "http", "url": "http://127.0.0.1:8080/"},
            {"type": "http", "url": "http://localhost/"},
            {"type": "http", "url": "http://[::1]/"},
            {"type": "http", "url": "http://169.254.169.254/latest/meta-data"},
            {"type": "tcp", "host": "10.0.0.1", "port": 22},
        ],
    )
    async def test_internal_targets_are_refused_with_422(
        self, client: httpx.AsyncClient, cast: Cast, fields: dict[str, Any]
    ) -> None:
        body = {"projectId": cast.project_id, "name": "sneaky", **fields}
        response = await client.post("/monitors", headers=cast.alice.headers, json=body)
        assert_problem(response, 422)


async def test_regions_list_local_online_and_admins_manage_the_rest(
    client: httpx.AsyncClient, cast: Cast, make_admin: Promote, sign_up: SignUp, target: Target
) -> None:
    listing = await client.get("/regions", headers=cast.charlie.headers)
    [local] = listing.json()
    assert (local["code"], local["builtin"], local["online"]) == ("local", True, True)
    assert local["workers"] == 1  # the embedded worker process
    assert_problem(
        await client.post(
            "/regions", headers=cast.alice.headers, json={"code": "eu-west", "name": "EU West"}
        ),
        403,
    )
    admin = await sign_up("root@example.com")
    await make_admin(admin, "admin")
    created = await client.post(
        "/regions", headers=admin.headers, json={"code": "eu-west", "name": "EU West"}
    )
    assert created.status_code == 201
    assert created.json()["online"] is False
    assert created.json()["workers"] == 0
    assert_problem(
        await client.post(
            "/regions", headers=admin.headers, json={"code": "eu-west", "name": "again"}
        ),
        409,
    )
    region_id = created.json()["id"]
    monitor = await _watching(
        client,
        cast,
        target,
        regionIds=[local["id"], region_id],
        intervalSeconds=3600,
    )
    assert_problem(await client.delete(f"/regions/{region_id}", headers=cast.alice.headers), 403)
    assert_problem(await client.delete(f"/regions/{local['id']}", headers=admin.headers), 409)
    assert (await client.delete(f"/regions/{region_id}", headers=admin.headers)).status_code == 200
    assert_problem(await client.delete(f"/regions/{region_id}", headers=admin.headers), 404)
    current = await client.get(f"/monitors/{monitor['id']}", headers=cast.alice.headers)
    assert current.json()["regionIds"] == [local["id"]]


async def test_in_loopback_only_mode_a_public_target_is_refused_without_any_lookup(
    client: httpx.AsyncClient, cast: Cast, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def no_lookups(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a DNS lookup was attempted")

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", no_lookups)
    for fields in (
        {"type": "http", "url": "https://example.com/"},
        {"type": "tcp", "host": "example.com", "port": 443},
        {"type": "http", "url": "http://93.184.216.34/"},
        {"type": "dns", "host": "example.com"},
    ):
        monitor = await _monitor(
            client, cast.alice, cast.project_id, intervalSeconds=3600, **fields
        )
        result = await client.post(f"/monitors/{monitor['id']}/check", headers=cast.alice.headers)
        assert (result.json()["status"], result.json()["errorKind"]) == ("down", "refused_target")
        await client.delete(f"/monitors/{monitor['id']}", headers=cast.alice.headers)


async def test_a_monitors_regions_report_the_last_24_hours(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _watching(client, cast, target, intervalSeconds=3600)
    url = f"/monitors/{monitor['id']}"
    for status in (200, 500):
        target.status = status
        await client.post(f"{url}/check", headers=cast.alice.headers)
    body = (await client.get(f"{url}/regions", headers=cast.bob.headers)).json()
    assert body["monitorId"] == monitor["id"]
    [local] = body["regions"]
    assert (local["code"], local["totalChecks"], local["uptimePercentage"]) == ("local", 2, 50.0)
    assert local["status"] == "down"  # retries 0: one failure is an outage
    assert local["lastCheckedAt"]
    assert_problem(await client.get(f"{url}/regions", headers=cast.charlie.headers), 404)


async def test_the_dashboard_lists_every_visible_monitor_with_its_figures(
    client: httpx.AsyncClient,
    cast: Cast,
    target: Target,
    app: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only the checks below count: the scheduler never hears of these monitors, so its first
    # check (due within seconds) cannot race them on a slow machine.
    monkeypatch.setattr(app.state.engine, "changed", lambda _monitor_id: None)
    monitor = await _watching(client, cast, target, intervalSeconds=3600)
    quiet = await _watching(client, cast, target, name="quiet", intervalSeconds=3600)
    for _ in range(3):
        await client.post(f"/monitors/{monitor['id']}/check", headers=cast.alice.headers)
    uptime = (await client.get("/dashboard/uptime", headers=cast.bob.headers)).json()
    rows = {item["monitorId"]: item for item in uptime}
    assert set(rows) == {monitor["id"], quiet["id"]}
    assert (rows[monitor["id"]]["uptime24h"], rows[monitor["id"]]["uptime7d"]) == (100.0, 100.0)
    assert rows[quiet["id"]]["uptime24h"] is None
    performance = (
        await client.get("/dashboard/performance-metrics", headers=cast.alice.headers)
    ).json()
    busy = next(p for p in performance if p["monitorId"] == monitor["id"])
    assert busy["checks24h"] == 3
    assert busy["p95ResponseTimeMs"] >= busy["p50ResponseTimeMs"] > 0
    assert (await client.get("/dashboard/uptime", headers=cast.charlie.headers)).json() == []
    assert_problem(await client.get("/dashboard/uptime"), 401)


async def test_the_dashboard_narrows_to_the_project_named_by_project_id(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    shared = await _monitor(
        client, cast.alice, cast.project_id, type="heartbeat", intervalSeconds=3600
    )
    created = await client.post("/projects", headers=cast.bob.headers, json={"name": "Bob's"})
    assert created.status_code == 201, created.text
    own_project = created.json()["id"]
    own = await _monitor(client, cast.bob, own_project, type="heartbeat", intervalSeconds=3600)
    for path in ("/dashboard/uptime", "/dashboard/performance-metrics"):

        async def listed(account: Account, path: str = path, **params: str) -> list[str]:
            response = await client.get(path, headers=account.headers, params=params)
            assert response.status_code == 200, response.text
            return [item["monitorId"] for item in response.json()]

        assert sorted(await listed(cast.bob)) == sorted([shared["id"], own["id"]])
        assert await listed(cast.bob, projectId=cast.project_id) == [shared["id"]]
        assert await listed(cast.bob, projectId=own_project) == [own["id"]]
        # Like every list of project rows: someone else's project lists nothing.
        assert await listed(cast.alice, projectId=own_project) == []
        assert await listed(cast.charlie, projectId=cast.project_id) == []
        assert await listed(cast.bob, projectId="0" * 32) == []


def _series(text: str, name: str, monitor_id: str) -> tuple[str, float] | None:
    """(labels, value) of ``name``'s series for ``monitor_id`` in a /metrics page."""
    for line in text.splitlines():
        if line.startswith(name + "{") and f'monitor="{monitor_id}"' in line:
            labels, value = line.rsplit(" ", 1)
            return labels[len(name) :], float(value)
    return None


async def test_metrics_carry_each_monitors_status_and_response_time_until_paused_or_deleted(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    async def series(monitor_id: str) -> dict[str, tuple[str, float] | None]:
        page = (await client.get("/metrics")).text
        return {
            name: _series(page, name, monitor_id)
            for name in ("upwatch_monitor_up", "upwatch_monitor_response_seconds")
        }

    paused = await _watching(client, cast, target, intervalSeconds=3600)
    deleted = await _watching(client, cast, target, name="b", intervalSeconds=3600)
    assert await series(paused["id"]) == {
        "upwatch_monitor_up": None,
        "upwatch_monitor_response_seconds": None,
    }

    async def scheduled_first_checks_stored() -> bool:
        for monitor in (paused, deleted):
            listed = await client.get(
                f"/monitors/{monitor['id']}/checks", headers=cast.alice.headers
            )
            if listed.headers["X-Total-Count"] != "1":
                return False
        return True

    # The scheduler checks a new monitor within seconds: its result, still on its way to the
    # database, could otherwise land after the failing check below and move the status back.
    await eventually(scheduled_first_checks_stored)
    for monitor in (paused, deleted):
        checked = await client.post(f"/monitors/{monitor['id']}/check", headers=cast.alice.headers)
        assert checked.status_code == 200, checked.text
    labels = f'{{monitor="{paused["id"]}",project="{cast.project_id}"}}'
    shown = await series(paused["id"])
    assert shown["upwatch_monitor_up"] == (labels, 1.0)
    response = shown["upwatch_monitor_response_seconds"]
    assert response is not None
    assert response[0] == labels
    assert 0 < response[1] < 5
    target.status = 503
    await client.post(f"/monitors/{paused['id']}/check", headers=cast.alice.headers)
    assert (await series(paused["id"]))["upwatch_monitor_up"] == (labels, 0.0)

    url = f"/monitors/{paused['id']}"
    await client.patch(url, headers=cast.alice.headers, json={"isActive": False})
    await client.delete(f"/monitors/{deleted['id']}", headers=cast.alice.headers)

    async def gone() -> bool:
        shown = [await series(monitor["id"]) for monitor in (paused, deleted)]
        return all(value is None for values in shown for value in values.values())

    await eventually(gone)


async def test_a_monitor_deleted_with_its_project_leaves_the_schedule_and_the_metrics(
    client: httpx.AsyncClient, cast: Cast, target: Target, app: Any
) -> None:
    monitor = await _watching(client, cast, target, intervalSeconds=10)

    async def shown() -> bool:
        return (
            _series((await client.get("/metrics")).text, "upwatch_monitor_up", monitor["id"])
            is not None
        )

    await eventually(shown)  # its first scheduled check
    deleted = await client.delete(f"/projects/{cast.project_id}", headers=cast.alice.headers)
    assert deleted.status_code == 200, deleted.text
    # Nothing tells the scheduler; its next check finds the monitor gone and drops it.
    hits = target.hits
    await eventually(lambda: target.hits > hits, within=30)

    async def dropped() -> bool:
        return not await shown()

    await eventually(dropped)
    assert app.state.engine.scheduler.spec(monitor["id"]) is None


async def test_checks_resume_on_schedule_after_a_restart_with_no_monitor_lost(
    client: httpx.AsyncClient,
    cast: Cast,
    target: Target,
    app: Any,
    settings: Any,
    clock: Clock,
) -> None:

    from upwatch.app import create_app

    ids = [
        (
            await _watching(
                client,
                cast,
                target,
                name=f"m{n}",
                intervalSeconds=10,
            )
        )["id"]
        for n in range(3)
    ]

    async def all_checked(after: dict[str, str | None]) -> bool:
        for monitor_id in ids:
            got = (await client.get(f"/monitors/{monitor_id}", headers=cast.alice.headers)).json()
            if got["lastCheckedAt"] is None or got["lastCheckedAt"] == after.get(monitor_id):
                return False
        return True

    await eventually(lambda: all_checked({}), within=20)
    before = {
        m: (await client.get(f"/monitors/{m}", headers=cast.alice.headers)).json()["lastCheckedAt"]
        for m in ids
    }
    # The first service stops checking (as if it had died); a new one on the same database
    # must pick every monitor up from where it was, within about one interval.
    from upwatch.app import stop_tasks

    await stop_tasks(app.state.runtime.supervisor.tasks)
    await app.state.engine.close()
    restarted = create_app(settings, clock)
    async with lifespan(restarted):
        transport = httpx.ASGITransport(app=restarted)
        async with httpx.AsyncClient(transport=transport, base_url="http://upwatch.test") as fresh:

            async def resumed() -> bool:
                for monitor_id in ids:
                    got = (
                        await fresh.get(f"/monitors/{monitor_id}", headers=cast.alice.headers)
                    ).json()
                    if got["lastCheckedAt"] == before[monitor_id]:
                        return False
                return True

            await eventually(resumed, within=25)
            assert restarted.state.engine.scheduler.monitors == 3


async def test_checks_appear_in_the_metrics(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _watching(client, cast, target)

    async def scheduled_check_seen() -> bool:
        text = (await client.get("/metrics")).text
        return 'upwatch_checks_total{outcome="up",type="http"}' in text

    # The scheduled first check goes through the worker, which times it.
    await eventually(scheduled_check_seen, within=15)
    text = (await client.get("/metrics")).text
    assert "upwatch_check_lateness_seconds_count" in text
    assert 'upwatch_probe_duration_seconds_count{type="http"}' in text
    await client.delete(f"/monitors/{monitor['id']}", headers=cast.alice.headers)


@pytest.mark.parametrize(
    ("kind", "fields", "removed"),
    [
        ("http", {"url": "http://127.0.0.1:9/"}, "url"),
        ("tcp", {"host": "127.0.0.1", "port": 9}, "port"),
        ("tls", {"host": "127.0.0.1"}, "host"),
    ],
)
async def test_an_update_cannot_remove_what_a_monitor_checks(
    client: httpx.AsyncClient, cast: Cast, kind: str, fields: dict[str, Any], removed: str
) -> None:
    monitor = await _monitor(
        client, cast.alice, cast.project_id, type=kind, intervalSeconds=3600, **fields
    )
    response = await client.patch(
        f"/monitors/{monitor['id']}", headers=cast.alice.headers, json={removed: None}
    )
    problem = assert_problem(response, 422)
    assert problem["errors"][0]["field"] == removed


class TestOnTheDefaultFreePlan:
    settings_overrides = overriding(allow_private_targets=True)

    async def test_checking_more_often_than_the_plan_allows_is_a_402(
        self, client: httpx.AsyncClient, cast: Cast, target: Target
    ) -> None:
        body = {
            "projectId": cast.project_id,
            "name": "eager",
            "type": "http",
            "url": target.url,
            "intervalSeconds": 60,
        }
        problem = assert_problem(
            await client.post("/monitors", headers=cast.alice.headers, json=body), 402
        )
        assert "checkFrequencyMinutes" in problem["detail"]
        created = await client.post(
            "/monitors", headers=cast.alice.headers, json={**body, "intervalSeconds": 300}
        )
        assert created.status_code == 201
        # Omitted, the interval is the plan's shortest.
        default = await client.post(
            "/monitors",
            headers=cast.alice.headers,
            json={k: v for k, v in body.items() if k != "intervalSeconds"},
        )
        assert default.json()["intervalSeconds"] == 300
        faster = await client.patch(
            f"/monitors/{created.json()['id']}",
            headers=cast.alice.headers,
            json={"intervalSeconds": 120},
        )
        assert_problem(faster, 402)


async def test_stored_results_filter_by_time_and_region(
    client: httpx.AsyncClient, cast: Cast, target: Target
) -> None:
    monitor = await _watching(client, cast, target, intervalSeconds=3600)
    url = f"/monitors/{monitor['id']}"
    first = (await client.post(f"{url}/check", headers=cast.alice.headers)).json()
    second = (await client.post(f"{url}/check", headers=cast.alice.headers)).json()
    since = await client.get(
        f"{url}/checks", headers=cast.alice.headers, params={"from": second["checkedAt"]}
    )
    assert [c["id"] for c in since.json()] == [second["id"]]
    until = await client.get(
        f"{url}/checks", headers=cast.alice.headers, params={"to": first["checkedAt"]}
    )
    assert [c["id"] for c in until.json()] == [first["id"]]
    here = await client.get(
        f"{url}/checks", headers=cast.alice.headers, params={"regionId": first["regionId"]}
    )
    assert len(here.json()) == 2
    elsewhere = await client.get(
        f"{url}/checks", headers=cast.alice.headers, params={"regionId": "0" * 32}
    )
    assert elsewhere.json() == []
    bad = await client.get(
        f"{url}/checks", headers=cast.alice.headers, params={"from": "yesterday-ish"}
    )
    assert_problem(bad, 422)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/monitors"),
        ("POST", "/monitors"),
        ("GET", "/monitors/x"),
        ("PATCH", "/monitors/x"),
        ("DELETE", "/monitors/x"),
        ("POST", "/monitors/x/check"),
        ("GET", "/monitors/x/checks"),
        ("GET", "/monitors/x/stats"),
        ("GET", "/monitors/x/regions"),
        ("GET", "/regions"),
        ("POST", "/regions"),
        ("DELETE", "/regions/x"),
        ("GET", "/dashboard/performance-metrics"),
    ],
)
async def test_monitor_and_region_routes_need_a_token(
    client: httpx.AsyncClient, method: str, path: str
) -> None:
    response = await client.request(method, path, json={} if method in {"POST", "PATCH"} else None)
    assert_problem(response, 401)
