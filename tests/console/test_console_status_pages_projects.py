"""Status pages and projects in the console, over HTTP: every setting of a status page, its
message with the history, its subscribers, deleting after a confirmation; a project's name
and description, its members' roles, cancelling an invitation, deleting after a confirmation.
Each behind the tenant walls, the services' own role checks, and the CSRF token."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from html.parser import HTMLParser
from typing import Any

import httpx
import pytest

from tests.app_settings import overriding, plans
from tests.conftest import Cast, InProject, Mailbox
from tests.console.forms import signed_in, submit
from tests.factories import add_component
from upwatch.console.endpoints import statuspages
from upwatch.models import StatusPageSubscriber
from upwatch.runtime import Runtime
from upwatch.statuspages.schemas import StatusPageUpdate

# Room for a second page (a taken slug) and for a monitor on a page.
settings_overrides = overriding(
    plans_file=plans("[plans.free]\nstatusPageCount = 3\ncheckFrequencyMinutes = 0\n")
)

# Every setting the form sends, changed from what a new page has.
SETTINGS = {
    "name": "Shop status",
    "slug": "shop-live",
    "description": "Checkout and catalogue, live.",
    "visibility": "public",
    "password": "",
    "allowedNetworks": "",
    "theme": "dark",
    "customDomain": "Status.Shop.Example",
    "customCss": "h1 { letter-spacing: 3px; }",
    "customJs": "console.log('hello');",
    "key": "shop-page",
}


class FieldNames(HTMLParser):
    """The names of the fields inside the form with a given action."""

    def __init__(self, action: str) -> None:
        super().__init__()
        self.action = action
        self.inside = False
        self.names: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form":
            self.inside = found.get("action") == self.action
        elif self.inside and tag in {"input", "select", "textarea"} and found.get("name"):
            self.names.add(str(found["name"]))

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False


@asynccontextmanager
async def other_session(
    client: httpx.AsyncClient, email: str
) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """A second browser, signed in as ``email``, on the same application; its CSRF token."""
    other = httpx.AsyncClient(transport=client._transport, base_url=str(client.base_url))
    async with other:
        yield other, await signed_in(other, email)


async def test_every_setting_of_a_status_page_is_changed_from_its_editor_and_seen_by_visitors(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    csrf = await signed_in(client, cast.alice.email)
    editor = await client.get(f"/app/status-pages/{page['id']}")
    assert editor.status_code == 200
    assert 'id="f-slug" name="slug" type="text" value="shop-status"' in editor.text
    saved = await submit(client, f"/app/status-pages/{page['id']}/settings", csrf, **SETTINGS)
    assert saved.status_code == 303, saved.text
    assert "Settings of Shop status saved." in (await client.get(saved.headers["location"])).text

    api = (await client.get(f"/status-pages/{page['id']}", headers=cast.alice.headers)).json()
    assert api["slug"] == "shop-live"
    assert api["theme"] == "dark"
    assert api["customDomain"] == "status.shop.example"
    assert (api["customCss"], api["customJs"], api["key"]) == (
        SETTINGS["customCss"],
        SETTINGS["customJs"],
        "shop-page",
    )
    public = await client.get("/s/shop-live")
    assert public.status_code == 200
    assert 'data-theme="dark"' in public.text
    assert "Checkout and catalogue, live." in public.text
    assert "/s/shop-live/custom.css" in public.text
    assert (await client.get("/s/shop-live/custom.css")).text == SETTINGS["customCss"]
    assert (await client.get("/s/shop-status")).status_code == 404  # the old address
    by_domain = await client.get(
        "/", headers={"Host": "status.shop.example", "Accept": "text/html"}
    )
    assert "Checkout and catalogue, live." in by_domain.text

    private = {**SETTINGS, "visibility": "members", "customDomain": "", "key": ""}
    assert (
        await submit(client, f"/app/status-pages/{page['id']}/settings", csrf, **private)
    ).status_code == 303
    assert (await client.get("/s/shop-live")).status_code == 404
    api = (await client.get(f"/status-pages/{page['id']}", headers=cast.alice.headers)).json()
    assert (api["isPublic"], api["customDomain"], api["key"]) == (False, None, None)


async def test_the_settings_form_sends_every_field_of_the_apis_update(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    await signed_in(client, cast.alice.email)
    editor = await client.get(f"/app/status-pages/{page['id']}")
    fields = FieldNames(f"/app/status-pages/{page['id']}/settings")
    fields.feed(editor.text)
    # The seed's isPublic is what visibility says (the form's select).
    assert fields.names == {"csrf", *StatusPageUpdate.model_fields} - {"isPublic"}


async def test_refused_settings_come_back_with_each_error_next_to_its_field(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    await as_alice.page(name="Other", slug="taken")
    csrf = await signed_in(client, cast.alice.email)
    path = f"/app/status-pages/{page['id']}/settings"
    bad = {**SETTINGS, "slug": "Not A Slug", "customDomain": "127.0.0.1", "theme": "neon"}
    refused = await submit(client, path, csrf, **bad)
    assert refused.status_code == 422
    for field in ("slug", "customDomain", "theme"):
        assert f'id="e-{field}"' in refused.text, field
    assert 'value="Not A Slug"' in refused.text  # what was typed, to correct
    taken = await submit(client, path, csrf, **{**SETTINGS, "slug": "taken"})
    assert taken.status_code == 409
    assert "another status page has this slug" in taken.text
    api = (await client.get(f"/status-pages/{page['id']}", headers=cast.alice.headers)).json()
    assert api["slug"] == "shop-status"


async def test_the_message_form_shows_the_current_message_and_the_history(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    monitor = await as_alice.monitor(url="https://shop.example/", intervalSeconds=300)
    component = await add_component(client, cast.alice, page["id"], monitor["id"], name="Cart")
    csrf = await signed_in(client, cast.alice.email)
    path = f"/app/status-pages/{page['id']}/message"
    assert (await submit(client, path, csrf, message="Deploying at noon.")).status_code == 303
    assert (await submit(client, path, csrf, message="")).status_code == 303
    about = await client.post(
        path, data={"csrf": csrf, "message": "Cart is slow.", "componentIds": component["id"]}
    )
    assert about.status_code == 303
    editor = (await client.get(f"/app/status-pages/{page['id']}")).text
    assert '<textarea id="f-message" name="message" rows="3">Cart is slow.</textarea>' in editor
    history = editor[editor.index("Messages posted") :]
    assert history.index("Cart is slow.") < history.index("cleared")
    assert history.index("cleared") < history.index("Deploying at noon.")
    assert "(shown now)" in history
    assert "<td>Cart</td>" in history
    unknown = await client.post(
        path, data={"csrf": csrf, "message": "x", "componentIds": "nosuchcomponent"}
    )
    assert unknown.status_code == 422
    assert "not components of this page" in unknown.text


async def subscribe(client: httpx.AsyncClient, slug: str, email: str) -> None:
    answer = await client.post(f"/status-pages/public/slug/{slug}/subscribe", json={"email": email})
    assert answer.status_code == 202, answer.text


async def test_subscribers_are_listed_by_pages_and_one_is_removed_after_a_confirmation(
    client: httpx.AsyncClient,
    cast: Cast,
    as_alice: InProject,
    mailbox: Mailbox,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = await as_alice.page()
    for email in ("first@example.com", "second@example.com"):
        await subscribe(client, "shop-status", email)
    csrf = await signed_in(client, cast.alice.email)
    editor = await client.get(f"/app/status-pages/{page['id']}")
    assert "Subscribers (2)" in editor.text
    path = f"/app/status-pages/{page['id']}/subscribers"
    listed = await client.get(path)
    assert "first@example.com" in listed.text
    assert "second@example.com" in listed.text
    assert "not yet" in listed.text  # neither followed the link mailed

    # Both subscribed at the same instant: their order is their ids'.
    monkeypatch.setattr(statuspages, "SUBSCRIBERS_PER_PAGE", 1)
    first, later = await client.get(path), await client.get(f"{path}?offset=1")
    assert "1 to 1 of 2" in first.text
    assert "2 to 2 of 2" in later.text
    on_first = "first@example.com" if "first@example.com" in first.text else "second@example.com"
    on_later = ({"first@example.com", "second@example.com"} - {on_first}).pop()
    assert on_first not in later.text
    assert on_later in later.text

    subscriber = re.search(rf'href="{path}/(\w+)/remove"', later.text)
    assert subscriber
    asked = await client.get(f"{path}/{subscriber.group(1)}/remove")
    assert asked.status_code == 200
    assert f"Remove {on_later}?" in asked.text
    assert f'href="{path}">Cancel</a>' in asked.text
    removed = await submit(client, f"{path}/{subscriber.group(1)}/remove", csrf)
    assert removed.headers["location"] == path
    api = await client.get(f"/status-pages/{page['id']}/subscribers", headers=cast.alice.headers)
    assert [s["email"] for s in api.json()] == [on_first]
    again = await submit(client, f"{path}/{subscriber.group(1)}/remove", csrf)
    assert again.status_code == 404


# The hooks are on loopback, which the guard allows only when told to.
@pytest.mark.parametrize("settings_overrides", [{"allow_private_targets": True}])
async def test_hook_subscribers_are_added_in_the_console_and_listed_with_kind_and_components(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject, runtime: Runtime
) -> None:
    page = await as_alice.page()
    monitor = await as_alice.monitor(url="https://shop.example/", intervalSeconds=300)
    component = await add_component(client, cast.alice, page["id"], monitor["id"], name="Cart")
    await subscribe(client, "shop-status", "reader@example.com")
    csrf = await signed_in(client, cast.alice.email)
    path = f"/app/status-pages/{page['id']}/subscribers"
    refused = await submit(client, path, csrf, kind="slack", url="ftp://example.com/")
    assert refused.status_code == 422
    assert 'aria-describedby="e-url"' in refused.text
    slack = await client.post(
        path,
        data={
            "csrf": csrf,
            "kind": "slack",
            "url": "http://127.0.0.1:9/services/T0/B0/secretpart",
            "componentIds": component["id"],
        },
    )
    assert slack.status_code == 200, slack.text
    assert "whsec_" not in slack.text
    webhook = await submit(client, path, csrf, kind="webhook", url="http://127.0.0.1:9/hook")
    secret = re.search(r"whsec_[A-Za-z0-9+/=]+", webhook.text)
    assert secret  # shown once, here
    listed = await client.get(path)
    assert secret.group(0) not in listed.text
    assert "secretpart" not in listed.text
    rows = [re.sub(r"<[^>]+>", "|", row) for row in listed.text.split("<tr>")[2:]]
    slack_row = next(row for row in rows if "Slack" in row)
    assert "http://127.0.0.1:9/****" in slack_row
    assert "|Cart|" in slack_row
    email_row = next(row for row in rows if "reader@example.com" in row)
    assert "E-mail" in email_row
    assert "|all|" in email_row
    api = await client.get(f"/status-pages/{page['id']}/subscribers", headers=cast.alice.headers)
    # Added at the same instant of the test's clock: sorted by kind here.
    hooks = sorted((s for s in api.json() if s["kind"] != "email"), key=lambda s: s["kind"])
    assert [(s["kind"], s["componentIds"]) for s in hooks] == [
        ("slack", [component["id"]]),
        ("webhook", None),
    ]
    # The change form shows the URL masked; saved as shown, the stored one stays.
    form = await client.get(f"{path}/{hooks[0]['id']}")
    assert 'value="http://127.0.0.1:9/****"' in form.text
    changed = await submit(client, f"{path}/{hooks[0]['id']}", csrf, url="http://127.0.0.1:9/****")
    assert changed.status_code == 303, changed.text
    api = await client.get(f"/status-pages/{page['id']}/subscribers", headers=cast.alice.headers)
    assert [s["componentIds"] for s in api.json() if s["kind"] == "slack"] == [None]
    async with runtime.db.workreader() as session:
        stored = await session.get(StatusPageSubscriber, hooks[0]["id"])
        assert stored is not None
        assert stored.url == "http://127.0.0.1:9/services/T0/B0/secretpart"
    removing = await client.get(f"{path}/{hooks[0]['id']}/remove")
    assert "Remove this slack subscriber?" in removing.text


async def test_deleting_a_status_page_asks_first(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    csrf = await signed_in(client, cast.alice.email)
    editor = await client.get(f"/app/status-pages/{page['id']}")
    path = f"/app/status-pages/{page['id']}/delete"
    assert f'href="{path}"' in editor.text  # a link to the question, not a button
    asked = await client.get(path)
    assert "Delete Shop status?" in asked.text
    assert f'action="{path}"' in asked.text
    assert (await client.get(f"/status-pages/{page['id']}", headers=cast.alice.headers)).is_success
    deleted = await submit(client, path, csrf)
    assert deleted.headers["location"] == "/app/status-pages"
    gone = await client.get(f"/status-pages/{page['id']}", headers=cast.alice.headers)
    assert gone.status_code == 404


async def status_page_with_a_subscriber(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> tuple[dict[str, Any], str]:
    page = await as_alice.page()
    await subscribe(client, "shop-status", "reader@example.com")
    listed = await client.get(f"/status-pages/{page['id']}/subscribers", headers=cast.alice.headers)
    return page, listed.json()[0]["id"]


async def test_another_tenant_finds_no_status_page_setting_or_subscriber(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page, subscriber = await status_page_with_a_subscriber(client, cast, as_alice)
    base = f"/app/status-pages/{page['id']}"
    csrf = await signed_in(client, cast.charlie.email)
    for path in (
        base,
        f"{base}/delete",
        f"{base}/subscribers",
        f"{base}/subscribers/{subscriber}/remove",
    ):
        assert (await client.get(path)).status_code == 404, path
    for path in (f"{base}/settings", f"{base}/subscribers/{subscriber}/remove"):
        answer = await submit(client, path, csrf, **SETTINGS)
        assert answer.status_code == 404, path
        assert "There is no such" in answer.text
    api = (await client.get(f"/status-pages/{page['id']}", headers=cast.alice.headers)).json()
    assert api["name"] == "Shop status"
    assert api["slug"] == "shop-status"


async def test_status_page_and_project_forms_without_the_csrf_token_are_refused(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page, subscriber = await status_page_with_a_subscriber(client, cast, as_alice)
    invited = await as_alice.invite("newcomer@example.com")
    members = await client.get(f"/projects/{cast.project_id}/users", headers=cast.alice.headers)
    invitation = next(m["invitationId"] for m in members.json() if m["invitationId"])
    assert invited.status_code == 201
    await signed_in(client, cast.alice.email)
    project = f"/app/projects/{cast.project_id}"
    for path in (
        f"/app/status-pages/{page['id']}/settings",
        f"/app/status-pages/{page['id']}/subscribers/{subscriber}/remove",
        f"{project}/settings",
        f"{project}/delete",
        f"{project}/invitations/{invitation}/cancel",
    ):
        refused = await client.post(path, data={"name": "Sneaky", "slug": "sneaky"})
        assert refused.status_code == 403, path
        assert "The form has expired" in refused.text
    api = (await client.get(f"/status-pages/{page['id']}", headers=cast.alice.headers)).json()
    assert api["name"] == "Shop status"
    assert (
        len(
            (
                await client.get(f"/projects/{cast.project_id}/users", headers=cast.alice.headers)
            ).json()
        )
        == 3
    )


async def test_the_owner_renames_and_describes_a_project_and_a_member_is_refused(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    path = f"/app/projects/{cast.project_id}"
    page = await client.get(path)
    assert "<td>alice@example.com</td>\n    <td>owner</td>" in page.text
    assert "<td>bob@example.com</td>\n    <td>member</td>" in page.text
    empty = await submit(client, f"{path}/settings", csrf, name="", description="x")
    assert empty.status_code == 422
    assert 'id="e-name"' in empty.text
    saved = await submit(
        client, f"{path}/settings", csrf, name="Storefront", description="The public shop."
    )
    assert saved.status_code == 303
    shown = (await client.get(saved.headers["location"])).text
    assert "Project Storefront saved." in shown
    assert "The public shop." in shown
    api = (await client.get(f"/projects/{cast.project_id}", headers=cast.alice.headers)).json()
    assert (api["name"], api["description"]) == ("Storefront", "The public shop.")

    async with other_session(client, cast.bob.email) as (bob, bob_csrf):
        assert "Name and description" not in (await bob.get(path)).text
        refused = await submit(bob, f"{path}/settings", bob_csrf, name="Mine", description="")
        assert refused.status_code == 403
        assert "only the owner" in refused.text
    async with other_session(client, cast.charlie.email) as (charlie, charlie_csrf):
        assert (await charlie.get(path)).status_code == 404
        walled = await submit(charlie, f"{path}/settings", charlie_csrf, name="Mine")
        assert walled.status_code == 404
    api = (await client.get(f"/projects/{cast.project_id}", headers=cast.alice.headers)).json()
    assert api["name"] == "Storefront"


async def test_the_owner_cancels_a_pending_invitation_and_a_member_cannot(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    for email in ("newcomer@example.com", "later@example.com"):
        assert (await as_alice.invite(email)).status_code == 201
    members = await client.get(f"/projects/{cast.project_id}/users", headers=cast.alice.headers)
    pending = {m["email"]: m["invitationId"] for m in members.json() if m["invitationId"]}
    path = f"/app/projects/{cast.project_id}"

    async with other_session(client, cast.bob.email) as (bob, bob_csrf):
        assert "Cancel the invitation" not in (await bob.get(path)).text
        tried = await submit(
            bob, f"{path}/invitations/{pending['later@example.com']}/cancel", bob_csrf
        )
        assert tried.headers["location"] == path
        told = (await bob.get(path)).text
        assert "Not cancelled: only the owner" in told

    csrf = await signed_in(client, cast.alice.email)
    cancelled = await submit(
        client, f"{path}/invitations/{pending['newcomer@example.com']}/cancel", csrf
    )
    assert cancelled.status_code == 303
    page = (await client.get(path)).text
    assert "Invitation cancelled" in page
    assert "newcomer@example.com" not in page
    assert "later@example.com</td><td>invited" in page
    members = await client.get(f"/projects/{cast.project_id}/users", headers=cast.alice.headers)
    assert "newcomer@example.com" not in [m["email"] for m in members.json()]


async def test_a_project_is_deleted_after_a_confirmation_by_its_owner_only(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    path = f"/app/projects/{cast.project_id}"
    async with other_session(client, cast.bob.email) as (bob, bob_csrf):
        assert f'href="{path}/delete"' not in (await bob.get(path)).text
        tried = await submit(bob, f"{path}/delete", bob_csrf)
        assert tried.headers["location"] == path
        assert "Not deleted: only the owner" in (await bob.get(path)).text
    async with other_session(client, cast.charlie.email) as (charlie, charlie_csrf):
        assert (await charlie.get(f"{path}/delete")).status_code == 404
        assert (await submit(charlie, f"{path}/delete", charlie_csrf)).status_code == 404

    csrf = await signed_in(client, cast.alice.email)
    assert f'href="{path}/delete"' in (await client.get(path)).text
    asked = await client.get(f"{path}/delete")
    assert "Delete Shop?" in asked.text
    assert f'href="{path}">Cancel</a>' in asked.text
    deleted = await submit(client, f"{path}/delete", csrf)
    assert deleted.headers["location"] == "/app/projects"
    assert "Project deleted" in (await client.get("/app/projects")).text
    gone = await client.get(f"/projects/{cast.project_id}", headers=cast.alice.headers)
    assert gone.status_code == 404


async def test_the_settings_form_makes_a_password_page_behind_an_allowlist_and_keeps_its_password(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject
) -> None:
    page = await as_alice.page()
    csrf = await signed_in(client, cast.alice.email)
    path = f"/app/status-pages/{page['id']}/settings"
    bad = {**SETTINGS, "allowedNetworks": "203.0.113.0/24\nnot a network"}
    refused = await submit(client, path, csrf, **bad)
    assert refused.status_code == 422
    assert 'id="e-allowedNetworks' in refused.text
    locked = {
        **SETTINGS,
        "visibility": "password",
        "password": "vault door 2026",
        "allowedNetworks": "203.0.113.0/24\n\n 2001:db8::/32 ",
    }
    assert (await submit(client, path, csrf, **locked)).status_code == 303
    editor = await client.get(f"/app/status-pages/{page['id']}")
    assert "vault door 2026" not in editor.text
    assert "Password-protected" in editor.text
    # Saved again with the password box left empty: the password stays.
    assert (await submit(client, path, csrf, **{**locked, "password": ""})).status_code == 303
    api = (await client.get(f"/status-pages/{page['id']}", headers=cast.alice.headers)).json()
    assert (api["visibility"], api["hasPassword"], api["allowedNetworks"]) == (
        "password",
        True,
        ["203.0.113.0/24", "2001:db8::/32"],
    )
    unlocked = await client.post(
        "/status-pages/public/slug/shop-live/unlock", json={"password": "vault door 2026"}
    )
    assert unlocked.status_code == 204
