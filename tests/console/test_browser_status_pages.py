"""Status pages and projects in headless Chromium against a real `upwatch serve`, once with
JavaScript and once without: an owner changes every setting of a status page and sees them on
its preview and its public page, a visitor subscribes there and the owner removes the
subscriber after a confirmation, a project is renamed and another deleted after a
confirmation. With JavaScript, axe-core checks every page of these.

Set UPWATCH_SCREENSHOT_DIR to keep docs/console-status-page-settings.png and
docs/console-project.png there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from tests.browser import accessibility_violations, console_server, start_browser
from tests.conftest import PASSWORD
from tests.console.test_browser import click, flash, wait_for
from tests.factories import FAST_PLANS
from tests.live_server import LiveServer

pytestmark = pytest.mark.db_independent

# A second project to delete, and room for a status page per run.
PLANS = FAST_PLANS + "projectCount = 5\nstatusPageCount = 5\n"
CUSTOM_CSS = "h1 { letter-spacing: 3px; }"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with console_server(
        Path(tmp_path_factory.mktemp("console-status-pages")), PLANS, private_targets=False
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

    def shoot(self, name: str, whole: bool = False) -> None:
        """Save the window (``whole``: the page, however long) as docs' screenshot."""
        shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
        if not (shots and self.javascript):
            return
        size = self.browser.get_window_size()
        if whole:
            height = self.browser.execute_script("return document.body.scrollHeight;")
            self.browser.set_window_size(size["width"], height + 160)  # and the window's frame
        self.browser.save_screenshot(str(Path(shots) / f"console-{name}.png"))
        self.browser.set_window_size(size["width"], size["height"])

    def fill(self, form: str, **fields: str | bool) -> None:
        """Type into the fields of the form ``form`` selects (a box: ticked or not)."""
        for name, value in fields.items():
            selector = f"{form} [name={name}]:not([type=hidden])"
            element = self.browser.find_element(By.CSS_SELECTOR, selector)
            if isinstance(value, bool):
                if element.is_selected() != value:
                    element.click()
            elif element.tag_name == "select":
                Select(element).select_by_value(value)
            else:
                element.clear()
                element.send_keys(value)

    def send(self, form: str, done: str) -> None:
        """Submit the form and wait for the flash message saying ``done``."""
        self.browser.find_element(By.CSS_SELECTOR, f"{form} button[type=submit]").click()
        wait_for(self.browser, lambda b: done in flash(b))

    def heading(self) -> str:
        return self.browser.find_element(By.TAG_NAME, "h1").text


def sign_up_with_two_projects(visit: Visit, email: str) -> None:
    browser = visit.browser
    browser.get(f"{visit.server.url}/app/signup")
    visit.fill("main form", email=email, password=PASSWORD, firstName="Noor")
    visit.send("main form", "Welcome to Upwatch.")
    for name in ("Shop", "Old"):
        browser.find_element(By.LINK_TEXT, "Projects").click()
        visit.fill("main form", name=name)
        visit.send("main form", f"Project {name} created.")


def change_every_setting(visit: Visit, slug: str) -> str:
    """Make a status page and change its settings, private first; the editor's address."""
    browser = visit.browser
    browser.find_element(By.LINK_TEXT, "Status pages").click()
    visit.fill("main form", name="Draft", slug=f"{slug}-draft")
    visit.send("main form", "Status page Draft created.")
    editor = browser.current_url
    visit.fill(
        "#settings",
        name="Shop status",
        slug=slug,
        description="Checkout and catalogue, live.",
        visibility="members",
        theme="dark",
        customDomain="status.shop.example",
        customCss=CUSTOM_CSS,
        language="fr",
        visitorLanguage=True,
    )
    visit.send("#settings", "Settings of Shop status saved.")
    assert visit.heading() == "Shop status"
    assert "Private" in browser.find_element(By.CSS_SELECTOR, "p.target").text
    settings = browser.find_element(By.ID, "settings")
    assert settings.find_element(By.NAME, "customDomain").get_attribute("value") == (
        "status.shop.example"
    )
    assert settings.find_element(By.NAME, "language").get_attribute("value") == "fr"
    ticked = settings.find_element(By.CSS_SELECTOR, "[name=visitorLanguage]:not([type=hidden])")
    assert ticked.is_selected()
    visit.check("status page editor with its settings")
    visit.shoot("status-page-settings", whole=True)
    return editor


