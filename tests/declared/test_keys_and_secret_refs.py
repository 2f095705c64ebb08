"""The server's part of config as code: a key per declared object, unique per project, and
secrets given by environment-variable reference, kept as a name and an Argon2id digest."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from argon2 import PasswordHasher
from argon2.exceptions import VerificationError

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, assert_problem
from tests.factories import create_page

SLACK_URL = "https://hooks.slack.com/services/T000/B000/abcdefghijklmnop"


settings_overrides = overriding(allow_private_targets=True)


def matches(digest: str, value: str) -> bool:
    try:
        return PasswordHasher().verify(digest, value)
    except VerificationError:
        return False


@pytest.mark.parametrize("kind", ["monitor", "provider", "page", "window"])
async def test_a_key_is_unique_within_a_project_but_free_in_another(
    client: httpx.AsyncClient, cast: Cast, kind: str
) -> None:
    for account in (cast.alice, cast.charlie):  # room for the pages of this test
        await client.post("/subscriptions/upgrade", headers=account.headers, json={})
    other = await client.post("/projects", headers=cast.charlie.headers, json={"name": "Other"})
    paths = {
        "monitor": "/monitors",
        "provider": "/notification-providers",
        "page": "/status-pages",
        "window": "/maintenance-windows",
    }

    def body(project_id: str, n: int) -> dict[str, Any]:
        common = {"projectId": project_id, "key": "shared"}
        return {
            "monitor": {**common, "name": "A", "type": "tcp", "host": "127.0.0.1", "port": 9},
            "provider": {**common, "name": "A", "type": "email", "config": {"to": ["a@b.co"]}},
            "page": {**common, "name": "A", "slug": f"page-{project_id[:8]}-{n}"},
            "window": {
                **common,
                "title": "A",
                "startsAt": "2030-01-01T00:00:00Z",
                "endsAt": "2030-01-01T01:00:00Z",
            },
        }[kind]

    path = paths[kind]
    first = await client.post(path, headers=cast.alice.headers, json=body(cast.project_id, 1))
    assert first.status_code == 201, first.text
    assert first.json()["key"] == "shared"
    twice = await client.post(path, headers=cast.alice.headers, json=body(cast.project_id, 2))
    assert "shared" in assert_problem(twice, 409)["detail"]
    elsewhere = await client.post(
        path, headers=cast.charlie.headers, json=body(other.json()["id"], 3)
    )
    assert elsewhere.status_code == 201, elsewhere.text
    # Renaming onto a taken key is refused too; removing the key frees it.
    plain = await client.post(
        path, headers=cast.alice.headers, json={**body(cast.project_id, 4), "key": "plain"}
    )
    onto = await client.patch(
        f"{path}/{plain.json()['id']}", headers=cast.alice.headers, json={"key": "shared"}
    )
    assert_problem(onto, 409)
    freed = await client.patch(
        f"{path}/{first.json()['id']}", headers=cast.alice.headers, json={"key": None}
    )
    assert freed.status_code == 200, freed.text
    assert freed.json()["key"] is None
    taken = await client.patch(
        f"{path}/{plain.json()['id']}", headers=cast.alice.headers, json={"key": "shared"}
    )
    assert taken.json()["key"] == "shared"


async def test_a_key_has_a_stated_shape(client: httpx.AsyncClient, as_alice: InProject) -> None:
    for bad in ["Upper", "", "-lead", "a b", "x" * 65]:
        response = await as_alice.post("/status-pages", name="A", slug="a-page", key=bad)
        assert assert_problem(response, 422)["errors"][0]["field"] == "key"


async def test_a_provider_secret_given_by_reference_keeps_its_name_and_a_digest(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    made = await as_alice.provider(
        type="slack",
        name="Team",
        key="team",
        config={"webhookUrl": SLACK_URL},
        secretRefs={"config.webhookUrl": "SLACK_URL"},
    )
    ref = made["secretRefs"]["config.webhookUrl"]
    assert ref["env"] == "SLACK_URL"
    assert ref["digest"].startswith("$argon2id$")
    assert matches(ref["digest"], SLACK_URL)
    assert not matches(ref["digest"], SLACK_URL + "x")
    assert SLACK_URL not in str(made)  # the secret itself stays masked
    path = f"/notification-providers/{made['id']}"

    # An update that leaves the references out keeps them, and a new value gets a new digest.
    renamed = await client.patch(path, headers=cast.alice.headers, json={"name": "Ops"})
    assert renamed.json()["secretRefs"]["config.webhookUrl"]["digest"] == ref["digest"]
    rotated = SLACK_URL.replace("abcdefgh", "zyxwvuts")
    changed = await client.patch(
        path, headers=cast.alice.headers, json={"config": {"webhookUrl": rotated}}
    )
    new_ref = changed.json()["secretRefs"]["config.webhookUrl"]
    assert new_ref["env"] == "SLACK_URL"
    assert matches(new_ref["digest"], rotated)
    cleared = await client.patch(path, headers=cast.alice.headers, json={"secretRefs": {}})
    assert cleared.json()["secretRefs"] == {}


async def test_a_reference_must_name_a_secret_field(
    client: httpx.AsyncClient, as_alice: InProject
) -> None:
    for path in ["config.to", "config.nothing", "name"]:
        response = await as_alice.post(
            "/notification-providers",
            type="email",
            name="Mail",
            config={"to": ["ops@example.com"]},
            secretRefs={path: "MAIL"},
        )
        problem = assert_problem(response, 422)
        assert problem["errors"][0]["field"] == f"secretRefs.{path}"
    bad_name = await as_alice.post(
        "/notification-providers",
        type="slack",
        name="Team",
        config={"webhookUrl": SLACK_URL},
        secretRefs={"config.webhookUrl": "1 not a name"},
    )
    assert_problem(bad_name, 422)


async def test_a_secret_monitor_header_may_be_given_by_reference(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    monitor = await as_alice.monitor(
        url="http://127.0.0.1:9/health",
        intervalSeconds=300,
        key="api",
        headers={"Authorization": "Bearer s3cret-token", "Accept": "application/json"},
        secretRefs={"headers.Authorization": "API_TOKEN"},
    )
    ref = monitor["secretRefs"]["headers.Authorization"]
    assert ref["env"] == "API_TOKEN"
    assert matches(ref["digest"], "Bearer s3cret-token")
    # A header that is not secret is no place for a reference.
    refused = await client.patch(
        f"/monitors/{monitor['id']}",
        headers=cast.alice.headers,
        json={"secretRefs": {"headers.Accept": "ACCEPT"}},
    )
    assert assert_problem(refused, 422)["errors"][0]["field"] == "secretRefs.headers.Accept"
    # Removing the header drops its reference.
    dropped = await client.patch(
        f"/monitors/{monitor['id']}", headers=cast.alice.headers, json={"headers": {}}
    )
    assert dropped.json()["secretRefs"] == {}


async def test_keys_are_visible_to_members_and_walled_from_others(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page(key="public")
    seen = await client.get(f"/status-pages/{page['id']}", headers=cast.bob.headers)
    assert seen.json()["key"] == "public"
    hidden = await client.get(f"/status-pages/{page['id']}", headers=cast.charlie.headers)
    assert_problem(hidden, 404)
    # Charlie's own project may use the same key: it tells him nothing about Alice's.
    mine = await client.post("/projects", headers=cast.charlie.headers, json={"name": "Mine"})
    again = await create_page(
        client, cast.charlie, mine.json()["id"], key="public", slug="charlie-page"
    )
    assert again["key"] == "public"


async def test_a_reference_to_a_secret_someone_else_stored_needs_its_value(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    made = await as_alice.provider(
        type="webhook",
        name="Hook",
        config={"url": "https://hooks.example.com/in", "secret": "alice-signing-secret"},
    )
    path = f"/notification-providers/{made['id']}"
    # A digest of Alice's secret would let Bob test guesses at it offline.
    minted = await client.patch(
        path, headers=cast.bob.headers, json={"secretRefs": {"config.secret": "GUESS"}}
    )
    problem = assert_problem(minted, 422)
    assert problem["errors"][0]["field"] == "secretRefs.config.secret"
    sent_back = await client.patch(
        path,
        headers=cast.bob.headers,
        json={"config": made["config"], "secretRefs": {"config.secret": "GUESS"}},
    )
    assert_problem(sent_back, 422)  # the mask sent back is not the value
    given = await client.patch(
        path,
        headers=cast.bob.headers,
        json={
            "config": {**made["config"], "secret": "bobs-own-secret"},
            "secretRefs": {"config.secret": "HOOK_SECRET"},
        },
    )
    assert given.status_code == 200, given.text
    assert matches(given.json()["secretRefs"]["config.secret"]["digest"], "bobs-own-secret")


async def test_a_read_key_sees_the_references_without_their_digests(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    await as_alice.provider(
        type="slack",
        name="Team",
        config={"webhookUrl": SLACK_URL},
        secretRefs={"config.webhookUrl": "SLACK_URL"},
    )
    made = await client.post(
        f"/projects/{cast.project_id}/api-keys",
        headers=cast.alice.headers,
        json={"name": "reader", "scope": "read"},
    )
    reader = {"Authorization": f"Bearer {made.json()['key']}"}
    (listed,) = (
        await client.get(
            "/notification-providers/user", headers=reader, params={"projectId": cast.project_id}
        )
    ).json()
    assert listed["secretRefs"] == {"config.webhookUrl": {"env": "SLACK_URL", "digest": None}}
    (seen,) = (
        await client.get(
            "/notification-providers/user",
            headers=cast.bob.headers,
            params={"projectId": cast.project_id},
        )
    ).json()
    assert seen["secretRefs"]["config.webhookUrl"]["digest"].startswith("$argon2id$")


async def test_a_header_no_longer_secret_drops_its_reference_without_an_error(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    monitor = await as_alice.monitor(
        url="http://127.0.0.1:9/health",
        intervalSeconds=300,
        headers={"X-Token": "first-value-here"},
        secretHeaders=["X-Token"],
        secretRefs={"headers.X-Token": "X_TOKEN"},
    )
    assert set(monitor["secretRefs"]) == {"headers.X-Token"}
    unmarked = await client.patch(
        f"/monitors/{monitor['id']}",
        headers=cast.alice.headers,
        json={"headers": {"X-Token": "a-new-plain-value"}, "secretHeaders": []},
    )
    assert unmarked.status_code == 200, unmarked.text
    assert unmarked.json()["secretRefs"] == {}
