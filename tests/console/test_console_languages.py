"""The console in the visitor's language (docs/languages.md): every page a person reads is
drawn from marked texts only (a pseudo-language finds any text left unmarked), a user's
``language`` setting picks the language of their pages, and signed-out pages follow the
browser's ``Accept-Language``."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import httpx
import pytest
from markupsafe import escape

from tests.app_settings import overriding
from tests.conftest import Account, SignUp
from tests.console.forms import signed_in, submit
from tests.factories import (
    add_component,
    change_settings,
    create_incident,
    create_monitor,
    create_page,
    create_provider,
)
from tests.kit.test_translations import Pseudo, Texts
from upwatch.console.render import words_in
from upwatch.kit import languages

settings_overrides = overriding(allow_private_targets=True)

# What the owner wrote is named with an omega, so the test can tell it from our texts.
OWNER = "Ω"


async def _fill(client: httpx.AsyncClient, owner: Account) -> dict[str, str]:
    """One of each thing the console shows, in a project of ``owner``'s; their ids."""
    headers = owner.headers
    made = await client.post("/projects", headers=headers, json={"name": f"{OWNER}proj"})
    assert made.status_code == 201, made.text
    project = made.json()["id"]
    monitor = await create_monitor(
        client, owner, project, name=f"{OWNER}web", url="http://127.0.0.1:9/", intervalSeconds=300
    )
    incident = await create_incident(client, owner, project, title=f"{OWNER}slow")
    page = await create_page(client, owner, project, name=f"{OWNER}page", slug="omega")
    await add_component(client, owner, page["id"], monitor["id"])
    provider = await create_provider(
        client,
        headers,
        project,
        type="email",
        name=f"{OWNER}team",
        config={"to": ["team@example.com"]},
    )
    ids = {"project": project, "monitor": monitor["id"], "incident": incident["id"]}
    ids |= {"page": page["id"], "provider": provider["id"]}
    for path, body in (
        (
            "/maintenance-windows",
            {
                "title": f"{OWNER}upgrade",
                "startsAt": "2030-01-01T00:00:00Z",
                "endsAt": "2030-01-01T01:00:00Z",
            },
        ),
        (
            "/escalation-policies",
            {
                "name": f"{OWNER}oncall",
                "steps": [{"providerIds": [provider["id"]], "delayMinutes": 5}],
            },
        ),
    ):
        made = await client.post(path, headers=headers, json={"projectId": project, **body})
        assert made.status_code == 201, made.text
        ids[path.strip("/")] = made.json()["id"]
    key = await client.post(
        f"/projects/{project}/api-keys",
        headers=headers,
        json={"name": f"{OWNER}ci", "scope": "read"},
    )
    assert key.status_code == 201, key.text
    ids["key"] = key.json()["id"]
    return ids


# Every page a signed-in person reads, by what it shows.
SIGNED_IN = (
    "/app/dashboard",
    "/app/monitors",
    "/app/monitors/new",
    "/app/monitors/rows",
    "/app/monitors/{monitor}",
    "/app/monitors/{monitor}/edit",
    "/app/monitors/{monitor}/clone",
    "/app/monitors/{monitor}/delete",
    "/app/monitors/{monitor}/state",
    "/app/monitors/{monitor}/report",
    "/app/incidents",
    "/app/incidents/new",
    "/app/incidents/rows",
    "/app/incidents/{incident}",
    "/app/incidents/{incident}/delete",
    "/app/notifications",
    "/app/notifications/new",
    "/app/notifications/{provider}",
    "/app/notifications/{provider}/delete",
    "/app/status-pages",
    "/app/status-pages/{page}",
    "/app/status-pages/{page}/delete",
    "/app/maintenance",
    "/app/maintenance/{maintenance-windows}/edit",
    "/app/escalation-policies",
    "/app/escalation-policies/new",
    "/app/escalation-policies/{escalation-policies}",
    "/app/escalation-policies/{escalation-policies}/delete",
    "/app/projects",
    "/app/projects/{project}",
    "/app/projects/{project}/delete",
    "/app/projects/{project}/api-keys",
    "/app/projects/{project}/audit-log",
    "/app/projects/{project}/sla",
    "/app/plan",
    "/app/settings",
    "/app/settings/delete",
    "/app/settings/security",
    "/app/settings/security-events",
    "/app/settings/sessions",
    "/app/settings/passkeys",
    "/app/admin",
    "/app/admin/users",
    "/app/admin/regions",
    "/app/admin/mail",
    "/app/admin/contact",
    "/app/admin/audit-log",
    "/app/monitors/not-a-monitor",
)
SIGNED_OUT = (
    "/app/login",
    "/app/signup",
    "/app/forgot-password",
    "/app/reset-password?token=x",
    "/app/invitations/accept?token=x",
)

# What is not a text to translate: dates and figures, ids, addresses, names of protocols and
# products, and each language's own name.
NOT_WORDS = re.compile(
    r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2}(:\d{2})?)?( UTC)?|https?://\S+|[\w.+-]+@[\w.-]+|"
    + OWNER
    + r"\w*|\b[0-9a-f]{32}\b|[\d.,%]+|ms\b|[·:,()/|\u00d7→←…\s*#+-]|UTC|Upwatch|"
    + "|".join(re.escape(name) for name in languages.NAMES.values())
)


