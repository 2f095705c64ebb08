"""The sessions page in headless Chromium against a real `upwatch serve`: a person signed in
in the browser and twice over the API sees all three sessions, "This browser" marked, ends
one API login (its token is refused at once), then signs out everywhere else and stays
signed in here alone. Once with JavaScript, once without. axe-core reads the page.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from tests.browser import accessibility_violations, console_server, start_browser
from tests.conftest import PASSWORD
from tests.console.test_browser import fill, flash, submit, wait_for
from tests.live_server import LiveServer

pytestmark = pytest.mark.db_independent


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with console_server(Path(tmp_path_factory.mktemp("console-sessions"))) as live:
        yield live


def api_login(server: LiveServer, email: str, agent: str) -> dict[str, str]:
    answer = httpx.post(
        f"{server.url}/auth/login",
        json={"email": email, "password": PASSWORD},
        headers={"User-Agent": agent},
    )
    assert answer.status_code == 200, answer.text
    tokens: dict[str, str] = answer.json()
    return tokens


def profile_status(server: LiveServer, tokens: dict[str, str]) -> int:
    headers = {"Authorization": f"Bearer {tokens['access_token']}"}
    return httpx.get(f"{server.url}/users/me", headers=headers).status_code


def row_with(browser: WebDriver, text: str) -> list[WebElement]:
    rows = browser.find_elements(By.CSS_SELECTOR, "table.sessions tbody tr")
    return [row for row in rows if text in row.text]


def sign_in(browser: WebDriver, server: LiveServer, email: str) -> None:
    browser.get(f"{server.url}/app/login")
    fill(browser, email=email, password=PASSWORD)
    submit(browser)
    wait_for(browser, lambda b: "/app/dashboard" in b.current_url)


def sign_up(server: LiveServer, email: str) -> None:
    signed_up = httpx.post(
        f"{server.url}/auth/signup",
        json={"email": email, "password": PASSWORD},
        headers={"User-Agent": "signup-cli/1.0"},
    )
    assert signed_up.status_code == 201


@pytest.mark.parametrize("javascript", [True, False], ids=["script", "no-script"])
def test_a_person_sees_and_ends_their_sessions_in_the_console(
    server: LiveServer, javascript: bool
) -> None:
    email = f"sessions-{'js' if javascript else 'nojs'}@example.com"
    sign_up(server, email)
    deploy = api_login(server, email, "deploy-script/1.0")
    laptop = api_login(server, email, "laptop-cli/3.1")
    browser = start_browser(javascript=javascript)
    try:
        sign_in(browser, server, email)
        browser.get(f"{server.url}/app/settings")
        browser.find_element(By.LINK_TEXT, "Sessions").click()
        wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "table.sessions"))

        [this] = row_with(browser, "This browser")
        assert "HeadlessChrome" in this.text
        assert row_with(browser, "deploy-script/1.0")
        assert row_with(browser, "laptop-cli/3.1")
        shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
        if shots and javascript:
            browser.save_screenshot(str(Path(shots) / "console-sessions.png"))

        [deploy_row] = row_with(browser, "deploy-script/1.0")
        deploy_row.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait_for(browser, lambda b: "The session is ended." in flash(b))
        assert not row_with(browser, "deploy-script/1.0")
        assert profile_status(server, deploy) == 401
        assert profile_status(server, laptop) == 200

        submit(browser, "form.card")
        wait_for(browser, lambda b: "Signed out everywhere else (2 sessions)." in flash(b))
        assert profile_status(server, laptop) == 401
        rows = browser.find_elements(By.CSS_SELECTOR, "table.sessions tbody tr")
        assert len(rows) == 1
        assert "This browser" in rows[0].text

        # Ending this browser's own session signs out.
        rows[0].find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait_for(browser, lambda b: "You are signed out." in flash(b))
        browser.get(f"{server.url}/app/settings/sessions")
        wait_for(browser, lambda b: "/app/login" in b.current_url)
    finally:
        browser.quit()


def test_the_sessions_page_has_no_serious_accessibility_findings(server: LiveServer) -> None:
    email = "sessions-axe@example.com"
    sign_up(server, email)
    browser = start_browser(javascript=True)
    try:
        sign_in(browser, server, email)
        browser.get(f"{server.url}/app/settings/sessions")
        wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "table.sessions"))
        assert accessibility_violations(browser) == []
    finally:
        browser.quit()
