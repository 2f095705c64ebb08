"""Component groups and the page's time zone in headless Chromium against a real
`upwatch serve`: a group folds and unfolds without JavaScript, times read in the page's zone,
and axe-core finds nothing serious on the public page or on the console's editor with groups."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser import BROWSER_SECONDS, accessibility_violations, require_browser, start_browser
from tests.conftest import PASSWORD
from tests.factories import bearer
from tests.live_server import LiveServer, clean_env

EMAIL = "owner@example.com"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    require_browser()
    live = LiveServer(Path(tmp_path_factory.mktemp("browser-groups")), clean_env()).start()
    yield live
    live.stop()


@pytest.fixture(scope="module")
def page(server: LiveServer) -> dict[str, Any]:
    """A public page in Tokyo's time: Backend (Checkout, Catalogue) and an ungrouped Search,
    with an open incident on Checkout, made through the API as an owner would."""
    with httpx.Client(base_url=server.url) as api:
        signup = api.post(
            "/auth/signup", json={"email": EMAIL, "password": PASSWORD, "firstName": "Olga"}
        )
        headers = bearer(signup, 201)
        project = api.post("/projects", headers=headers, json={"name": "Shop"}).json()["id"]
        created = api.post(
            "/status-pages",
            headers=headers,
            json={"projectId": project, "name": "Shop", "slug": "shop", "timeZone": "Asia/Tokyo"},
        )
        assert created.status_code == 201, created.text
        status_page: dict[str, Any] = created.json()
        base = f"/status-pages/{status_page['id']}"
        group = api.post(f"{base}/groups", headers=headers, json={"name": "Backend", "order": 0})
        assert group.status_code == 201, group.text
        monitors = []
        for name, grouped in (("Checkout", True), ("Catalogue", True), ("Search", False)):
            monitor = api.post(
                "/monitors",
                headers=headers,
                json={
                    "projectId": project,
                    "name": name,
                    "type": "http",
                    "url": "https://shop.example/health",
                    "intervalSeconds": 300,
                    "isActive": False,
                },
            )
            assert monitor.status_code == 201, monitor.text
            monitors.append(monitor.json()["id"])
            body = {"monitorId": monitor.json()["id"], "order": len(monitors)}
            if grouped:
                body["groupId"] = group.json()["id"]
            added = api.post(f"{base}/components", headers=headers, json=body)
            assert added.status_code == 201, added.text
        incident = api.post(
            "/incidents",
            headers=headers,
            json={
                "projectId": project,
                "monitorId": monitors[0],
                "title": "Card payments fail",
                "status": "identified",
                "severity": "high",
            },
        )
        assert incident.status_code == 201, incident.text
    return {**status_page, "group": group.json()}


def _members_shown(browser: WebDriver) -> list[str]:
    return [
        e.text
        for e in browser.find_elements(By.CSS_SELECTOR, ".group .component h3")
        if e.is_displayed()
    ]


def test_a_group_folds_and_unfolds_without_javascript_and_times_read_in_the_pages_zone(
    server: LiveServer, page: dict[str, Any]
) -> None:
    browser = start_browser(javascript=False)
    try:
        browser.get(f"{server.url}/s/shop")
        summary = browser.find_element(By.CSS_SELECTOR, ".group summary")
        assert summary.text.splitlines()[0] == "Backend"
        # Not checked yet, so not known to be fine: open.
        assert _members_shown(browser) == ["Checkout", "Catalogue"]
        summary.click()
        WebDriverWait(browser, BROWSER_SECONDS).until(lambda b: _members_shown(b) == [])
        summary.click()
        WebDriverWait(browser, BROWSER_SECONDS).until(lambda b: len(_members_shown(b)) == 2)
        loose = [
            e.text
            for e in browser.find_elements(By.CSS_SELECTOR, "#components > ul > .component h3")
        ]
        assert loose == ["Search"]
        began = browser.find_element(By.CSS_SELECTOR, ".incident .meta time")
        assert began.text.endswith(" JST")
        assert (began.get_attribute("datetime") or "").endswith("Z")
    finally:
        browser.quit()


def test_axe_finds_nothing_serious_on_a_grouped_page_and_its_editor(
    server: LiveServer, page: dict[str, Any]
) -> None:
    browser = start_browser(javascript=True)
    try:
        browser.get(f"{server.url}/s/shop")
        found = {"public page": accessibility_violations(browser)}
        browser.get(f"{server.url}/app/login")
        browser.find_element(By.NAME, "email").send_keys(EMAIL)
        browser.find_element(By.NAME, "password").send_keys(PASSWORD)
        browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
        WebDriverWait(browser, BROWSER_SECONDS).until(lambda b: "/app/dashboard" in b.current_url)
        browser.get(f"{server.url}/app/status-pages/{page['id']}")
        WebDriverWait(browser, BROWSER_SECONDS).until(
            lambda b: b.find_elements(By.ID, f"group-{page['group']['id']}")
        )
        found["editor"] = accessibility_violations(browser)
        assert found == {"public page": [], "editor": []}
    finally:
        browser.quit()
