"""UPWATCH_EDITION=selfhosted: new accounts get a plan without limits and nothing to upgrade."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.app_settings import overriding
from tests.conftest import Account, assert_problem
from tests.factories import create_monitor
from upwatch.kit.plans import UNLIMITED, PlanCatalog
from upwatch.notifications.channels import plan_channels

settings_overrides = overriding(edition="selfhosted", allow_private_targets=True)


async def test_a_self_hosted_account_has_no_limits_and_checks_as_often_as_the_schema_allows(
    client: httpx.AsyncClient, alice: Account
) -> None:
    limits = (await client.get("/subscriptions/current", headers=alice.headers)).json()["limits"]
    assert limits["checkFrequencyMinutes"] == 0
    assert limits["monitorCount"] == limits["projectCount"] == UNLIMITED
    assert "pagerduty" in limits["notificationChannels"]

    # The hosted free plan allows one project and five-minute checks.
    first = await client.post("/projects", headers=alice.headers, json={"name": "Shop"})
    second = await client.post("/projects", headers=alice.headers, json={"name": "Blog"})
    assert (first.status_code, second.status_code) == (201, 201)
    url = "http://127.0.0.1:9/"
    fast = await create_monitor(client, alice, first.json()["id"], url=url, intervalSeconds=10)
    assert fast["intervalSeconds"] == 10
    default = await client.post(
        "/monitors",
        headers=alice.headers,
        json={"projectId": first.json()["id"], "name": "Shop", "type": "http", "url": url},
    )
    assert default.json()["intervalSeconds"] == 60


async def test_upgrading_on_a_self_hosted_service_is_a_409_that_says_why(
    client: httpx.AsyncClient, alice: Account
) -> None:
    upgrade = await client.post("/subscriptions/upgrade", headers=alice.headers)
    assert "self-hosted" in assert_problem(upgrade, 409)["detail"]


def test_an_operators_plans_file_applies_on_top_of_the_self_hosted_plans(tmp_path: Path) -> None:
    path = tmp_path / "plans.toml"
    path.write_text("[plans.free]\nmonitorCount = 500\n")
    catalog = PlanCatalog.load(path, "selfhosted", channels=plan_channels())
    assert catalog.get("free").monitorCount == 500
    assert catalog.get("free").projectCount == UNLIMITED
    assert catalog.upgrades is False
    assert PlanCatalog.load(path, channels=plan_channels()).upgrades is True
