"""An incident's whole life in headless Chromium against a real `upwatch serve`, once with
JavaScript and once without: a member opens it from the list, acknowledges it, posts an
update, moves it through the seed's four states, reads its alerts, finds it with the list's
filter and deletes it after a confirmation. With JavaScript, axe-core checks every page.

Set UPWATCH_SCREENSHOT_DIR to keep docs/console-incident.png and docs/console-incidents.png.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.expected_conditions import staleness_of
from selenium.webdriver.support.ui import Select

from tests.browser import accessibility_violations, console_server, start_browser
from tests.conftest import PASSWORD
from tests.console.test_browser import flash, wait_for
from tests.live_server import LiveServer

pytestmark = pytest.mark.db_independent


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with console_server(
        Path(tmp_path_factory.mktemp("console-incidents")), private_targets=False
    ) as live:
        yield live


class Visit:
    """One person's browser on the console: filling forms, and what axe-core found on the
    pages checked (with JavaScript only: the check is a script)."""

    def __init__(self, browser: WebDriver, server: LiveServer, javascript: bool) -> None:
        self.browser = browser
        self.server = server
        self.javascript = javascript
        self.found: dict[str, list[str]] = {}

    def check(self, page: str) -> None:
        if self.javascript:
            self.found[page] = accessibility_violations(self.browser)

    def shoot(self, name: str) -> None:
        """Save the whole page, however long, as docs' screenshot."""
        shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
        if not (shots and self.javascript):
            return
        size = self.browser.get_window_size()
        height = self.browser.execute_script("return document.body.scrollHeight;")
        self.browser.set_window_size(size["width"], height + 160)  # and the window's frame
        self.browser.save_screenshot(str(Path(shots) / f"console-{name}.png"))
        self.browser.set_window_size(size["width"], size["height"])

    def fill(self, form: str, **fields: str) -> None:
        for name, value in fields.items():
            selector = f"{form} [name={name}]:not([type=hidden])"
            element = self.browser.find_element(By.CSS_SELECTOR, selector)
            if element.tag_name == "select":
                Select(element).select_by_value(value)
            else:
                element.clear()
                element.send_keys(value)

    def send(self, form: str, done: str) -> None:
        """Submit the form and wait for the next page's flash message saying ``done`` (the
        page before may say the same)."""
        before = self.browser.find_element(By.TAG_NAME, "html")
        self.browser.find_element(By.CSS_SELECTOR, f"{form} button[type=submit]").click()
        wait_for(self.browser, lambda b: staleness_of(before)(b) and done in flash(b))

    def heading(self) -> str:
        return self.browser.find_element(By.TAG_NAME, "h1").text

    def fact(self, name: str) -> str:
        """What the incident page's facts say of ``name`` (Status, Severity...)."""
        for term in self.browser.find_elements(By.CSS_SELECTOR, ".facts dt"):
            if term.text == name:
                found: str = term.find_element(By.XPATH, "following-sibling::dd").text
                return found
        return ""


def sign_up_with_a_project(visit: Visit, email: str) -> None:
    visit.browser.get(f"{visit.server.url}/app/signup")
    visit.fill("main form", email=email, password=PASSWORD, firstName="Ines")
    visit.send("main form", "Welcome to Upwatch.")
    visit.browser.find_element(By.LINK_TEXT, "Projects").click()
    visit.fill("main form", name="Shop")
    visit.send("main form", "Project Shop created.")


def open_incident(visit: Visit, title: str, severity: str) -> str:
    """Open an incident from the list's New incident form; its page's address."""
    browser = visit.browser
    browser.find_element(By.LINK_TEXT, "Incidents").click()
    browser.find_element(By.LINK_TEXT, "New incident").click()
    wait_for(browser, lambda b: visit.heading() == "New incident")
    visit.check("new incident form")
    visit.fill(
        "main form",
        title=title,
        description="Card payments time out for some customers.",
        severity=severity,
    )
    visit.send("main form", f"Incident {title} opened.")
    assert visit.heading() == title
    assert visit.fact("Status") == "investigating"
    return str(browser.current_url)


def live_through_the_seed_states(visit: Visit) -> None:
    """Acknowledge, post an update, and move investigating > identified > monitoring >
    resolved with the change form."""
    visit.send("form[action$='/acknowledge']", "Acknowledged.")
    visit.fill("form[action$='/updates']", message="The card processor answers slowly.")
    visit.send("form[action$='/updates']", "Update posted.")
    for status in ("identified", "monitoring"):
        visit.fill("form[action$='/edit']", status=status, severity="critical")
        visit.send("form[action$='/edit']", "Incident saved.")
        assert visit.fact("Status") == status
    assert visit.fact("Severity") == "critical"
    visit.fill("form[action$='/edit']", status="resolved")
    visit.send("form[action$='/edit']", "Incident saved.")
    assert visit.fact("Status") == "resolved"
    assert visit.fact("Resolved") != "no"
    timeline = visit.browser.find_element(By.CSS_SELECTOR, ".timeline").text
    for said in ("Acknowledged by", "answers slowly", "Status changed to monitoring."):
        assert said in timeline


