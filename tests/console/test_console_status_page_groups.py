"""Component groups and the time zone in the console's status page editor, over HTTP: a group
added, filled, moved, renamed and deleted; the page's zone chosen from the settings; each
behind the tenant wall."""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.conftest import Cast, InProject
from tests.console.forms import signed_in, submit
from tests.factories import add_component


async def _page_with_components(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> tuple[dict[str, Any], dict[str, str]]:
    page = await as_alice.page()
    components = {}
    for name in ("API", "Database", "Web"):
        monitor = await as_alice.monitor(
            name=name, url=f"https://{name.lower()}.example/", intervalSeconds=300, isActive=False
        )
        made = await add_component(client, cast.alice, page["id"], monitor["id"])
        components[name] = made["id"]
    return page, components


async def _api(client: httpx.AsyncClient, cast: Cast, page_id: str) -> dict[str, Any]:
    read = await client.get(f"/status-pages/{page_id}", headers=cast.alice.headers)
    body: dict[str, Any] = read.json()
    return body


def _row_order(editor: str) -> list[str]:
    """The editor's rows, groups and components, top to bottom, by name."""
    return re.findall(r'<input id="f-(?:group|name)-[0-9a-f]+" name="name" value="([^"]+)"', editor)


async def test_a_group_is_added_filled_moved_renamed_and_deleted_from_the_editor(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page, components = await _page_with_components(client, cast, as_alice)
    base = f"/app/status-pages/{page['id']}"
    csrf = await signed_in(client, cast.alice.email)
    added = await submit(client, f"{base}/groups", csrf, groupName="Backend")
    assert added.status_code == 303, added.text
    (group,) = (await _api(client, cast, page["id"]))["groups"]
    assert (group["name"], group["order"]) == ("Backend", 3)  # after the components

    for name in ("API", "Database"):
        moved = await submit(
            client,
            f"{base}/components/{components[name]}",
            csrf,
            action="group",
            groupId=group["id"],
        )
        assert moved.status_code == 303, moved.text
    editor = (await client.get(base)).text
    assert _row_order(editor) == ["Web", "Backend", "API", "Database"]
    assert 'class="status unknown">unknown</span></td>\n    <td>Group of 2</td>' in editor

    up = await submit(client, f"{base}/groups/{group['id']}", csrf, action="up")
    assert up.status_code == 303, up.text
    assert _row_order((await client.get(base)).text) == ["Backend", "API", "Database", "Web"]
    # Within the group, a member moves among its members.
    down = await submit(client, f"{base}/components/{components['API']}", csrf, action="down")
    assert down.status_code == 303
    assert _row_order((await client.get(base)).text) == ["Backend", "Database", "API", "Web"]

    await submit(client, f"{base}/groups", csrf, groupName="Front")
    clash = await submit(client, f"{base}/groups/{group['id']}", csrf, name="Front")
    assert clash.status_code == 409
    assert f'<p class="field-error" id="e-group-{group["id"]}">' in clash.text
    renamed = await submit(client, f"{base}/groups/{group['id']}", csrf, name="Services")
    assert renamed.status_code == 303
    api = await _api(client, cast, page["id"])
    assert [g["name"] for g in api["groups"]] == ["Services", "Front"]
    assert api["groups"][0]["componentIds"] == [components["Database"], components["API"]]

    out = await submit(
        client, f"{base}/components/{components['API']}", csrf, action="group", groupId=""
    )
    assert out.status_code == 303
    deleted = await submit(client, f"{base}/groups/{group['id']}", csrf, action="remove")
    assert deleted.status_code == 303
    api = await _api(client, cast, page["id"])
    assert [g["name"] for g in api["groups"]] == ["Front"]
    assert all(c["groupId"] is None for c in api["components"])


async def test_a_component_added_from_the_editor_can_go_straight_into_a_group(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    monitor = await as_alice.monitor(url="https://shop.example/", intervalSeconds=300)
    base = f"/app/status-pages/{page['id']}"
    csrf = await signed_in(client, cast.alice.email)
    await submit(client, f"{base}/groups", csrf, groupName="Shop")
    (group,) = (await _api(client, cast, page["id"]))["groups"]
    editor = (await client.get(base)).text
    assert f'<option value="{group["id"]}">Shop</option>' in editor
    added = await submit(
        client, f"{base}/components", csrf, monitorId=monitor["id"], groupId=group["id"]
    )
    assert added.status_code == 303, added.text
    (component,) = (await _api(client, cast, page["id"]))["components"]
    assert component["groupId"] == group["id"]


async def test_the_page_time_zone_is_chosen_in_the_settings_and_a_wrong_one_is_refused(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    base = f"/app/status-pages/{page['id']}"
    csrf = await signed_in(client, cast.alice.email)
    editor = (await client.get(base)).text
    assert '<option value="UTC" selected>UTC</option>' in editor
    fields = {"name": "Shop status", "slug": "shop-status", "theme": "light", "isPublic": "true"}
    saved = await submit(client, f"{base}/settings", csrf, **fields, timeZone="Europe/Paris")
    assert saved.status_code == 303, saved.text
    assert (await _api(client, cast, page["id"]))["timeZone"] == "Europe/Paris"
    assert '<option value="Europe/Paris" selected>' in (await client.get(base)).text
    refused = await submit(client, f"{base}/settings", csrf, **fields, timeZone="Mars/Base")
    assert refused.status_code == 422
    assert 'id="e-timeZone"' in refused.text
    assert (await _api(client, cast, page["id"]))["timeZone"] == "Europe/Paris"


async def test_charlie_reaches_none_of_alices_groups_from_the_console(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page, components = await _page_with_components(client, cast, as_alice)
    group = await client.post(
        f"/status-pages/{page['id']}/groups", headers=cast.alice.headers, json={"name": "Shop"}
    )
    group_id = group.json()["id"]
    base = f"/app/status-pages/{page['id']}"
    csrf = await signed_in(client, cast.charlie.email)
    for path, fields in (
        (f"{base}/groups", {"groupName": "Mine"}),
        (f"{base}/groups/{group_id}", {"name": "Mine"}),
        (f"{base}/groups/{group_id}", {"action": "up"}),
        (f"{base}/groups/{group_id}", {"action": "remove"}),
        (f"{base}/components/{components['API']}", {"action": "group", "groupId": group_id}),
    ):
        answer = await submit(client, path, csrf, **fields)
        assert answer.status_code == 404, path
    api = await _api(client, cast, page["id"])
    assert [(g["name"], g["componentIds"]) for g in api["groups"]] == [("Shop", [])]
