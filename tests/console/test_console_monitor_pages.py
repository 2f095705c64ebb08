"""Monitors made and changed in the console: every type's own boxes, edit, pause and resume,
clone, delete after a confirmation, and the same on several at once from the list, each
through the API's models and service (so its rules and walls hold)."""

from __future__ import annotations

import re

import httpx

from tests.app_settings import overriding
from tests.conftest import Cast
from tests.console.forms import signed_in, submit
from upwatch.probes.registry import KINDS

settings_overrides = overriding(allow_private_targets=True)

# Every type's fields as the form takes them (real local addresses; nothing need answer).
EVERY_TYPE = {
    "http": {
        "url": "http://127.0.0.1:9/health",
        "method": "POST",
        "headers": "Authorization: Bearer s3cret\nX-Team: shop",
        "expectedStatusCodes": "200, 204",
        "keyword": "ok",
        "body": '{"ping": true}',
        "assertions": '[{"source": "statusCode", "operator": "equals", "value": 200}]',
    },
    "tcp": {"host": "127.0.0.1", "port": "9"},
    "dns": {"host": "localhost", "recordType": "AAAA", "expectedValue": "::1"},
    "tls": {"host": "127.0.0.1", "port": "8443"},
    "heartbeat": {"schedule": "0 3 * * *", "timezone": "Europe/Paris", "graceSeconds": "600"},
}


async def _make(client: httpx.AsyncClient, csrf: str, project: str, kind: str, name: str) -> str:
    made = await submit(
        client,
        "/app/monitors/new",
        csrf,
        projectId=project,
        type=kind,
        name=name,
        intervalSeconds="300",
        retries="2",
        **EVERY_TYPE[kind],
    )
    assert made.status_code == 303, made.text
    found = re.search(r"/app/monitors/([0-9a-f]{32})$", made.headers["location"])
    assert found
    return found.group(1)


