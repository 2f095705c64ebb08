"""A status page in headless Chromium (Debian's chromium and chromium-driver, driven by
Selenium) against a real `upwatch serve`: complete without JavaScript, the owner's CSS
applied, the owner's script run on its page and nowhere else.

Set UPWATCH_SCREENSHOT_DIR to keep the page's screenshots there (docs/status-page.png, the page
with an open incident, docs/status-page-<state>.png, a page in each state of its banner, and
docs/status-page-ja.png and -de.png, a page in Japanese and German, are made so)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser import (
    BROWSER_SECONDS,
    accessibility_violations,
    require_browser,
    start_browser,
)
from tests.conftest import PASSWORD
from tests.factories import bearer
from tests.live_server import LiveServer, clean_env
from upwatch.kit.languages import translations
from upwatch.statuspages.render import WORDS

CUSTOM_CSS = "body { border-top: 6px solid rgb(12, 34, 56); }"
CUSTOM_JS = (
    "document.body.dataset.custom = 'ran';"
    "var note = document.createElement('p'); note.id = 'custom-note';"
    "note.textContent = 'Custom script ran'; document.body.appendChild(note);"
)


class _Healthy(BaseHTTPRequestHandler):
    """A target that is up: 200 to every check."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def target() -> Iterator[str]:
    """The address of a real local server that answers every check with 200."""
    served = ThreadingHTTPServer(("127.0.0.1", 0), _Healthy)
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{served.server_address[1]}/health"
    served.shutdown()
    served.server_close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    require_browser()
    env = clean_env(UPWATCH_ALLOW_PRIVATE_TARGETS="true")
    live = LiveServer(Path(tmp_path_factory.mktemp("browser")), env).start()
    yield live
    live.stop()


@pytest.fixture(scope="module")
def page(server: LiveServer) -> dict[str, Any]:
    """A public page with two components, a message and an open incident, made through the
    API as an owner would."""
    with httpx.Client(base_url=server.url) as api:
        signup = api.post(
            "/auth/signup",
            json={"email": "owner@example.com", "password": PASSWORD, "firstName": "Olga"},
        )
        headers = bearer(signup, 201)
        project = api.post("/projects", headers=headers, json={"name": "Shop"}).json()["id"]
        ids = []
        for name in ("Checkout", "Catalogue"):
            monitor = api.post(
                "/monitors",
                headers=headers,
                json={
                    "projectId": project,
                    "name": name,
                    "type": "http",
                    "url": "https://shop.example/health",
                    "intervalSeconds": 300,
                    "isActive": False,
                },
            )
            assert monitor.status_code == 201, monitor.text
            ids.append(monitor.json()["id"])
        created = api.post(
            "/status-pages",
            headers=headers,
            json={
                "projectId": project,
                "name": "Shop",
                "slug": "shop",
                "description": "Live state of the shop and its checkout",
                "customCss": CUSTOM_CSS,
                "customJs": CUSTOM_JS,
            },
        )
        assert created.status_code == 201, created.text
        status_page = created.json()
        components = [
            api.post(
                f"/status-pages/{status_page['id']}/components",
                headers=headers,
                json={"monitorId": monitor_id},
            ).json()
            for monitor_id in ids
        ]
        incident = api.post(
            "/incidents",
            headers=headers,
            json={
                "projectId": project,
                "monitorId": ids[0],
                "title": "Card payments fail",
                "status": "identified",
                "severity": "high",
                "description": "A payment provider rejects cards; we are switching providers.",
            },
        )
        assert incident.status_code == 201, incident.text
        api.patch(
            f"/status-pages/{status_page['id']}/status",
            headers=headers,
            json={
                "message": "Card payments fail for some customers.",
                "componentIds": [components[0]["id"]],
            },
        )
    return status_page


