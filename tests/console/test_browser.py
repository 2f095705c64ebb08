"""The web console in headless Chromium against a real `upwatch serve` and a real target: a
team lead signs up, makes a project and an HTTP monitor, sees it up, sees it turn down and its
incident appear without reloading when the target fails, acknowledges it, sees it resolve
when the target is back, invites a member, and sees the same form refused without its CSRF
token. Then the same with JavaScript off (pages reloaded by hand). Then axe-core on every main
page.

Set UPWATCH_SCREENSHOT_DIR to keep the screenshots of docs/console.md there (docs/ is made so).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from selenium.common.exceptions import (
    NoSuchElementException,
    StaleElementReferenceException,
    TimeoutException,
    WebDriverException,
)
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.browser import (
    BROWSER_SECONDS,
    accessibility_violations,
    console_server,
    start_browser,
)
from tests.conftest import PASSWORD
from tests.live_server import LiveServer, ThreadedTarget

pytestmark = pytest.mark.db_independent

# A check every 10 s (the shortest interval): a status change shows within about that.
INTERVAL = "10"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with console_server(Path(tmp_path_factory.mktemp("console"))) as live:
        yield live


@pytest.fixture
def target() -> Iterator[ThreadedTarget]:
    with ThreadedTarget() as served:
        yield served


def wait_for(browser: WebDriver, condition: Callable[[WebDriver], object]) -> None:
    # A page may be replaced between finding an element and reading it (a navigation, a
    # refresh of its part): the condition is then asked again.
    def asked(b: WebDriver) -> object:
        try:
            return condition(b)
        except WebDriverException as exc:
            # Chromium's words for a stale element read while its document is replaced.
            if "does not belong to the document" in str(exc):
                return False
            raise

    try:
        WebDriverWait(
            browser,
            BROWSER_SECONDS,
            poll_frequency=0.2,
            ignored_exceptions=(NoSuchElementException, StaleElementReferenceException),
        ).until(asked)
    except TimeoutException as timed_out:
        # What the page showed when the wait ended: without it a failure in CI says nothing.
        shown = browser.find_element(By.TAG_NAME, "body").text[:2000]
        raise AssertionError(
            f"waited {BROWSER_SECONDS} s on {browser.current_url}:\n{shown}"
        ) from (timed_out)


def reload_until(browser: WebDriver, condition: Callable[[WebDriver], bool]) -> None:
    """Without JavaScript a page changes only when reloaded: reload until it shows."""

    def reloaded(b: WebDriver) -> bool:
        if condition(b):
            return True
        b.refresh()
        return False

    wait_for(browser, reloaded)


def fill(browser: WebDriver, **fields: str) -> None:
    for name, value in fields.items():
        element = browser.find_element(By.NAME, name)
        if element.tag_name == "select":
            Select(element).select_by_value(value)
        else:
            element.clear()
            element.send_keys(value)


def submit(browser: WebDriver, form: str = "main form") -> None:
    browser.find_element(By.CSS_SELECTOR, f"{form} button[type=submit]").click()


def click(browser: WebDriver, selector: str) -> None:
    """Click what ``selector`` finds once the page shows it (a navigation may be under way)."""
    wait_for(browser, lambda b: b.find_elements(By.CSS_SELECTOR, selector))
    browser.find_element(By.CSS_SELECTOR, selector).click()


def flash(browser: WebDriver) -> str:
    found = browser.find_elements(By.CSS_SELECTOR, ".flash")
    return found[0].text if found else ""


def row_status(browser: WebDriver, name: str) -> str:
    for row in browser.find_elements(By.CSS_SELECTOR, "#monitor-rows tr"):
        if row.find_elements(By.LINK_TEXT, name):
            return row.get_attribute("data-status") or ""
    return ""


def sign_up_and_make_a_monitor(
    browser: WebDriver, server: LiveServer, email: str, url: str, name: str
) -> None:
    browser.get(f"{server.url}/app")
    browser.find_element(By.LINK_TEXT, "Sign up").click()
    fill(browser, email=email, password=PASSWORD, firstName="Lea")
    submit(browser)
    wait_for(browser, lambda b: "Welcome to Upwatch." in flash(b))
    browser.find_element(By.LINK_TEXT, "Projects").click()
    fill(browser, name="Shop")
    submit(browser)
    wait_for(browser, lambda b: "Project Shop created." in flash(b))
    fill(browser, name=name, url=url, intervalSeconds=INTERVAL)
    submit(browser, "form.monitor-form")
    wait_for(browser, lambda b: f"Monitor {name} created." in flash(b))


def test_a_team_lead_sees_a_monitor_go_down_and_its_incident_live_and_handles_it(
    server: LiveServer, target: ThreadedTarget
) -> None:
    browser = start_browser(javascript=True)
    try:
        sign_up_and_make_a_monitor(
            browser, server, "lead@example.com", f"{target.base}/health", "Checkout"
        )
        browser.find_element(By.LINK_TEXT, "Monitors").click()
        wait_for(browser, lambda b: b.find_element(By.TAG_NAME, "html").get_attribute("data-live"))
        wait_for(browser, lambda b: row_status(b, "Checkout") == "up")
        # A mark on the page survives only while it is not reloaded.
        browser.execute_script("window.notReloaded = true;")
        shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
        if shots:
            browser.save_screenshot(str(Path(shots) / "console-monitors.png"))

        target.status = 500
        wait_for(browser, lambda b: row_status(b, "Checkout") == "down")
        assert browser.execute_script("return window.notReloaded === true;")

        browser.find_element(By.LINK_TEXT, "Incidents").click()
        browser.execute_script("window.notReloaded = true;")
        click(browser, "#incident-rows a")
        click(browser, "form[action$='/acknowledge'] button")
        wait_for(browser, lambda b: flash(b) == "Acknowledged.")

        target.status = 200
        browser.find_element(By.LINK_TEXT, "Incidents").click()
        browser.execute_script("window.notReloaded = true;")
        wait_for(
            browser,
            lambda b: "resolved" in b.find_element(By.ID, "incident-rows").text,
        )
        assert browser.execute_script("return window.notReloaded === true;")

        browser.find_element(By.LINK_TEXT, "Monitors").click()
        browser.find_element(By.LINK_TEXT, "Checkout").click()
        wait_for(
            browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "#monitor-state tbody tr")) >= 2
        )
        if shots:
            browser.save_screenshot(str(Path(shots) / "console-monitor.png"))

        browser.find_element(By.LINK_TEXT, "Projects").click()
        click(browser, "main table a[href^='/app/projects/']")
        fill(browser, email="teammate@example.com")
        submit(browser, "form[action$='/invite']")
        wait_for(browser, lambda b: flash(b) == "Invitation sent to teammate@example.com.")
        assert "teammate@example.com" in browser.find_element(By.TAG_NAME, "table").text

        # The same form without its CSRF token (as another site's page would post it).
        browser.execute_script(
            "document.querySelector(\"form[action$='/invite'] input[name=csrf]\").remove();"
        )
        fill(browser, email="intruder@example.com")
        submit(browser, "form[action$='/invite']")
        wait_for(
            browser, lambda b: "The form has expired" in b.find_element(By.TAG_NAME, "h1").text
        )
        browser.back()
        browser.refresh()
        assert "intruder@example.com" not in browser.find_element(By.TAG_NAME, "table").text
    finally:
        browser.quit()


def test_every_step_works_with_javascript_off(server: LiveServer, target: ThreadedTarget) -> None:
    browser = start_browser(javascript=False)
    try:
        sign_up_and_make_a_monitor(
            browser, server, "nojs@example.com", f"{target.base}/health", "Catalogue"
        )
        assert browser.find_element(By.TAG_NAME, "html").get_attribute("data-live") is None
        click(browser, "form[action$='/check'] button")
        wait_for(browser, lambda b: flash(b).startswith("Checked now: up, HTTP 200"))
        target.status = 500
        click(browser, "form[action$='/check'] button")
        wait_for(browser, lambda b: flash(b).startswith("Checked now: down, HTTP 500"))

        browser.find_element(By.LINK_TEXT, "Monitors").click()
        fill(browser, status="down", sort="status")
        submit(browser, "form.filters")
        # The monitor turns down once the failure is confirmed (its next scheduled check).
        reload_until(browser, lambda b: row_status(b, "Catalogue") == "down")

        browser.find_element(By.LINK_TEXT, "Incidents").click()
        click(browser, "#incident-rows a")
        click(browser, "form[action$='/acknowledge'] button")
        wait_for(browser, lambda b: flash(b) == "Acknowledged.")
        fill(browser, message="We are on it")
        submit(browser, "form[action$='/updates']")
        wait_for(browser, lambda b: flash(b) == "Update posted.")
        assert "We are on it" in browser.find_element(By.CSS_SELECTOR, ".timeline").text
        click(browser, "form[action$='/resolve'] button")
        wait_for(browser, lambda b: flash(b) == "Resolved.")

        browser.find_element(By.CSS_SELECTOR, ".signout button").click()
        wait_for(browser, lambda b: flash(b) == "Signed out.")
        browser.get(f"{server.url}/app/monitors")
        assert "Sign in" in browser.find_element(By.TAG_NAME, "h1").text
    finally:
        browser.quit()


def test_the_main_pages_have_no_serious_accessibility_violations(
    server: LiveServer, target: ThreadedTarget
) -> None:
    browser = start_browser(javascript=True)
    shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
    try:
        for page in ("login", "signup", "forgot-password"):
            browser.get(f"{server.url}/app/{page}")
            assert accessibility_violations(browser) == [], page
        sign_up_and_make_a_monitor(
            browser, server, "a11y@example.com", f"{target.base}/health", "Search"
        )
        wait_for(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, ".chart, .chart-empty")))
        checked = {"monitor page": accessibility_violations(browser)}

        browser.find_element(By.LINK_TEXT, "Status pages").click()
        fill(browser, name="Search status", slug="search-a11y")
        submit(browser)
        wait_for(browser, lambda b: "Status page Search status created." in flash(b))
        submit(browser, "form[action$='/components']")
        wait_for(browser, lambda b: flash(b) == "Component added.")
        checked["status page editor"] = accessibility_violations(browser)
        if shots:
            browser.save_screenshot(str(Path(shots) / "console-status-page.png"))
        browser.find_element(By.LINK_TEXT, "Preview").click()
        checked["status page preview"] = accessibility_violations(browser)

        for link in ("Monitors", "Incidents", "Notifications", "Maintenance", "Projects", "Plan"):
            browser.get(f"{server.url}/app/monitors")
            browser.find_element(By.LINK_TEXT, link).click()
            checked[link] = accessibility_violations(browser)
        browser.find_element(By.LINK_TEXT, "Settings").click()
        checked["settings"] = accessibility_violations(browser)
        browser.get(f"{server.url}/app/notifications/new?type=webhook")
        checked["new provider"] = accessibility_violations(browser)
        if shots:
            browser.save_screenshot(str(Path(shots) / "console-notifications.png"))
        assert {page: found for page, found in checked.items() if found} == {}
    finally:
        browser.quit()


def speaking(language: str) -> Callable[[WebDriver], bool]:
    return lambda b: b.find_element(By.TAG_NAME, "html").get_attribute("lang") == language


def test_the_console_in_japanese_and_german_fits_the_window_and_stays_accessible(
    server: LiveServer, target: ThreadedTarget
) -> None:
    """A person who reads Japanese (then German) sets their language and gets every main page
    in it: nothing wider than the window, nothing serious for axe-core (docs/languages.md)."""
    browser = start_browser(javascript=True)
    shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
    try:
        sign_up_and_make_a_monitor(
            browser, server, "yuki@example.com", f"{target.base}/health", "Search"
        )
        monitor_page = browser.current_url
        for language in ("ja", "de"):
            browser.get(f"{server.url}/app/settings")
            fill(browser, language=language)
            submit(browser, "form[action='/app/settings']")
            wait_for(browser, speaking(language))
            checked: dict[str, list[str]] = {}
            for name, address in (
                ("dashboard", f"{server.url}/app/dashboard"),
                ("monitor", monitor_page),
                ("new-monitor", f"{server.url}/app/monitors/new"),
                ("monitors", f"{server.url}/app/monitors"),
                ("settings", f"{server.url}/app/settings"),
            ):
                browser.get(address)
                wait_for(browser, lambda b: b.find_element(By.TAG_NAME, "h1").text)
                assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == language
                overflow = browser.execute_script(
                    "return document.documentElement.scrollWidth - window.innerWidth"
                )
                assert overflow <= 0, (language, name, overflow)
                checked[name] = accessibility_violations(browser)
                if shots and name in ("dashboard", "monitor", "new-monitor"):
                    browser.save_screenshot(str(Path(shots) / f"console-{name}-{language}.png"))
            assert {page: found for page, found in checked.items() if found} == {}, language
    finally:
        browser.quit()