async def test_the_form_shows_only_the_chosen_types_boxes(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    await signed_in(client, cast.alice.email)
    for kind in KINDS.values():
        form = (await client.get(f"/app/monitors/new?type={kind.name}")).text
        for name in kind.config.model_fields:
            assert f'name="{name}"' in form, (kind.name, name)
        others = {n for k in KINDS.values() for n in k.config.model_fields} - set(
            kind.config.model_fields
        )
        for name in others:
            assert f'name="{name}"' not in form, (kind.name, name)


async def test_a_monitor_of_every_type_is_made_with_all_its_fields_as_the_api_stores_them(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    headers = cast.alice.headers
    for kind in EVERY_TYPE:
        monitor_id = await _make(client, csrf, cast.project_id, kind, f"A {kind}")
        stored = (await client.get(f"/monitors/{monitor_id}", headers=headers)).json()
        assert stored["type"] == kind
        assert stored["intervalSeconds"] == 300
        assert stored["retries"] == 2
    http = next(
        m for m in (await client.get("/monitors", headers=headers)).json() if m["type"] == "http"
    )
    assert http["method"] == "POST"
    assert http["expectedStatusCodes"] == [200, 204]
    assert http["headers"]["X-Team"] == "shop"
    assert http["headers"]["Authorization"] != "Bearer s3cret"  # masked
    assert http["assertions"][0]["source"] == "statusCode"


async def test_a_blank_interval_is_the_one_the_form_says(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    form = (await client.get("/app/monitors/new?type=tcp")).text
    said = re.search(r"Empty: every (\d+) s", form)
    assert said
    made = await submit(
        client,
        "/app/monitors/new",
        csrf,
        projectId=cast.project_id,
        type="tcp",
        name="Blank",
        host="127.0.0.1",
        port="9",
        intervalSeconds="",
    )
    monitor_id = made.headers["location"].rsplit("/", 1)[1]
    stored = (await client.get(f"/monitors/{monitor_id}", headers=cast.alice.headers)).json()
    assert stored["intervalSeconds"] == int(said.group(1))


async def test_wrong_boxes_come_back_with_their_errors_next_to_them(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    refused = await submit(
        client,
        "/app/monitors/new",
        csrf,
        projectId=cast.project_id,
        type="http",
        name="Bad",
        url="http://127.0.0.1/",
        headers="no colon here",
        intervalSeconds="5",
    )
    assert refused.status_code == 422
    assert 'id="e-headers"' in refused.text
    refused = await submit(
        client,
        "/app/monitors/new",
        csrf,
        projectId=cast.project_id,
        type="http",
        name="Bad",
        url="http://127.0.0.1/",
        intervalSeconds="5",
    )
    assert refused.status_code == 422
    assert 'id="e-intervalSeconds"' in refused.text


async def test_a_monitor_is_edited_paused_resumed_cloned_and_deleted_after_a_confirmation(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    headers = cast.alice.headers
    monitor_id = await _make(client, csrf, cast.project_id, "http", "Checkout")
    form = (await client.get(f"/app/monitors/{monitor_id}/edit")).text
    assert "s3cret" not in form
    assert "Checkout" in form
    edited = await submit(
        client,
        f"/app/monitors/{monitor_id}/edit",
        csrf,
        name="Checkout v2",
        url="http://127.0.0.1:9/health",
        method="GET",
        headers=re.search(r'<textarea id="f-headers"[^>]*>([^<]*)<', form).group(1),  # type: ignore[union-attr]
        keyword="",
        intervalSeconds="600",
        timeoutSeconds="5",
        retries="1",
    )
    assert edited.status_code == 303, edited.text
    stored = (await client.get(f"/monitors/{monitor_id}", headers=headers)).json()
    assert (stored["name"], stored["method"], stored["keyword"]) == ("Checkout v2", "GET", None)
    assert stored["intervalSeconds"] == 600
    # The masked secret sent back kept the stored value: the API still masks the same header.
    assert "Authorization" in stored["secretHeaders"] or "Authorization" in stored["headers"]

    assert (await submit(client, f"/app/monitors/{monitor_id}/pause", csrf)).status_code == 303
    page = (await client.get(f"/app/monitors/{monitor_id}")).text
    assert "/resume" in page
    assert (await client.get(f"/monitors/{monitor_id}", headers=headers)).json()[
        "status"
    ] == "paused"
    assert (await submit(client, f"/app/monitors/{monitor_id}/resume", csrf)).status_code == 303
    assert (await client.get(f"/monitors/{monitor_id}", headers=headers)).json()["isActive"]

    clone = (await client.get(f"/app/monitors/{monitor_id}/clone")).text
    assert "Copy of Checkout v2" in clone
    assert "Authorization: " not in clone  # a secret header is asked for again

    asked = await client.get(f"/app/monitors/{monitor_id}/delete")
    assert asked.status_code == 200
    assert "Delete Checkout v2?" in asked.text
    assert (await client.get(f"/monitors/{monitor_id}", headers=headers)).status_code == 200
    done = await submit(client, f"/app/monitors/{monitor_id}/delete", csrf)
    assert done.status_code == 303
    assert (await client.get(f"/monitors/{monitor_id}", headers=headers)).status_code == 404


async def test_ticked_monitors_are_paused_resumed_and_deleted_together_and_searched(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    ids = [await _make(client, csrf, cast.project_id, "tcp", f"Port {n}") for n in range(3)]
    await _make(client, csrf, cast.project_id, "dns", "Resolver")
    found = (await client.get("/app/monitors?q=port")).text
    assert "Port 1" in found
    assert ">Resolver</a>" not in found
    paused = await client.post(
        "/app/monitors/bulk", data={"csrf": csrf, "action": "pause", "ids": ids[:2]}
    )
    assert paused.status_code == 303
    listed = (await client.get("/monitors", headers=cast.alice.headers)).json()
    assert sorted(m["status"] for m in listed if m["id"] in ids) == ["paused", "paused", "pending"]
    asked = await client.post(
        "/app/monitors/bulk", data={"csrf": csrf, "action": "delete", "ids": ids}
    )
    assert asked.status_code == 200
    assert "Delete 3 monitors" in asked.text
    done = await client.post(
        "/app/monitors/bulk",
        data={"csrf": csrf, "action": "delete", "confirmed": "yes", "ids": ids},
    )
    assert done.status_code == 303
    assert "3 monitors deleted." in (await client.get("/app/monitors")).text
    assert len((await client.get("/monitors", headers=cast.alice.headers)).json()) == 1


async def test_another_tenant_gets_404_and_a_form_without_csrf_403(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    monitor_id = await _make(client, csrf, cast.project_id, "tcp", "Mine")
    refused = await client.post(f"/app/monitors/{monitor_id}/pause", data={})
    assert refused.status_code == 403
    client.cookies.clear()
    csrf = await signed_in(client, cast.charlie.email)
    for path in ("edit", "clone", "delete"):
        assert (await client.get(f"/app/monitors/{monitor_id}/{path}")).status_code == 404
    assert (await submit(client, f"/app/monitors/{monitor_id}/delete", csrf)).status_code == 404
    untouched = await client.post(
        "/app/monitors/bulk", data={"csrf": csrf, "action": "pause", "ids": [monitor_id]}
    )
    assert untouched.status_code == 303
    stored = (await client.get(f"/monitors/{monitor_id}", headers=cast.alice.headers)).json()
    assert stored["status"] != "paused"
