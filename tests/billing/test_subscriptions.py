"""Plans, subscriptions, measured usage (seed 17, 18; contract §11)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from tests.app_settings import fixture_value, overriding
from tests.conftest import Account, Cast, InProject, assert_problem
from tests.factories import create_monitor
from upwatch.kit.plans import UNLIMITED, PlanCatalog, PlansFileError
from upwatch.notifications.channels import plan_channels

Promote = Callable[[Account, str], Awaitable[None]]

FREE_LIMITS = {
    "monitorCount": 10,
    "statusPageCount": 1,
    "notificationChannels": ["email", "webhook", "slack", "discord", "teams", "telegram"],
    "checkFrequencyMinutes": 5,
    "retentionDays": 30,
    "projectCount": 1,
    "teamMembersPerProject": 3,
    "teamMembers": 3,
    "apiCallsPerDay": 10000,
    "storageLimit": 100,
}


async def test_a_new_account_is_on_free_and_active_with_the_contract_limits(
    client: httpx.AsyncClient, alice: Account
) -> None:
    body = (await client.get("/subscriptions/current", headers=alice.headers)).json()
    assert (body["currentPlan"], body["status"]) == ("free", "active")
    assert body["limits"] == FREE_LIMITS
    assert set(body["usage"]) == {
        "monitors",
        "statusPages",
        "teamMembers",
        "projects",
        "apiCalls",
        "storage",
    }


async def test_usage_figures_match_what_exists(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    await as_alice.invite("dave@example.com")
    usage = (await client.get("/subscriptions/current", headers=cast.alice.headers)).json()["usage"]
    assert usage["projects"] == {"current": 1, "limit": 1, "percentage": 100.0}
    # Bob (a member) and Dave (invited); Alice owns, so she is not counted.
    assert usage["teamMembers"] == {"current": 2, "limit": 3, "percentage": 66.67}
    assert usage["monitors"]["current"] == 0
    assert usage["statusPages"]["current"] == 0
    assert 0 < usage["storage"]["current"] < 1
    assert usage["storage"]["limit"] == 100
    # Requests of the day so far: the cast's own calls and this one.
    assert usage["apiCalls"]["current"] >= 3
    assert usage["apiCalls"]["limit"] == 10000


async def test_usage_counts_the_owners_monitors_paused_ones_and_members_ones_included(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    ids = []
    for account in (cast.alice, cast.bob):
        monitor = await create_monitor(
            client, account, cast.project_id, type="heartbeat", intervalSeconds=3600
        )
        ids.append(monitor["id"])
    paused = await client.patch(
        f"/monitors/{ids[0]}", headers=cast.alice.headers, json={"isActive": False}
    )
    assert paused.status_code == 200, paused.text
    usage = (await client.get("/subscriptions/current", headers=cast.alice.headers)).json()["usage"]
    assert usage["monitors"] == {"current": 2, "limit": 10, "percentage": 20.0}
    # A member's own usage counts the projects it owns: none.
    theirs = (await client.get("/subscriptions/current", headers=cast.bob.headers)).json()
    assert theirs["usage"]["monitors"]["current"] == 0


async def test_upgrade_moves_to_pro_and_a_second_upgrade_is_a_409(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await client.post("/subscriptions/upgrade", headers=alice.headers, json={})
    assert response.status_code == 200
    body = response.json()
    assert body["message"]
    assert body["subscription"]["currentPlan"] == "pro"
    assert body["subscription"]["status"] == "active"
    assert body["subscription"]["limits"]["projectCount"] == 20
    # Every channel there is: the contract's nine and the nine added since.
    assert body["subscription"]["limits"]["notificationChannels"] == list(plan_channels()["pro"])
    assert len(plan_channels()["pro"]) == 18
    again = await client.post("/subscriptions/upgrade", headers=alice.headers, json={})
    assert_problem(again, 409)
    current = await client.get("/subscriptions/current", headers=alice.headers)
    assert current.json()["currentPlan"] == "pro"


async def test_pro_lifts_the_project_limit(client: httpx.AsyncClient, alice: Account) -> None:
    await client.post("/projects", headers=alice.headers, json={"name": "One"})
    assert_problem(await client.post("/projects", headers=alice.headers, json={"name": "Two"}), 402)
    await client.post("/subscriptions/upgrade", headers=alice.headers, json={})
    assert (
        await client.post("/projects", headers=alice.headers, json={"name": "Two"})
    ).status_code == 201


async def test_subscription_endpoints_need_a_token(client: httpx.AsyncClient) -> None:
    assert_problem(await client.get("/subscriptions/current"), 401)
    assert_problem(await client.post("/subscriptions/upgrade", json={}), 401)
    assert_problem(await client.post("/subscriptions/downgrade", json={}), 401)


async def test_upgrade_refuses_a_body_that_is_not_an_object(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await client.post("/subscriptions/upgrade", headers=alice.headers, json=[1])
    assert_problem(response, 400)


async def test_downgrade_returns_to_free_when_usage_fits(
    client: httpx.AsyncClient, alice: Account
) -> None:
    assert_problem(
        await client.post("/subscriptions/downgrade", headers=alice.headers, json={}), 409
    )
    await client.post("/subscriptions/upgrade", headers=alice.headers, json={})
    response = await client.post("/subscriptions/downgrade", headers=alice.headers, json={})
    assert response.status_code == 200
    assert response.json()["subscription"]["currentPlan"] == "free"


async def test_downgrade_is_refused_with_the_list_of_what_exceeds_free(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await client.post("/subscriptions/upgrade", headers=alice.headers, json={})
    for name in ("One", "Two"):
        await client.post("/projects", headers=alice.headers, json={"name": name})
    response = await client.post("/subscriptions/downgrade", headers=alice.headers, json={})
    problem = assert_problem(response, 409)
    assert problem["exceeded"] == [{"limit": "projectCount", "current": 2, "allowed": 1}]
    current = await client.get("/subscriptions/current", headers=alice.headers)
    assert current.json()["currentPlan"] == "pro"


def test_the_default_catalog_has_free_and_pro() -> None:
    catalog = PlanCatalog.defaults(plan_channels())
    assert catalog.get("free").monitorCount == 10
    assert catalog.get("pro").storageLimit == 10240
    assert catalog.get("gone").name == "free"


def test_a_plans_file_changes_limits_and_defines_an_unlimited_plan(tmp_path: Path) -> None:
    path = tmp_path / "plans.toml"
    path.write_text(
        'default = "selfhosted"\n'
        "[plans.free]\nmonitorCount = 50\n"
        '[plans.selfhosted]\nmonitorCount = "unlimited"\nprojectCount = "unlimited"\n'
        'notificationChannels = ["email", "webhook"]\n'
    )
    catalog = PlanCatalog.load(path, channels=plan_channels())
    assert catalog.get("free").monitorCount == 50
    assert catalog.get("free").statusPageCount == 1
    assert catalog.default_plan == "selfhosted"
    hosted = catalog.get("selfhosted")
    assert (hosted.monitorCount, hosted.projectCount) == (UNLIMITED, UNLIMITED)
    assert hosted.notificationChannels == ("email", "webhook")


@pytest.mark.parametrize(
    "text",
    [
        "[plans.free]\nmonitorCount = -1\n",
        "[plans.free]\nmonitorCount = 'lots'\n",
        "[plans.free]\nsnacks = 3\n",
        "[plans.free]\nnotificationChannels = ['pigeon']\n",
        "default = 'missing'\n",
        "not toml at all [",
    ],
)
def test_a_broken_plans_file_is_refused_with_a_reason(tmp_path: Path, text: str) -> None:
    path = tmp_path / "plans.toml"
    path.write_text(text)
    with pytest.raises(PlansFileError):
        PlanCatalog.load(path, channels=plan_channels())


@pytest.fixture
def plans_file(tmp_path: Path) -> Path:
    path = tmp_path / "plans.toml"
    path.write_text(
        'default = "team"\n[plans.team]\nprojectCount = "unlimited"\napiCallsPerDay = 5\n'
    )
    return path


class TestWithAnOperatorPlansFile:
    settings_overrides = overriding(plans_file=fixture_value("plans_file"))

    async def test_new_accounts_start_on_the_operators_default_plan(
        self, client: httpx.AsyncClient, alice: Account
    ) -> None:
        body = (await client.get("/subscriptions/current", headers=alice.headers)).json()
        assert body["currentPlan"] == "team"
        assert body["limits"]["projectCount"] == UNLIMITED
        for n in range(3):
            created = await client.post("/projects", headers=alice.headers, json={"name": f"P{n}"})
            assert created.status_code == 201
