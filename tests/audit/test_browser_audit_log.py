"""A project's audit log in headless Chromium against a real `upwatch serve`: its owner
opens it from the project page, filters it by kind with the page's form, and axe-core
finds nothing serious on it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import accessibility_violations, console_server, start_browser
from tests.conftest import PASSWORD
from tests.console.test_browser import fill, submit, wait_for
from tests.live_server import LiveServer

pytestmark = pytest.mark.db_independent


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with console_server(Path(tmp_path_factory.mktemp("console-audit"))) as live:
        yield live


def kinds_shown(browser: WebDriver) -> list[str]:
    cells = browser.find_elements(By.CSS_SELECTOR, "table.audit-log tbody td:nth-child(2) code")
    return [cell.text for cell in cells]


def test_the_owner_filters_the_projects_audit_log_by_kind(server: LiveServer) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as api:
        signed_up = api.post(
            "/auth/signup", json={"email": "ines@example.com", "password": PASSWORD}
        )
        assert signed_up.status_code == 201, signed_up.text
        api.headers["Authorization"] = f"Bearer {signed_up.json()['access_token']}"
        project = api.post("/projects", json={"name": "Shop"}).json()["id"]
        key = api.post(f"/projects/{project}/api-keys", json={"name": "CI", "scope": "read"}).json()
        invited = api.post(f"/projects/{project}/users", json={"email": "ola@example.com"})
        assert invited.status_code == 201, invited.text
        revoked = api.delete(f"/projects/{project}/api-keys/{key['id']}")
        assert revoked.status_code == 200, revoked.text

    browser = start_browser(javascript=True)
    try:
        browser.get(f"{server.url}/app/login")
        fill(browser, email="ines@example.com", password=PASSWORD)
        submit(browser)
        wait_for(browser, lambda b: b.current_url.endswith("/app/dashboard"))
        browser.get(f"{server.url}/app/projects/{project}")
        browser.find_element(By.LINK_TEXT, "Audit log").click()
        wait_for(browser, lambda b: "member.invited" in kinds_shown(b))
        assert "api_key.created" in kinds_shown(browser)
        assert "api_key.revoked" in kinds_shown(browser)
        assert key["prefix"] in browser.page_source
        assert key["key"] not in browser.page_source
        assert accessibility_violations(browser) == []
        shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
        if shots:
            browser.save_screenshot(str(Path(shots) / "console-audit-log.png"))

        fill(browser, kind="api_key.created")
        submit(browser, "form.filters")
        wait_for(browser, lambda b: "kind=api_key.created" in b.current_url)
        assert kinds_shown(browser) == ["api_key.created"]
        assert accessibility_violations(browser) == []
    finally:
        browser.quit()
