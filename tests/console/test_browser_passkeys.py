"""Passkeys in headless Chromium with its virtual authenticator (WebDriver's WebAuthn
extension), against a real `upwatch serve` whose public address is http://localhost:<port>
(a relying party id must be a domain name, never 127.0.0.1): a person signs up, adds a
passkey, signs out, signs in with it and no password, then with the password and the passkey
as the second step; a removed passkey no longer signs in. Without JavaScript the sign-in page
says that passkeys need it, and the password form still works."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.virtual_authenticator import VirtualAuthenticatorOptions
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import require_browser, start_browser
from tests.conftest import PASSWORD
from tests.console.test_browser import click, fill, flash, submit, wait_for
from tests.factories import FAST_PLANS
from tests.live_server import LiveServer, clean_env

pytestmark = pytest.mark.db_independent

EMAIL = "lea@example.com"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    require_browser()
    tmp = Path(tmp_path_factory.mktemp("console-passkeys"))
    plans = tmp / "plans.toml"
    plans.write_text(FAST_PLANS)
    env = clean_env(
        UPWATCH_DATABASE_URL=f"sqlite+aiosqlite:///{tmp / 'upwatch.db'}",
        UPWATCH_PLANS_FILE=str(plans),
    )
    live = LiveServer(tmp, env)
    # The browser opens the console at localhost, the relying party its passkeys are for.
    live.url = f"http://localhost:{live.port}"
    live.env["UPWATCH_PUBLIC_URL"] = live.url
    live.start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    driver = start_browser(javascript=True)
    try:
        driver.add_virtual_authenticator(
            VirtualAuthenticatorOptions(
                protocol="ctap2",
                transport="internal",
                has_resident_key=True,
                has_user_verification=True,
                is_user_verified=True,
            )
        )
        yield driver
    finally:
        driver.quit()


def sign_out(browser: WebDriver) -> None:
    click(browser, "form.signout button[type=submit]")
    wait_for(browser, lambda b: "Signed out." in flash(b))


def use_passkey(browser: WebDriver) -> None:
    click(browser, "form[data-passkey] button[type=submit]")


def test_a_person_signs_in_with_a_passkey_instead_of_and_after_the_password(
    server: LiveServer, browser: WebDriver
) -> None:
    browser.get(f"{server.url}/app/signup")
    fill(browser, email=EMAIL, password=PASSWORD)
    submit(browser)
    wait_for(browser, lambda b: "Welcome to Upwatch." in flash(b))

    browser.get(f"{server.url}/app/settings/passkeys")
    wait_for(
        browser, lambda b: b.find_element(By.CSS_SELECTOR, "form[data-passkey]").is_displayed()
    )
    assert not browser.find_element(By.CSS_SELECTOR, "[data-passkey-note]").is_displayed()
    fill(browser, name="Test laptop")
    use_passkey(browser)
    wait_for(browser, lambda b: "Passkey added." in flash(b))
    assert "Test laptop" in browser.find_element(By.CSS_SELECTOR, "table").text
    [credential] = browser.get_credentials()
    assert credential.is_resident_credential
    shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
    if shots:
        browser.save_screenshot(str(Path(shots) / "console-passkeys.png"))

    # Instead of the password: no e-mail typed, the passkey names the account.
    sign_out(browser)
    use_passkey(browser)
    wait_for(browser, lambda b: b.current_url == f"{server.url}/app/dashboard")
    assert EMAIL in browser.find_element(By.CSS_SELECTOR, ".who").text

    # As the second step after the right password.
    sign_out(browser)
    fill(browser, email=EMAIL, password=PASSWORD)
    submit(browser)
    wait_for(browser, lambda b: b.current_url == f"{server.url}/app/login/second-factor")
    assert not browser.find_elements(By.CSS_SELECTOR, ".who")
    use_passkey(browser)
    wait_for(browser, lambda b: b.current_url == f"{server.url}/app/dashboard")

    # Removed, it signs in no more, though the authenticator still holds it.
    browser.get(f"{server.url}/app/settings/passkeys")
    click(browser, "form.inline button[type=submit]")
    wait_for(browser, lambda b: "Passkey removed" in flash(b))
    sign_out(browser)
    use_passkey(browser)
    wait_for(
        browser,
        lambda b: (
            "not registered to an account here" in b.find_element(By.CSS_SELECTOR, ".error").text
        ),
    )
    assert browser.current_url.endswith("/app/login/passkey")
    assert not browser.find_elements(By.CSS_SELECTOR, ".who")
    # The password alone signs in again: the account has no second factor left.
    fill(browser, email=EMAIL, password=PASSWORD)
    submit(browser)
    wait_for(browser, lambda b: b.current_url == f"{server.url}/app/dashboard")


def test_without_javascript_the_sign_in_page_says_passkeys_need_it(server: LiveServer) -> None:
    driver = start_browser(javascript=False)
    try:
        driver.get(f"{server.url}/app/login")
        note = driver.find_element(By.CSS_SELECTOR, "[data-passkey-note]")
        assert note.is_displayed()
        assert "needs JavaScript" in note.text
        assert not driver.find_element(By.CSS_SELECTOR, "form[data-passkey]").is_displayed()
    finally:
        driver.quit()