def _unmarked(texts: list[str]) -> list[str]:
    """What is left of ``texts`` once marked texts, the owner's words and figures are gone."""
    left = "\n".join(texts)
    while True:
        inner = re.sub(r"⟦[^⟦⟧]*⟧", " ", left)
        if inner == left:
            break
        left = inner
    return [line.strip() for line in NOT_WORDS.sub(" ", left).splitlines() if line.strip()]


async def test_every_console_page_shows_only_marked_texts_and_the_owners(
    client: httpx.AsyncClient,
    sign_up: SignUp,
    make_admin: Callable[[Account, str], Awaitable[None]],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    owner = await sign_up("owner@example.com", firstName=f"{OWNER}ann")
    await make_admin(owner, "admin")
    ids = await _fill(client, owner)
    monkeypatch.setattr(languages, "translations", lambda _language: Pseudo())
    # Each language's words are made once per process: made again here, and after the test.
    words_in.cache_clear()
    request.addfinalizer(words_in.cache_clear)
    found: dict[str, list[str]] = {}
    for path in SIGNED_OUT:
        answer = await client.get(path)
        assert answer.status_code < 500, (path, answer.text)
        parser = Texts()
        parser.feed(answer.text)
        if left := _unmarked(parser.texts):
            found[path] = left
    await signed_in(client, owner.email)
    for pattern in SIGNED_IN:
        path = pattern.format_map(ids)
        answer = await client.get(path)
        assert answer.status_code in (200, 404), (path, answer.status_code, answer.text)
        parser = Texts()
        parser.feed(answer.text)
        assert parser.texts, path
        if left := _unmarked(parser.texts):
            found[pattern] = left
    assert not found, "unmarked:\n" + "\n".join(f"{path}: {texts}" for path, texts in found.items())


async def test_a_user_whose_settings_say_fr_reads_the_console_in_french(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    owner = await sign_up("owner@example.com")
    changed = await change_settings(client, owner, language="fr")
    assert changed.status_code == 200, changed.text
    await signed_in(client, owner.email)
    dashboard = await client.get("/app/dashboard")
    assert dashboard.headers["content-language"] == "fr"
    assert '<html lang="fr"' in dashboard.text
    french = languages.translations("fr").gettext
    for text in ("Dashboard", "Sign out", "Status pages"):
        assert french(text) != text
        assert f">{escape(french(text))}<" in dashboard.text, text
    assert ">Sign out<" not in dashboard.text
    # Her browser's language does not outweigh her setting.
    german = await client.get("/app/dashboard", headers={"Accept-Language": "de"})
    assert german.headers["content-language"] == "fr"


async def test_signed_out_pages_follow_the_browsers_language(client: httpx.AsyncClient) -> None:
    asked = await client.get("/app/login", headers={"Accept-Language": "de-CH, fr;q=0.5"})
    assert asked.headers["content-language"] == "de"
    assert '<html lang="de"' in asked.text
    assert f">{escape(languages.translations('de').gettext('Password'))}<" in asked.text
    unknown = await client.get("/app/login", headers={"Accept-Language": "tlh"})
    assert unknown.headers["content-language"] == "en"
    assert "Password" in unknown.text


def test_every_label_and_hint_of_the_monitor_form_is_a_marked_text() -> None:
    """The monitor form's boxes are made from the API's models (monitor_form.py): a label or
    hint that changes there must change in the marked tables too, or it shows in English."""
    from upwatch.console import monitor_form
    from upwatch.console.endpoints.monitor_changes import COMMON_BOXES, KINDS

    marked = set(monitor_form.TYPE_HINTS) | set(monitor_form.HINTS.values())
    labels = set(monitor_form.LABELS.values())
    for kind in KINDS.values():
        declared = {field.label for field in kind.form}
        for box in [*monitor_form.type_boxes(kind), *COMMON_BOXES]:
            assert not box.hint or box.hint in marked, (kind.name, box.name, box.hint)
            assert box.label in labels | declared, (kind.name, box.name, box.label)


async def test_the_project_page_sets_the_language_of_the_projects_alerts(
    client: httpx.AsyncClient, sign_up: SignUp
) -> None:
    owner = await sign_up("owner@example.com")
    made = await client.post("/projects", headers=owner.headers, json={"name": "Shop"})
    project = made.json()["id"]
    csrf = await signed_in(client, owner.email)
    page = await client.get(f"/app/projects/{project}")
    assert 'name="alertLanguage"' in page.text
    saved = await submit(
        client,
        f"/app/projects/{project}/settings",
        csrf,
        name="Shop",
        description="",
        alertLanguage="ko",
    )
    assert saved.status_code == 303, saved.text
    read = await client.get(f"/projects/{project}", headers=owner.headers)
    assert read.json()["alertLanguage"] == "ko"
    refused = await submit(
        client, f"/app/projects/{project}/settings", csrf, name="Shop", alertLanguage="xx"
    )
    assert refused.status_code == 422
    assert 'id="e-alertLanguage"' in refused.text
