"""Personal channels in the settings: each `*Config` is checked like the provider config of
its channel, secrets are masked and kept, and `channelStatus` says what is active and why not."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import Account, assert_problem
from tests.factories import change_profile, change_settings
from upwatch.accounts.repository import UserRepository
from upwatch.runtime import Runtime

HOOK = "https://hooks.example.com/upwatch/T0KEN"
SLACK = "https://hooks.slack.com/services/T000/B000/SECRETPATH"


async def _stored(runtime: Runtime, account: Account) -> dict[str, Any]:
    async with runtime.db.sessionmaker() as session:
        user = await UserRepository(session).get(account.id)
        assert user is not None
        return dict(user.settings)


async def test_by_default_no_channel_is_active_and_each_says_why(
    client: httpx.AsyncClient, alice: Account
) -> None:
    settings = (await client.get("/users/settings", headers=alice.headers)).json()
    assert settings["notifications"]["email"] is True  # the seed's default...
    assert settings["channelStatus"] == {  # ...mails nobody without an emailConfig
        "email": {"active": False, "reason": "emailConfig is not set"},
        "slack": {"active": False, "reason": "notifications.slack is off; slackConfig is not set"},
        "discord": {
            "active": False,
            "reason": "notifications.discord is off; discordConfig is not set",
        },
        "teams": {"active": False, "reason": "notifications.teams is off; teamsConfig is not set"},
        "webhook": {
            "active": False,
            "reason": "notifications.webhook is off; webhookConfig is not set",
        },
        "rocketchat": {
            "active": False,
            "reason": "notifications.rocketchat is off; rocketchatConfig is not set",
        },
        "googlechat": {
            "active": False,
            "reason": "notifications.googlechat is off; googlechatConfig is not set",
        },
        **{
            name: {
                "active": False,
                "reason": f"notifications.{name} is off; {name}Config is not set",
            }
            for name in ("ntfy", "gotify", "pushover")
        },
    }
    profile = (await client.get("/users/me", headers=alice.headers)).json()
    assert set(profile["settings"]["channelStatus"]) == {"email", "sms", "slack", "webhook"}


async def test_a_channel_with_its_switch_on_and_a_valid_config_is_active(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await change_settings(
        client,
        alice,
        notifications={"slack": True, "webhook": True},
        slackConfig={"webhookUrl": SLACK},
        webhookConfig={"url": HOOK},
        emailConfig={"to": []},
    )
    assert response.status_code == 200, response.text
    status = response.json()["channelStatus"]
    assert status["slack"] == {"active": True, "reason": None}
    assert status["webhook"] == {"active": True, "reason": None}
    assert status["email"] == {"active": True, "reason": None}
    off = await change_settings(client, alice, notifications={"webhook": False})
    assert off.json()["channelStatus"]["webhook"] == {
        "active": False,
        "reason": "notifications.webhook is off",
    }
    unset = await change_settings(client, alice, slackConfig={})
    assert unset.json()["slackConfig"] == {}
    assert unset.json()["channelStatus"]["slack"]["reason"] == "slackConfig is not set"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"slackConfig": {"channel": "#ops"}}, "slackConfig.webhookUrl"),
        ({"discordConfig": {"webhookUrl": "ftp://discord.com/x"}}, "discordConfig.webhookUrl"),
        ({"teamsConfig": {"webhookUrl": "not a url"}}, "teamsConfig.webhookUrl"),
        ({"webhookConfig": {"url": "http://127.0.0.1/hook"}}, "webhookConfig.url"),
        ({"webhookConfig": {"url": "http://169.254.169.254/latest"}}, "webhookConfig.url"),
        (
            {"webhookConfig": {"url": HOOK, "headers": {"X-Upwatch-Event": "x"}}},
            "webhookConfig.headers",
        ),
        ({"emailConfig": {"to": ["not an address"]}}, "emailConfig.to.0"),
        ({"settings": {"slackConfig": {"webhookUrl": ""}}}, "slackConfig.webhookUrl"),
    ],
)
async def test_a_new_config_is_checked_like_the_provider_config_of_its_channel(
    client: httpx.AsyncClient, alice: Account, body: dict[str, Any], field: str
) -> None:
    response = await client.put("/users/settings", headers=alice.headers, json=body)
    problem = assert_problem(response, 422)
    assert field in [e["field"] for e in problem["errors"]]
    settings = (await client.get("/users/settings", headers=alice.headers)).json()
    assert all(settings[key] == {} for key in settings if key.endswith("Config"))


async def test_the_profile_update_checks_its_configs_too(
    client: httpx.AsyncClient, alice: Account
) -> None:
    for config, field in (
        ({"slackConfig": {"channel": "#ops"}}, "settings.slackConfig.webhookUrl"),
        ({"smsConfig": {"to": "+14155550100"}}, "settings.smsConfig.from"),
    ):
        response = await change_profile(client, alice, settings=config)
        problem = assert_problem(response, 422)
        assert field in [e["field"] for e in problem["errors"]]


async def test_secrets_are_masked_and_a_config_sent_back_as_read_keeps_them(
    client: httpx.AsyncClient, alice: Account, runtime: Runtime
) -> None:
    config = {
        "url": HOOK,
        "secret": "a-signing-secret-of-some-length",
        "headers": {"Authorization": "Bearer abcdefghijklmnopqrstu"},
    }
    written = await change_settings(
        client, alice, notifications={"webhook": True}, webhookConfig=config
    )
    assert written.status_code == 200, written.text
    shown = written.json()["webhookConfig"]
    assert shown == {
        "url": "https://hooks.example.com/****",
        "secret": "****ngth",
        "headers": {"Authorization": "****rstu"},
    }
    profile = (await client.get("/users/me", headers=alice.headers)).json()
    assert profile["settings"]["webhookConfig"] == shown

    # A client writes back everything it read: nothing changes.
    read = (await client.get("/users/settings", headers=alice.headers)).json()
    del read["channelStatus"]
    again = await client.put("/users/settings", headers=alice.headers, json=read)
    assert again.status_code == 200, again.text
    assert again.json()["channelStatus"]["webhook"]["active"] is True
    assert (await _stored(runtime, alice))["webhookConfig"] == config

    # A masked secret does not follow the webhook to another address.
    moved = await change_settings(
        client, alice, webhookConfig={**shown, "url": "https://elsewhere.example.com/hook"}
    )
    problem = assert_problem(moved, 422)
    assert [e["field"] for e in problem["errors"]] == ["webhookConfig.secret"]


async def test_an_invalid_stored_config_sent_back_as_read_is_kept_but_a_new_one_is_checked(
    client: httpx.AsyncClient, alice: Account, runtime: Runtime
) -> None:
    async with runtime.db.sessionmaker() as session:
        user = await UserRepository(session).get(alice.id)
        assert user is not None
        user.settings = {"notifications": {"slack": True}, "slackConfig": {"channel": "#ops"}}
        await session.commit()
    read = (await client.get("/users/settings", headers=alice.headers)).json()
    assert read["slackConfig"] == {"channel": "#ops"}
    assert read["channelStatus"]["slack"]["active"] is False
    assert read["channelStatus"]["slack"]["reason"].startswith("slackConfig.webhookUrl: ")

    del read["channelStatus"]
    read["theme"] = "dark"
    kept = await client.put("/users/settings", headers=alice.headers, json=read)
    assert kept.status_code == 200, kept.text
    assert kept.json()["slackConfig"] == {"channel": "#ops"}
    assert kept.json()["theme"] == "dark"

    changed = await change_settings(client, alice, slackConfig={"channel": "#dev"})
    problem = assert_problem(changed, 422)
    assert "slackConfig.webhookUrl" in [e["field"] for e in problem["errors"]]
