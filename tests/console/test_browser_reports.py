"""The dashboard, a monitor's report and a maintenance window's edit in headless Chromium
against a real `upwatch serve`, once with JavaScript and once without. With JavaScript,
axe-core checks each of these pages.

Set UPWATCH_SCREENSHOT_DIR to keep docs/console-dashboard.png and docs/console-report.png
there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import accessibility_violations, console_server, start_browser
from tests.conftest import PASSWORD
from tests.console.test_browser import click, fill, flash, submit, wait_for
from tests.live_server import LiveServer

pytestmark = pytest.mark.db_independent


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with console_server(Path(tmp_path_factory.mktemp("console-reports"))) as live:
        yield live


class Visit:
    """One browser on the console, and what axe-core found on the pages checked (with
    JavaScript only: the check is a script)."""

    def __init__(self, browser: WebDriver, server: LiveServer, javascript: bool) -> None:
        self.browser = browser
        self.server = server
        self.javascript = javascript
        self.found: dict[str, list[str]] = {}

    def check(self, page: str) -> None:
        if self.javascript:
            self.found[page] = accessibility_violations(self.browser)

    def shoot(self, name: str) -> None:
        shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
        if shots and self.javascript:
            self.browser.save_screenshot(str(Path(shots) / f"console-{name}.png"))

    def path(self) -> str:
        return str(self.browser.current_url).removeprefix(self.server.url).split("?")[0]


def sign_up_with_a_monitor(visit: Visit, email: str) -> None:
    browser = visit.browser
    browser.get(f"{visit.server.url}/app/signup")
    fill(browser, email=email, password=PASSWORD, firstName="Ines")
    submit(browser)
    wait_for(browser, lambda b: "Welcome to Upwatch." in flash(b))
    assert visit.path() == "/app/dashboard"
    browser.find_element(By.LINK_TEXT, "Projects").click()
    fill(browser, name="Shop")
    submit(browser)
    wait_for(browser, lambda b: "Project Shop created." in flash(b))
    fill(browser, name="Checkout", url=f"{visit.server.url}/app/login")
    submit(browser, "form.monitor-form")
    wait_for(browser, lambda b: "Monitor Checkout created." in flash(b))


def sign_in_to_the_dashboard(visit: Visit, email: str) -> None:
    browser = visit.browser
    browser.find_element(By.CSS_SELECTOR, ".signout button").click()
    wait_for(browser, lambda b: flash(b) == "Signed out.")
    browser.get(f"{visit.server.url}/app/login")
    fill(browser, email=email, password=PASSWORD)
    submit(browser)
    wait_for(browser, lambda b: visit.path() == "/app/dashboard")
    board = browser.find_element(By.CSS_SELECTOR, "main table").text
    assert "Checkout" in board
    assert "1 monitors" in browser.find_element(By.CSS_SELECTOR, ".tiles").text
    visit.check("dashboard")
    visit.shoot("dashboard")


def read_the_report_and_its_csv(visit: Visit) -> None:
    browser = visit.browser
    browser.find_element(By.LINK_TEXT, "Checkout").click()
    click(browser, "a[href$='/report']")
    wait_for(browser, lambda b: visit.path().endswith("/report"))
    fill(browser, period="7d", target="99.5")
    submit(browser, "form.report-query")
    wait_for(browser, lambda b: "period=7d" in b.current_url)
    assert "Statistics over 7d" in browser.find_element(By.TAG_NAME, "main").text
    visit.check("monitor report")
    visit.shoot("report")
    link = browser.find_element(By.CSS_SELECTOR, "a[href*='/report/sla.csv']")
    cookies = {c["name"]: c["value"] for c in browser.get_cookies()}
    sheet = httpx.get(str(link.get_attribute("href")), cookies=cookies)
    assert sheet.status_code == 200
    assert sheet.headers["content-type"].startswith("text/csv")
    assert "uptimePercentage" in sheet.text.splitlines()[0]


def edit_a_maintenance_window(visit: Visit) -> None:
    browser = visit.browser
    browser.find_element(By.LINK_TEXT, "Maintenance").click()
    fill(browser, title="Upgrade", timezone="UTC")
    # A datetime-local box takes keys as its parts (Chromium's en-US: month day year, time).
    for name, hour in (("startsAt", "1000AM"), ("endsAt", "1200PM")):
        browser.find_element(By.NAME, name).send_keys("01052030", Keys.TAB, hour)
    submit(browser, "main form.card")
    wait_for(browser, lambda b: "Maintenance window Upgrade planned." in flash(b))
    browser.find_element(By.PARTIAL_LINK_TEXT, "Edit").click()
    wait_for(browser, lambda b: visit.path().endswith("/edit"))
    visit.check("maintenance window edit")
    fill(browser, title="Bigger upgrade")
    submit(browser)
    wait_for(browser, lambda b: "Maintenance window Bigger upgrade saved." in flash(b))
    assert "Bigger upgrade" in browser.find_element(By.CSS_SELECTOR, "main table").text


@pytest.mark.parametrize("javascript", [True, False], ids=["with-javascript", "without"])
def test_a_person_lands_on_the_dashboard_reads_a_report_and_edits_a_maintenance_window(
    server: LiveServer, javascript: bool
) -> None:
    email = f"ines-{'js' if javascript else 'nojs'}@example.com"
    browser = start_browser(javascript=javascript)
    visit = Visit(browser, server, javascript)
    try:
        sign_up_with_a_monitor(visit, email)
        sign_in_to_the_dashboard(visit, email)
        read_the_report_and_its_csv(visit)
        edit_a_maintenance_window(visit)
    finally:
        browser.quit()
    assert len(visit.found) == (3 if javascript else 0)
    assert {page: found for page, found in visit.found.items() if found} == {}
