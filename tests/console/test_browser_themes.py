"""Every console page in both themes in headless Chromium: an administrator with a project,
a monitor, a status page, a provider and an incident (made through the API) sets the light
theme, then the dark one, and each time axe-core reads every page the console links to.

Pages are found by following links, so a page added later is read without naming it here.
Set UPWATCH_SCREENSHOT_DIR to keep docs' screenshots of the plan, the mail outbox and the
monitors in the dark theme.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import accessibility_violations, console_server, start_browser
from tests.conftest import PASSWORD
from tests.console.test_browser import flash, wait_for
from tests.live_server import ROOT_EMAIL, LiveServer, ThreadedTarget, create_root

pytestmark = pytest.mark.db_independent

MAX_PAGES = 80
SKIPPED = ("/app/logout", "/app/static")
# An id in a path (hex, a number): one monitor's page stands for every monitor's.
ID = re.compile(r"^(?:[0-9a-f]{16,}|\d+)$")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with console_server(
        Path(tmp_path_factory.mktemp("console-themes")),
        prepare=create_root,
        UPWATCH_ADMIN_PASSWORD=PASSWORD,
    ) as live:
        yield live


def _made(response: httpx.Response) -> str:
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def furnish(api: httpx.Client, target: str) -> None:
    """One of each thing the console shows, made through the API as the administrator."""
    project = _made(api.post("/projects", json={"name": "Shop"}))
    monitor = _made(
        api.post(
            "/monitors",
            json={"projectId": project, "name": "Shop", "type": "http", "url": target},
        )
    )
    _made(api.post("/status-pages", json={"projectId": project, "name": "Shop", "slug": "shop"}))
    hook = {"url": "https://hooks.example.com/up"}
    _made(
        api.post(
            "/notification-providers",
            json={"projectId": project, "name": "Hook", "type": "webhook", "config": hook},
        )
    )
    incident = {"projectId": project, "title": "Checkout slow", "monitorId": monitor}
    _made(api.post("/incidents", json=incident))


def shape(path: str, query: str) -> str:
    """What stands for every page like this one: ids replaced, and the query's names only."""
    parts = ["{id}" if ID.match(part) else part for part in path.split("/")]
    names = sorted(pair.split("=")[0] for pair in query.split("&") if pair)
    return "/".join(parts) + ("?" + "&".join(names) if names else "")


def links(browser: WebDriver, origin: str) -> list[str]:
    found = []
    for anchor in browser.find_elements(By.CSS_SELECTOR, "a[href]"):
        href = anchor.get_attribute("href") or ""
        parts = urlsplit(href)
        if f"{parts.scheme}://{parts.netloc}" != origin or not parts.path.startswith("/app"):
            continue
        if parts.path.startswith(SKIPPED) or parts.path.endswith(".csv"):
            continue
        found.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return found


def crawl(browser: WebDriver, origin: str) -> dict[str, list[str]]:
    """axe-core's serious findings by page, over every page reachable from the navigation."""
    queue, seen, found = ["/app/monitors"], set[str](), {}
    while queue and len(found) < MAX_PAGES:
        address = queue.pop(0)
        parts = urlsplit(address)
        key = shape(parts.path, parts.query)
        if key in seen:
            continue
        seen.add(key)
        browser.get(origin + address)
        wait_for(browser, lambda b: b.execute_script("return document.readyState") == "complete")
        found[key] = accessibility_violations(browser)
        queue.extend(links(browser, origin))
    return found


def shoot(browser: WebDriver, origin: str, path: str, name: str) -> None:
    shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
    if shots:
        browser.get(origin + path)
        browser.save_screenshot(str(Path(shots) / f"console-{name}.png"))


def sign_in(browser: WebDriver, origin: str) -> None:
    browser.get(f"{origin}/app/login")
    browser.find_element(By.NAME, "email").send_keys(ROOT_EMAIL)
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    wait_for(browser, lambda b: urlsplit(b.current_url).path == "/app/dashboard")


def test_every_console_page_passes_axe_core_in_the_light_and_the_dark_theme(
    server: LiveServer,
) -> None:
    with ThreadedTarget() as target, httpx.Client(base_url=server.url, timeout=30) as api:
        login = api.post("/auth/login", json={"email": ROOT_EMAIL, "password": PASSWORD})
        assert login.status_code == 200, login.text
        api.headers["Authorization"] = f"Bearer {login.json()['access_token']}"
        furnish(api, target.base)
        browser = start_browser(javascript=True)
        try:
            sign_in(browser, server.url)
            problems = {}
            for theme in ("light", "dark"):
                chosen = api.put("/users/settings", json={"theme": theme})
                assert chosen.status_code == 200, chosen.text
                read = crawl(browser, server.url)
                # The crawl reached the pages behind the nav, the objects' and the admin's.
                reached = {"/app/plan", "/app/admin/mail", "/app/monitors/{id}"}
                audit = {
                    "/app/projects/{id}/audit-log",
                    "/app/admin/audit-log",
                    "/app/settings/security-events",
                }
                assert reached | audit <= set(read), read
                for page, found in read.items():
                    if found:
                        problems[f"{page} ({theme})"] = found
                shoot(browser, server.url, "/app/monitors", "dark" if theme == "dark" else "light")
                if theme == "light":
                    shoot(browser, server.url, "/app/plan", "plan")
                    shoot(browser, server.url, "/app/admin/mail", "admin-mail")
        finally:
            browser.quit()
    assert problems == {}, problems


def test_without_javascript_an_administrator_adds_and_deletes_a_region_in_the_dark_theme(
    server: LiveServer,
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as api:
        login = api.post("/auth/login", json={"email": ROOT_EMAIL, "password": PASSWORD})
        assert login.status_code == 200, login.text
        headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
        chosen = api.put("/users/settings", headers=headers, json={"theme": "dark"})
        assert chosen.status_code == 200, chosen.text
    browser = start_browser(javascript=False)
    try:
        sign_in(browser, server.url)
        assert browser.find_element(By.TAG_NAME, "html").get_attribute("data-theme") == "dark"
        browser.get(f"{server.url}/app/admin/regions")
        browser.find_element(By.NAME, "code").send_keys("eu-west")
        browser.find_element(By.NAME, "name").send_keys("Europe west")
        browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
        wait_for(browser, lambda b: "Region eu-west added." in flash(b))
        browser.find_element(By.PARTIAL_LINK_TEXT, "Delete").click()
        wait_for(browser, lambda b: "Delete the region eu-west?" in b.title)
        browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
        wait_for(browser, lambda b: "Region deleted." in flash(b))
        browser.get(f"{server.url}/app/plan")
        assert "e+09" not in browser.page_source
    finally:
        browser.quit()
