"""Two-factor sign-in in headless Chromium against a real `upwatch serve`, with JavaScript on
and off: a person sets up an authenticator app from the security page (reading the key the
page shows), turns it on, saves the recovery codes, signs out, signs in with the password,
is asked for the code on a second step, and reaches the dashboard; axe-core reads the pages
the crawl of test_browser_themes.py cannot reach (they answer forms).

The server runs on the real clock, so the codes are pyotp's at the real time. The code that
signs in is that of the step after the one that confirmed (within the ±1 step window), so the
replay guard never refuses it, whenever in its 30 seconds the test runs. axe-core is a script:
it reads the pages in the run with JavaScript on."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pyotp
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import accessibility_violations, console_server, start_browser
from tests.conftest import PASSWORD
from tests.console.test_browser import flash, wait_for
from tests.live_server import LiveServer

pytestmark = pytest.mark.db_independent


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with console_server(Path(tmp_path_factory.mktemp("console-totp"))) as live:
        yield live


def _path(browser: WebDriver) -> str:
    return urlsplit(browser.current_url).path


def _submit(browser: WebDriver, form: str) -> None:
    browser.find_element(By.CSS_SELECTOR, f"{form} button[type=submit]").click()


def _sign_up(browser: WebDriver, origin: str, email: str) -> None:
    browser.get(f"{origin}/app/signup")
    browser.find_element(By.NAME, "email").send_keys(email)
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    _submit(browser, "main form")
    wait_for(browser, lambda b: _path(b) == "/app/dashboard")


def _code(secret: str, steps_ahead: int = 0) -> str:
    return pyotp.TOTP(secret).at(time.time() + 30 * steps_ahead)


@pytest.mark.parametrize("javascript", [True, False], ids=["javascript", "no-javascript"])
def test_a_person_turns_on_an_authenticator_app_and_signs_in_with_its_code(
    server: LiveServer, javascript: bool
) -> None:
    email = f"totp-{'js' if javascript else 'nojs'}@example.com"
    browser = start_browser(javascript=javascript)
    try:
        _sign_up(browser, server.url, email)
        browser.get(f"{server.url}/app/settings")
        browser.find_element(By.LINK_TEXT, "Sign-in security").click()
        wait_for(browser, lambda b: _path(b) == "/app/settings/security")
        _submit(browser, "form[action='/app/settings/security/totp']")
        wait_for(browser, lambda b: b.find_elements(By.ID, "f-secret"))
        assert browser.find_elements(By.CSS_SELECTOR, "figure.qr svg[role=img]")
        assert not javascript or accessibility_violations(browser) == []
        shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
        if shots and javascript:
            browser.save_screenshot(str(Path(shots) / "console-two-factor.png"))
        shown = browser.find_element(By.ID, "f-secret").get_attribute("value") or ""
        secret = shown.replace(" ", "")
        browser.find_element(By.ID, "f-confirm-code").send_keys(_code(secret))
        _submit(browser, "form[action='/app/settings/security/totp/confirm']")
        wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, ".recovery-codes li"))
        codes = [li.text for li in browser.find_elements(By.CSS_SELECTOR, ".recovery-codes li")]
        assert len(codes) == 10
        assert not javascript or accessibility_violations(browser) == []

        browser.find_element(By.LINK_TEXT, "Done: I saved them").click()
        wait_for(
            browser, lambda b: "Recovery codes left: 10" in b.find_element(By.TAG_NAME, "main").text
        )
        _submit(browser, "form[action='/app/logout']")
        wait_for(browser, lambda b: _path(b) == "/app/login")

        browser.find_element(By.NAME, "email").send_keys(email)
        browser.find_element(By.NAME, "password").send_keys(PASSWORD)
        _submit(browser, "main form")
        wait_for(browser, lambda b: _path(b) == "/app/login/second-factor")
        assert not javascript or accessibility_violations(browser) == []
        if shots and javascript:
            browser.save_screenshot(str(Path(shots) / "console-second-step.png"))
        browser.find_element(By.NAME, "code").send_keys(
            "000000" if _code(secret, 1) != "000000" else "111111"
        )
        _submit(browser, "main form")
        wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, ".field-error"))
        assert _path(browser) == "/app/login/second-factor"
        browser.find_element(By.NAME, "code").send_keys(_code(secret, 1))
        _submit(browser, "main form")
        wait_for(browser, lambda b: _path(b) == "/app/dashboard")
        assert flash(browser) == "Signed in."

        # A recovery code, through the link to switch, works the next time.
        _submit(browser, "form[action='/app/logout']")
        wait_for(browser, lambda b: _path(b) == "/app/login")
        browser.find_element(By.NAME, "email").send_keys(email)
        browser.find_element(By.NAME, "password").send_keys(PASSWORD)
        _submit(browser, "main form")
        wait_for(browser, lambda b: _path(b) == "/app/login/second-factor")
        browser.find_element(By.LINK_TEXT, "Use a recovery code instead").click()
        wait_for(browser, lambda b: "Recovery code" in b.find_element(By.TAG_NAME, "main").text)
        browser.find_element(By.NAME, "code").send_keys(codes[0])
        _submit(browser, "main form")
        wait_for(browser, lambda b: _path(b) == "/app/dashboard")
    finally:
        browser.quit()
