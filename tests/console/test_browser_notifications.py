"""Notifications, escalation and API keys in headless Chromium against a real `upwatch serve`:
a team lead edits a provider (its name, an address, off and on again, quiet hours), makes an
escalation policy, and makes an API key that the real CLI (`upwatch status`) then uses against
the server, until the key is revoked in the console. Once with JavaScript, once without; axe-core
on each of these pages.

Set UPWATCH_SCREENSHOT_DIR to keep the screenshots of docs/console.md there.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.expected_conditions import staleness_of

from tests.browser import accessibility_violations, console_server, start_browser
from tests.console.test_browser import (
    click,
    fill,
    flash,
    sign_up_and_make_a_monitor,
    submit,
    wait_for,
)
from tests.live_server import COMMAND_SECONDS, UPWATCH, LiveServer, ThreadedTarget, clean_env

pytestmark = pytest.mark.db_independent


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with console_server(Path(tmp_path_factory.mktemp("console-notifications"))) as live:
        yield live


@pytest.fixture
def target() -> Iterator[ThreadedTarget]:
    with ThreadedTarget() as served:
        yield served


class Checked:
    """axe-core's findings per page, where the browser runs scripts (axe is one); the
    screenshots are taken in that run too."""

    def __init__(self, browser: WebDriver, javascript: bool) -> None:
        self.browser, self.javascript = browser, javascript
        self.found: dict[str, list[str]] = {}

    def __call__(self, page: str) -> None:
        if self.javascript:
            self.found[page] = accessibility_violations(self.browser)

    def screenshot(self, name: str) -> None:
        shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
        if shots and self.javascript:
            self.browser.save_screenshot(str(Path(shots) / f"console-{name}.png"))

    def violations(self) -> dict[str, list[str]]:
        return {page: found for page, found in self.found.items() if found}


def box(browser: WebDriver, name: str) -> bool:
    return browser.find_element(
        By.CSS_SELECTOR, f"input[type=checkbox][name='{name}']"
    ).is_selected()


def edit_a_provider(browser: WebDriver, server: LiveServer, check: Checked) -> None:
    browser.get(f"{server.url}/app/notifications/new?type=email")
    fill(browser, name="Pager", **{"config.to": "ops@example.com"})
    submit(browser)
    wait_for(browser, lambda b: "Pager added" in flash(b))
    browser.find_element(By.LINK_TEXT, "Pager").click()
    wait_for(browser, lambda b: b.find_elements(By.NAME, "quietHoursStart"))
    check("provider edit")
    fill(
        browser,
        name="Pager night",
        quietHoursStart="22:00",
        quietHoursEnd="07:00",
        **{"config.to": "oncall@example.com"},
    )
    browser.find_element(By.CSS_SELECTOR, "input[type=checkbox][name=isEnabled]").click()
    submit(browser)
    wait_for(browser, lambda b: flash(b) == "Provider saved.")
    assert browser.find_element(By.NAME, "name").get_attribute("value") == "Pager night"
    assert browser.find_element(By.NAME, "config.to").get_attribute("value") == (
        "oncall@example.com"
    )
    assert browser.find_element(By.NAME, "quietHoursStart").get_attribute("value") == "22:00"
    assert browser.find_element(By.NAME, "quietHoursEnd").get_attribute("value") == "07:00"
    assert not box(browser, "isEnabled")
    check.screenshot("provider-edit")
    browser.find_element(By.CSS_SELECTOR, "input[type=checkbox][name=isEnabled]").click()
    # The page before showed the same message and box: wait for it to be replaced.
    before = browser.find_element(By.TAG_NAME, "html")
    submit(browser)
    wait_for(browser, staleness_of(before))
    wait_for(browser, lambda b: flash(b) == "Provider saved.")
    assert box(browser, "isEnabled")
    browser.find_element(By.LINK_TEXT, "Delete this provider").click()
    wait_for(browser, lambda b: "Delete Pager night?" in b.find_element(By.TAG_NAME, "h1").text)
    check("provider delete confirmation")
    browser.find_element(By.LINK_TEXT, "Cancel").click()
    browser.find_element(By.LINK_TEXT, "All providers").click()
    row = browser.find_element(By.XPATH, "//tr[td/a[text()='Pager night']]")
    assert "oncall@example.com" in row.text
    assert "yes" in row.text


def make_an_escalation_policy(browser: WebDriver, check: Checked) -> None:
    browser.find_element(By.LINK_TEXT, "Notifications").click()
    browser.find_element(By.LINK_TEXT, "Escalation policies").click()
    browser.find_element(By.LINK_TEXT, "New policy").click()
    wait_for(browser, lambda b: b.find_elements(By.NAME, "steps.0.providerIds"))
    check("new escalation policy")
    fill(browser, name="Nights")
    browser.find_element(By.CSS_SELECTOR, "input[name='steps.0.providerIds']").click()
    fill(browser, **{"steps.0.delayMinutes": "5"})
    submit(browser)
    wait_for(browser, lambda b: flash(b) == "Escalation policy Nights created.")
    assert "after 5 min: Pager night" in browser.find_element(By.TAG_NAME, "table").text
    check("escalation policies")
    check.screenshot("escalation")
    browser.find_element(By.LINK_TEXT, "Nights").click()
    wait_for(browser, lambda b: b.find_elements(By.NAME, "steps.0.providerIds"))
    check("escalation policy")


def upwatch_status(server: LiveServer, key: str) -> subprocess.CompletedProcess[str]:
    """The real CLI, configured as its documentation says: by environment."""
    env = clean_env(UPWATCH_API_URL=server.url, UPWATCH_API_KEY=key, COLUMNS="160")
    return subprocess.run(  # noqa: S603 (our own command)
        [UPWATCH, "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
        check=False,
    )


def use_and_revoke_an_api_key(
    browser: WebDriver, server: LiveServer, check: Checked, monitor: str
) -> None:
    browser.find_element(By.LINK_TEXT, "Projects").click()
    click(browser, "main table a[href^='/app/projects/']")
    browser.find_element(By.LINK_TEXT, "API keys").click()
    wait_for(browser, lambda b: b.find_elements(By.NAME, "scope"))
    check("API keys")
    fill(browser, name="CLI", scope="read")
    submit(browser)
    wait_for(
        browser, lambda b: "shown on this page only" in b.find_element(By.TAG_NAME, "main").text
    )
    check("new API key")
    check.screenshot("api-keys")
    key = browser.find_element(By.ID, "f-key").get_attribute("value") or ""
    assert key
    listed = upwatch_status(server, key)
    assert listed.returncode == 0, listed.stderr
    assert monitor in listed.stdout

    browser.find_element(By.LINK_TEXT, "Done: back to the keys").click()
    assert key not in browser.find_element(By.TAG_NAME, "body").text
    browser.find_element(By.CSS_SELECTOR, "a[href$='/revoke']").click()
    wait_for(browser, lambda b: "Revoke the API key CLI?" in b.find_element(By.TAG_NAME, "h1").text)
    check("API key revoke confirmation")
    submit(browser)
    wait_for(browser, lambda b: flash(b) == "API key revoked.")
    refused = upwatch_status(server, key)
    assert refused.returncode != 0
    assert "401" in refused.stderr


def look_at_the_settings(browser: WebDriver, check: Checked) -> None:
    browser.find_element(By.LINK_TEXT, "Settings").click()
    fill(browser, theme="dark")
    submit(browser)
    wait_for(browser, lambda b: flash(b) == "Settings saved.")
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("data-theme") == "dark"
    check("settings, dark")
    browser.find_element(By.LINK_TEXT, "Delete my account").click()
    wait_for(browser, lambda b: "Delete your account?" in b.find_element(By.TAG_NAME, "h1").text)
    check("account delete confirmation")
    browser.find_element(By.LINK_TEXT, "Cancel").click()


@pytest.mark.parametrize("javascript", [True, False], ids=["javascript", "no-javascript"])
def test_a_team_lead_edits_a_provider_makes_a_policy_and_a_key_the_cli_uses_until_revoked(
    server: LiveServer, target: ThreadedTarget, javascript: bool
) -> None:
    browser = start_browser(javascript=javascript)
    check = Checked(browser, javascript)
    mode = "js" if javascript else "nojs"
    try:
        sign_up_and_make_a_monitor(
            browser, server, f"lead-{mode}@example.com", f"{target.base}/health", "Checkout"
        )
        edit_a_provider(browser, server, check)
        make_an_escalation_policy(browser, check)
        use_and_revoke_an_api_key(browser, server, check, "Checkout")
        look_at_the_settings(browser, check)
        assert check.violations() == {}
    finally:
        browser.quit()