def test_the_page_is_complete_in_a_browser_without_javascript(
    server: LiveServer, page: dict[str, Any]
) -> None:
    browser = start_browser(javascript=False)
    try:
        browser.get(f"{server.url}/s/shop")
        assert browser.find_element(By.TAG_NAME, "h1").text == "Shop"
        banner = browser.find_element(By.CSS_SELECTOR, "[role=status]")
        # The open high incident on Checkout, though no monitor was checked (both paused).
        assert banner.text.splitlines() == [
            "Partial outage",
            "Card payments fail: affects Checkout",
        ]
        states = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".component .state")]
        assert states == ["Partial outage", "No data"]
        names = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".component h3")]
        assert names == ["Checkout", "Catalogue"]
        for bars in browser.find_elements(By.CSS_SELECTOR, "svg.bars"):
            assert len(bars.find_elements(By.TAG_NAME, "rect")) == 90
            assert "last 90 days" in (bars.get_attribute("aria-label") or "")
        incident = browser.find_element(By.CSS_SELECTOR, ".incident h3")
        assert incident.text == "Card payments fail"
        assert "Card payments fail for some customers." in browser.page_source
        # The owner's script did not run: JavaScript is off.
        assert browser.find_elements(By.ID, "custom-note") == []
        # The page's own form works without JavaScript under the page's sandboxing policy.
        browser.find_element(By.ID, "subscribe-email").send_keys("visitor@example.org")
        browser.find_element(By.CSS_SELECTOR, ".subscribe button").click()
        # The old page's heading may go stale between finding and reading it.
        ignored = (StaleElementReferenceException,)
        WebDriverWait(browser, BROWSER_SECONDS, ignored_exceptions=ignored).until(
            lambda b: (
                b.find_elements(By.TAG_NAME, "h1")
                and b.find_element(By.TAG_NAME, "h1").text == "Check your inbox"
            )
        )
    finally:
        browser.quit()


def test_the_owners_css_applies_and_script_runs_on_its_page_and_not_on_the_api_docs(
    server: LiveServer, page: dict[str, Any]
) -> None:
    browser = start_browser(javascript=True)
    try:
        browser.get(f"{server.url}/s/shop")
        WebDriverWait(browser, BROWSER_SECONDS).until(
            lambda b: b.find_elements(By.ID, "custom-note")
        )
        body = browser.find_element(By.TAG_NAME, "body")
        assert body.get_attribute("data-custom") == "ran"
        assert body.value_of_css_property("border-top-color") == "rgba(12, 34, 56, 1)"
        # Our own stylesheet loaded too, under the page's policy.
        banner = browser.find_element(By.CSS_SELECTOR, "[role=status]")
        assert banner.value_of_css_property("font-weight") == "600"
        shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
        if shots:
            browser.save_screenshot(str(Path(shots) / "status-page.png"))

        browser.get(f"{server.url}/docs")
        WebDriverWait(browser, BROWSER_SECONDS).until(
            lambda b: b.find_elements(By.CSS_SELECTOR, "#swagger-ui .information-container")
        )
        assert browser.find_elements(By.ID, "custom-note") == []
        assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-custom") is None
    finally:
        browser.quit()


def _page_of(api: httpx.Client, headers: dict[str, str], project: str, slug: str) -> str:
    created = api.post(
        "/status-pages",
        headers=headers,
        json={"projectId": project, "name": "Shop", "slug": slug},
    )
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def _component(
    api: httpx.Client, headers: dict[str, str], project: str, page_id: str, **monitor: Any
) -> None:
    made = api.post(
        "/monitors",
        headers=headers,
        json={"projectId": project, "type": "http", "intervalSeconds": 300, **monitor},
    )
    assert made.status_code == 201, made.text
    added = api.post(
        f"/status-pages/{page_id}/components",
        headers=headers,
        json={"monitorId": made.json()["id"]},
    )
    assert added.status_code == 201, added.text


