"""An operator offers the new channels on every plan with a plans file, and the "send a
test" button delivers through each of them, past the service's own sender and guard, to a
local receiver."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.app_settings import fixture_value, overriding, plans
from tests.conftest import Cast
from tests.factories import create_provider
from tests.receivers import Receiver

API_KEY = "eb243592-faa2-4ba2-a551-1afdf565c889"


@pytest.fixture
def receiver_base(receiver: Receiver) -> str:
    return receiver.url("")


settings_overrides = overriding(
    allow_private_targets=True,
    opsgenie_api_url=fixture_value("receiver_base"),
    plans_file=plans('[plans.free]\nnotificationChannels = "all"\n'),
)


def _config(kind: str, receiver: Receiver) -> dict[str, Any]:
    address = receiver.url("").removeprefix("http://")
    return {
        "rocketchat": {"webhookUrl": receiver.url("/hooks/abc/token")},
        "googlechat": {"webhookUrl": receiver.url("/v1/spaces/S/messages") + "?key=k&token=t"},
        "opsgenie": {"apiKey": API_KEY},
        "apprise": {"urls": [f"json://{address}/apprise"]},
    }[kind]


@pytest.mark.parametrize(
    ("kind", "paths"),
    [
        ("rocketchat", ["/hooks/abc/token"]),
        ("googlechat", ["/v1/spaces/S/messages"]),
        ("opsgenie", ["/v2/alerts", "/v2/alerts/upwatch-test-{id}/close"]),
        ("apprise", ["/apprise"]),
    ],
)
async def test_a_free_account_tests_each_new_channel_when_the_plans_file_offers_all(
    client: httpx.AsyncClient, cast: Cast, receiver: Receiver, kind: str, paths: list[str]
) -> None:
    provider = await create_provider(
        client,
        cast.alice.headers,
        cast.project_id,
        type=kind,
        name=f"{kind} test",
        config=_config(kind, receiver),
    )

    sent = await client.post(
        f"/notification-providers/{provider['id']}/test", headers=cast.alice.headers
    )

    assert sent.status_code == 200, sent.text
    assert sent.json() is True
    assert [r.method for r in receiver.received] == ["POST"] * len(paths)
    # Opsgenie's test alert is closed by its alias, made of the delivery id.
    delivery = receiver.received[0].headers.get("X-Upwatch-Delivery", "")
    assert [r.path for r in receiver.received] == [p.replace("{id}", delivery) for p in paths]