def deliveries_were_made(server: LiveServer, incident_id: str) -> None:
    """Alerts as the sender leaves them (the test has no channel to send to): a webhook
    delivered at its second attempt, and an e-mail suppressed in quiet hours."""
    now = datetime.now(UTC).replace(tzinfo=None).isoformat(sep=" ")
    with sqlite3.connect(server.cwd / "upwatch.db") as db:
        (project_id,) = db.execute(
            "SELECT project_id FROM incidents WHERE id = ?", (incident_id,)
        ).fetchone()
        for kind, name, status, reason, attempts in (
            ("webhook", "Ops hook", "sent", None, 2),
            ("email", "On-call mail", "suppressed", "quiet hours", 0),
        ):
            added = db.execute(
                "INSERT INTO alerts (provider_type, provider_name, project_id, incident_id, "
                "event, facts, status, reason, attempts, next_attempt_at, sent_at, created_at) "
                "VALUES (?, ?, ?, ?, 'incident.opened', '{}', ?, ?, ?, ?, ?, ?)",
                (kind, name, project_id, incident_id, status, reason, attempts, now, now, now),
            )
            for attempt in range(1, attempts + 1):
                db.execute(
                    "INSERT INTO alert_attempts (alert_id, attempt, outcome, error, "
                    "duration_ms, attempted_at) VALUES (?, ?, ?, ?, 40.0, ?)",
                    (
                        added.lastrowid,
                        attempt,
                        "sent" if attempt == attempts else "retry",
                        None if attempt == attempts else "HTTP 503",
                        now,
                    ),
                )


def read_the_alerts(visit: Visit) -> None:
    visit.browser.refresh()
    wait_for(
        visit.browser,
        lambda b: "Ops hook" in b.find_element(By.CSS_SELECTOR, ".incident-alerts").text,
    )
    alerts = visit.browser.find_element(By.CSS_SELECTOR, ".incident-alerts").text
    assert "HTTP 503" in alerts
    assert "quiet hours" in alerts
    visit.check("incident")
    visit.shoot("incident")


def filter_the_list(visit: Visit, title: str, other: str) -> None:
    browser = visit.browser
    browser.find_element(By.LINK_TEXT, "Incidents").click()
    visit.fill("form.filters", status="resolved", severity="critical")
    browser.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]").click()
    wait_for(browser, lambda b: "severity=critical" in b.current_url)
    rows = browser.find_element(By.ID, "incident-rows").text
    assert title in rows
    assert other not in rows
    assert "Shop" in rows
    refreshed = browser.find_element(By.ID, "incident-rows").get_attribute("data-refresh")
    assert refreshed == "/app/incidents/rows?status=resolved&severity=critical"
    visit.check("incidents")
    browser.find_element(By.LINK_TEXT, "Clear").click()
    wait_for(browser, lambda b: other in b.find_element(By.ID, "incident-rows").text)
    visit.shoot("incidents")


def delete_after_cancelling_once(visit: Visit, page: str, title: str) -> None:
    browser = visit.browser
    browser.get(page)
    browser.find_element(By.PARTIAL_LINK_TEXT, "Delete").click()
    wait_for(browser, lambda b: visit.heading() == f"Delete {title}?")
    visit.check("deleting an incident")
    browser.find_element(By.LINK_TEXT, "Cancel").click()
    wait_for(browser, lambda b: visit.heading() == title)
    browser.find_element(By.PARTIAL_LINK_TEXT, "Delete").click()
    wait_for(browser, lambda b: visit.heading() == f"Delete {title}?")
    visit.send("main form", "Incident deleted.")
    assert title not in browser.find_element(By.ID, "incident-rows").text


@pytest.mark.parametrize("javascript", [True, False], ids=["with-javascript", "without"])
def test_a_member_opens_an_incident_sees_it_through_to_resolved_and_deletes_it(
    server: LiveServer, javascript: bool
) -> None:
    run = "js" if javascript else "nojs"
    title, other = "Payments fail", "Search is slow"
    browser = start_browser(javascript=javascript)
    visit = Visit(browser, server, javascript)
    try:
        sign_up_with_a_project(visit, f"oncall-{run}@example.com")
        open_incident(visit, other, "low")
        page = open_incident(visit, title, "high")
        live_through_the_seed_states(visit)
        deliveries_were_made(server, page.rsplit("/", 1)[1])
        read_the_alerts(visit)
        filter_the_list(visit, title, other)
        delete_after_cancelling_once(visit, page, title)
    finally:
        browser.quit()
    assert len(visit.found) == (4 if javascript else 0)
    assert {page: found for page, found in visit.found.items() if found} == {}
