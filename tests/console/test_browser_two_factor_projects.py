"""A project that requires two-factor, in headless Chromium against a real `upwatch serve`
(once, not per database): the owner ticks the box on the project's page, and a member without
a second factor who opens the project, or a monitor in it, sees the page that says why, with
the way to the security settings.

The owner's TOTP is turned on straight in the server's database (``users.totp_enabled_at``,
what confirming an enrolment stores) after she signed in, so the test does not depend on the
console's second sign-in step, which has tests of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from sqlalchemy import create_engine, update

from tests.browser import console_server, start_browser
from tests.conftest import PASSWORD
from tests.console.test_browser import fill, flash, submit, wait_for
from tests.live_server import LiveServer
from upwatch.models import User

pytestmark = pytest.mark.db_independent
BOX = "input[type=checkbox][name=require_two_factor]"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with console_server(Path(tmp_path_factory.mktemp("console-two-factor"))) as live:
        yield live


def change_user(server: LiveServer, user_id: str, **values: object) -> None:
    """Change an account in the server's own SQLite file, as the CLI would."""
    engine = create_engine(f"sqlite:///{server.cwd / 'upwatch.db'}")
    try:
        with engine.begin() as connection:
            connection.execute(update(User).where(User.id == user_id).values(**values))
    finally:
        engine.dispose()


def sign_up(api: httpx.Client, email: str) -> tuple[str, dict[str, str]]:
    answer = api.post("/auth/signup", json={"email": email, "password": PASSWORD})
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return body["user"]["id"], {"Authorization": f"Bearer {body['access_token']}"}


def sign_in(browser: WebDriver, server: LiveServer, email: str) -> None:
    browser.delete_all_cookies()
    browser.get(f"{server.url}/app/login")
    fill(browser, email=email, password=PASSWORD)
    submit(browser)
    wait_for(browser, lambda b: str(b.current_url).endswith("/app/dashboard"))


def test_the_owner_requires_two_factor_and_a_member_without_it_is_shown_why(
    server: LiveServer,
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as api:
        alice_id, alice = sign_up(api, "alice@example.com")
        bob_id, _bob = sign_up(api, "bob@example.com")
        # A verified address is added at once (no invitation link to follow).
        change_user(server, bob_id, is_email_verified=True)
        project = api.post("/projects", headers=alice, json={"name": "Shop"})
        assert project.status_code == 201, project.text
        project_id = project.json()["id"]
        invited = api.post(
            f"/projects/{project_id}/users", headers=alice, json={"email": "bob@example.com"}
        )
        assert invited.json()["status"] == "added", invited.text
        monitor = api.post(
            "/monitors",
            headers=alice,
            json={
                "projectId": project_id,
                "name": "Checkout",
                "type": "http",
                "url": f"{server.url}/healthz",
                "intervalSeconds": 60,
            },
        )
        assert monitor.status_code == 201, monitor.text

    browser = start_browser(javascript=False)
    try:
        sign_in(browser, server, "alice@example.com")
        browser.get(f"{server.url}/app/projects/{project_id}")
        box = browser.find_element(By.CSS_SELECTOR, BOX)
        # Without a second factor of her own she is told to turn one on first.
        box.click()
        submit(browser, "form[action$='/two-factor']")
        # The refusal's own words: the field's hint says "first" too.
        wait_for(browser, lambda b: "would shut you out" in b.page_source)

        change_user(server, alice_id, totp_enabled_at=datetime.now(UTC))
        browser.get(f"{server.url}/app/projects/{project_id}")
        browser.find_element(By.CSS_SELECTOR, BOX).click()
        submit(browser, "form[action$='/two-factor']")
        wait_for(browser, lambda b: "Members now need two-factor sign-in" in flash(b))
        assert browser.find_element(
            By.CSS_SELECTOR, "input[type=checkbox][name=require_two_factor]"
        ).is_selected()

        sign_in(browser, server, "bob@example.com")
        browser.get(f"{server.url}/app/projects")
        assert "two-factor sign-in required" in browser.page_source, browser.page_source[:3000]
        for page in (f"/app/projects/{project_id}", f"/app/monitors/{monitor.json()['id']}"):
            browser.get(f"{server.url}{page}")
            main = browser.find_element(By.TAG_NAME, "main").text
            assert "This project requires two-factor sign-in" in main, page
            assert "security settings" in main
            link = browser.find_element(By.LINK_TEXT, "Turn on two-factor authentication")
            assert str(link.get_attribute("href")).endswith("/app/settings/security")
            # Nothing of the project is shown.
            assert "Checkout" not in main

        # Once Bob has a second factor, the project opens.
        change_user(server, bob_id, totp_enabled_at=datetime.now(UTC))
        browser.get(f"{server.url}/app/projects/{project_id}")
        assert "Members and their roles" in browser.page_source
    finally:
        browser.quit()
