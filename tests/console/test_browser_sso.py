"""Single sign-on in headless Chromium: a real `upwatch serve` and a real OpenID provider
(oidc-provider, tests/accounts/oidc_provider.mjs), both on loopback. A person signs in
through the provider's own login form and lands on the dashboard; signing in again reaches
the same account; a password account with the same verified e-mail is linked; an unverified
e-mail is refused with a readable page; the provider's groups make an administrator. The
server's log never holds the client secret."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import accessibility_violations, console_server, start_browser
from tests.conftest import PASSWORD, free_port
from tests.console.test_browser import click, fill, submit, wait_for
from tests.live_server import LiveServer
from tests.openid_provider import (
    CLIENT_ID,
    CLIENT_SECRET,
    OpenIdServer,
    openid_provider,
    require_provider,
)

pytestmark = pytest.mark.db_independent


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, OpenIdServer]]:
    require_provider()
    port = free_port()
    with (
        console_server(
            Path(tmp_path_factory.mktemp("sso")),
            UPWATCH_OIDC_ISSUER=f"http://127.0.0.1:{port}",
            UPWATCH_OIDC_CLIENT_ID=CLIENT_ID,
            UPWATCH_OIDC_CLIENT_SECRET=CLIENT_SECRET,
            UPWATCH_OIDC_SCOPES="openid email profile groups",
            UPWATCH_OIDC_NAME="Example ID",
            UPWATCH_OIDC_ADMIN_CLAIM="groups=upwatch-admins",
        ) as live,
        openid_provider(f"{live.url}/app/sso/callback", port=port) as provider,
    ):
        yield live, provider
        assert CLIENT_SECRET not in live.log.read_text()


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    driver = start_browser(javascript=True)
    try:
        yield driver
    finally:
        driver.quit()


def through_provider(browser: WebDriver, live: LiveServer, login: str) -> None:
    """From the console's sign-in page through the provider's login form."""
    browser.get(f"{live.url}/app/login")
    browser.find_element(By.LINK_TEXT, "Sign in with Example ID").click()
    wait_for(browser, lambda b: b.find_elements(By.NAME, "login"))
    fill(browser, login=login, password="anything")
    browser.find_element(By.CSS_SELECTOR, "button.login-submit").click()


def signed_in_as(browser: WebDriver, email: str) -> None:
    wait_for(
        browser,
        lambda b: (
            b.current_url.endswith("/app/dashboard")
            and b.find_element(By.CSS_SELECTOR, ".who").text == email
        ),
    )


def sign_out(browser: WebDriver) -> None:
    click(browser, "form.signout button[type=submit]")
    wait_for(browser, lambda b: b.current_url.endswith("/app/login"))


def test_a_person_signs_in_through_the_provider_and_again_into_the_same_account(
    servers: tuple[LiveServer, OpenIdServer], browser: WebDriver
) -> None:
    live, _ = servers
    browser.get(f"{live.url}/app/login")
    assert accessibility_violations(browser) == []
    shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
    if shots:
        browser.save_screenshot(str(Path(shots) / "console-sign-in-sso.png"))
    through_provider(browser, live, "alice")
    signed_in_as(browser, "alice@example.com")
    assert not browser.find_elements(By.LINK_TEXT, "Admin")

    # Signed out here, still signed in at the provider: the button goes straight through.
    sign_out(browser)
    browser.find_element(By.LINK_TEXT, "Sign in with Example ID").click()
    signed_in_as(browser, "alice@example.com")
    click(browser, 'a[href="/app/settings"]')
    wait_for(browser, lambda b: "alice@example.com" in b.find_element(By.TAG_NAME, "main").text)


def test_a_password_account_with_the_same_verified_e_mail_is_linked(
    servers: tuple[LiveServer, OpenIdServer], browser: WebDriver
) -> None:
    live, _ = servers
    browser.get(f"{live.url}/app/signup")
    fill(browser, email="carol@example.com", password=PASSWORD)
    submit(browser)
    signed_in_as(browser, "carol@example.com")
    sign_out(browser)

    through_provider(browser, live, "carol")
    signed_in_as(browser, "carol@example.com")
    # The password still opens the same account.
    sign_out(browser)
    fill(browser, email="carol@example.com", password=PASSWORD)
    submit(browser)
    signed_in_as(browser, "carol@example.com")


def test_an_unverified_e_mail_is_refused_with_the_sign_in_page(
    servers: tuple[LiveServer, OpenIdServer], browser: WebDriver
) -> None:
    live, _ = servers
    through_provider(browser, live, "unverified-erin")
    wait_for(
        browser,
        lambda b: (
            "not verified your e-mail address" in b.find_element(By.CSS_SELECTOR, "p.error").text
        ),
    )
    assert "/app/sso/callback" in browser.current_url
    assert not browser.find_elements(By.CSS_SELECTOR, ".who")
    assert CLIENT_SECRET not in browser.page_source


def test_the_providers_group_makes_an_administrator(
    servers: tuple[LiveServer, OpenIdServer], browser: WebDriver
) -> None:
    live, _ = servers
    through_provider(browser, live, "admin-dora")
    signed_in_as(browser, "admin-dora@example.com")
    click(browser, 'a[href="/app/admin"]')
    wait_for(browser, lambda b: b.current_url.endswith("/app/admin"))