def see_it_as_visitors_do(visit: Visit, editor: str, slug: str) -> None:
    browser = visit.browser
    assert httpx.get(f"{visit.server.url}/s/{slug}").status_code == 404  # private
    browser.find_element(By.LINK_TEXT, "Preview").click()
    wait_for(browser, lambda b: b.find_element(By.TAG_NAME, "h1").text == "Shop status")
    assert "Checkout and catalogue, live." in browser.find_element(By.CSS_SELECTOR, ".lede").text
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("data-theme") == "dark"
    # The preview speaks the page's language; a visitor whose browser asks for English reads
    # English, which the page allows.
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "fr"

    browser.get(editor)
    visit.fill("#settings", visibility="public")
    visit.send("#settings", "Settings of Shop status saved.")
    assert "Public at" in browser.find_element(By.CSS_SELECTOR, "p.target").text
    browser.find_element(By.LINK_TEXT, f"/s/{slug}").click()
    wait_for(browser, lambda b: b.find_element(By.TAG_NAME, "h1").text == "Shop status")
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("data-theme") == "dark"
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "en"
    assert browser.find_elements(By.CSS_SELECTOR, f"link[href^='/s/{slug}/custom.css']")
    if visit.javascript:
        spacing = browser.execute_script(
            "return getComputedStyle(document.querySelector('h1')).letterSpacing;"
        )
        assert spacing == "3px"
    assert httpx.get(f"{visit.server.url}/s/{slug}-draft").status_code == 404


def subscribe_and_remove(visit: Visit, editor: str, slug: str, email: str) -> None:
    """A visitor subscribes on the public page (shown now); the owner removes them."""
    browser = visit.browser
    visit.fill("form.subscribe", email=email)
    browser.find_element(By.CSS_SELECTOR, "form.subscribe button").click()
    wait_for(browser, lambda b: "Check your inbox" in b.find_element(By.TAG_NAME, "h1").text)

    browser.get(editor)
    browser.find_element(By.LINK_TEXT, "Subscribers (1)").click()
    rows = browser.find_element(By.CSS_SELECTOR, "main table tbody").text
    assert email in rows
    assert "not yet" in rows
    visit.check("subscribers")
    click(browser, "main table tbody a[href$='/remove']")
    wait_for(browser, lambda b: visit.heading() == f"Remove {email}?")
    visit.check("removing a subscriber")
    visit.send("main form", "Subscriber removed")
    assert email not in browser.find_element(By.CSS_SELECTOR, "main table").text


def delete_after_cancelling_once(visit: Visit, editor: str) -> None:
    browser = visit.browser
    browser.get(editor)
    browser.find_element(By.PARTIAL_LINK_TEXT, "Delete this status page").click()
    wait_for(browser, lambda b: visit.heading() == "Delete Shop status?")
    visit.check("deleting a status page")
    browser.find_element(By.LINK_TEXT, "Cancel").click()
    wait_for(browser, lambda b: visit.heading() == "Shop status")
    browser.find_element(By.PARTIAL_LINK_TEXT, "Delete this status page").click()
    visit.send("main form", "Status page deleted.")
    assert "Shop status" not in browser.find_element(By.CSS_SELECTOR, "main table").text


def rename_one_project_and_delete_another(visit: Visit, invited: str) -> None:
    """Rename a project, invite someone and cancel it, then delete the other project."""
    browser = visit.browser
    browser.find_element(By.LINK_TEXT, "Projects").click()
    browser.find_element(By.LINK_TEXT, "Shop").click()
    wait_for(browser, lambda b: visit.heading() == "Shop")
    visit.fill("form[action$='/settings']", name="Storefront", description="The public shop.")
    visit.send("form[action$='/settings']", "Project Storefront saved.")
    assert visit.heading() == "Storefront"
    members = browser.find_element(By.CSS_SELECTOR, "main table").text
    assert "owner" in members
    visit.fill("form[action$='/invite']", email=invited)
    visit.send("form[action$='/invite']", f"Invitation sent to {invited}.")
    visit.check("project")
    visit.shoot("project")
    visit.send("form[action$='/cancel']", "Invitation cancelled")
    assert invited not in browser.find_element(By.CSS_SELECTOR, "main table").text

    browser.find_element(By.LINK_TEXT, "Projects").click()
    browser.find_element(By.LINK_TEXT, "Old").click()
    browser.find_element(By.PARTIAL_LINK_TEXT, "Delete this project").click()
    wait_for(browser, lambda b: visit.heading() == "Delete Old?")
    visit.check("deleting a project")
    visit.send("main form", "Project deleted")
    listed = browser.find_element(By.CSS_SELECTOR, "main table").text
    assert "Storefront" in listed
    assert "Old" not in listed
    visit.check("projects")


@pytest.mark.parametrize("javascript", [True, False], ids=["with-javascript", "without"])
def test_an_owner_sets_up_a_status_page_removes_a_subscriber_and_tidies_projects(
    server: LiveServer, javascript: bool
) -> None:
    run = "js" if javascript else "nojs"
    slug = f"shop-{run}"
    browser = start_browser(javascript=javascript)
    visit = Visit(browser, server, javascript)
    try:
        sign_up_with_two_projects(visit, f"owner-{run}@example.com")
        editor = change_every_setting(visit, slug)
        see_it_as_visitors_do(visit, editor, slug)
        subscribe_and_remove(visit, editor, slug, f"reader-{run}@example.com")
        delete_after_cancelling_once(visit, editor)
        rename_one_project_and_delete_another(visit, f"helper-{run}@example.com")
    finally:
        browser.quit()
    assert len(visit.found) == (7 if javascript else 0)
    assert {page: found for page, found in visit.found.items() if found} == {}