@pytest.fixture(scope="module")
def pages_in_each_state(server: LiveServer, page: dict[str, Any], target: str) -> None:
    """Beside the page with an open incident: one whose checked components are all up
    (``calm``) and one whose components were never checked (``new``)."""
    with httpx.Client(base_url=server.url) as api:
        signed = api.post("/auth/login", json={"email": "owner@example.com", "password": PASSWORD})
        headers = bearer(signed)
        assert api.post("/subscriptions/upgrade", headers=headers, json={}).status_code == 200
        project = page["projectId"]
        calm = _page_of(api, headers, project, "calm")
        for name in ("Checkout", "Catalogue"):
            _component(api, headers, project, calm, name=name, url=target)
        new = _page_of(api, headers, project, "new")
        for name in ("Checkout", "Catalogue"):
            _component(api, headers, project, new, name=name, url=target, isActive=False)
        # A new monitor is checked within seconds of its creation.
        deadline = time.monotonic() + BROWSER_SECONDS
        while api.get("/status-pages/public/slug/calm").json()["overallStatus"] != "operational":
            assert time.monotonic() < deadline, "the calm page's monitors were never checked"
            time.sleep(0.2)


@pytest.mark.parametrize(
    ("slug", "state", "banner", "component_states"),
    [
        ("calm", "operational", "All systems operational", ["Operational", "Operational"]),
        (
            "shop",
            "partial-outage",
            "Partial outage\nCard payments fail: affects Checkout",
            ["Partial outage", "No data"],
        ),
        ("new", "no-data", "No data yet", ["No data", "No data"]),
    ],
)
def test_each_state_of_the_banner_reads_right_in_a_browser(
    server: LiveServer,
    pages_in_each_state: None,
    slug: str,
    state: str,
    banner: str,
    component_states: list[str],
) -> None:
    browser = start_browser(javascript=False)
    try:
        browser.get(f"{server.url}/s/{slug}")
        assert browser.find_element(By.CSS_SELECTOR, "[role=status]").text == banner
        states = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".component .state")]
        assert states == component_states
        shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
        if shots:
            browser.save_screenshot(str(Path(shots) / f"status-page-{state}.png"))
    finally:
        browser.quit()


@pytest.mark.parametrize(
    ("asked", "language"),
    [("?lang=ja", "ja"), ("?lang=de", "de")],
)
def test_a_page_in_japanese_and_in_german_reads_whole_fits_the_window_and_passes_axe(
    server: LiveServer, page: dict[str, Any], target: str, asked: str, language: str
) -> None:
    with httpx.Client(base_url=server.url) as api:
        signed = api.post("/auth/login", json={"email": "owner@example.com", "password": PASSWORD})
        headers = bearer(signed)
        # Pro already when another test of the module upgraded first.
        upgraded = api.post("/subscriptions/upgrade", headers=headers, json={})
        assert upgraded.status_code in {200, 409}, upgraded.text
        if api.get("/status-pages/public/slug/tokyo").status_code == 404:
            made = api.post(
                "/status-pages",
                headers=headers,
                json={
                    "projectId": page["projectId"],
                    "name": "Shop",
                    "slug": "tokyo",
                    "description": "Live state of the shop and its checkout",
                    "language": "ja",
                    "visitorLanguage": True,
                },
            )
            assert made.status_code == 201, made.text
            for name in ("Checkout", "Catalogue"):
                _component(
                    api, headers, page["projectId"], made.json()["id"], name=name, url=target
                )
        # Both components checked: the page shows its figures, not "no data".
        deadline = time.monotonic() + BROWSER_SECONDS
        while api.get("/status-pages/public/slug/tokyo").json()["overallStatus"] != "operational":
            assert time.monotonic() < deadline, "the page's monitors were never checked"
            time.sleep(0.2)
    words = translations(language)
    browser = start_browser(javascript=True)
    try:
        browser.get(f"{server.url}/s/tokyo{asked}")
        banner = browser.find_element(By.CSS_SELECTOR, "[role=status]").text
        assert banner == words.gettext(WORDS["operational"])
        assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == language
        headings = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "main h2")]
        assert words.gettext("Components") in headings
        # Nothing runs off the side: the longer German words and the wide Japanese ones wrap.
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth"
        )
        assert overflow <= 0
        assert accessibility_violations(browser) == []
        shots = os.environ.get("UPWATCH_SCREENSHOT_DIR")
        if shots:
            browser.save_screenshot(str(Path(shots) / f"status-page-{language}.png"))
    finally:
        browser.quit()
