"""A monitor's whole life in Chromium, for every type: made from the form that shows the
type's own boxes, edited, paused, resumed, cloned and deleted after a confirmation; then
several ticked in the list and paused together. Once with JavaScript and once without."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from tests.browser import accessibility_violations, console_server, start_browser
from tests.conftest import PASSWORD
from tests.console.test_browser import click, fill, flash, submit, wait_for
from tests.live_server import LiveServer, ThreadedTarget

pytestmark = pytest.mark.db_independent


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with console_server(Path(tmp_path_factory.mktemp("monitors"))) as live:
        yield live


@pytest.fixture(scope="module")
def targets() -> Iterator[dict[str, dict[str, str]]]:
    """Each type's boxes, aimed at real local servers (an HTTP target, a listening port)."""
    with ThreadedTarget() as http, socket.create_server(("127.0.0.1", 0)) as port:
        tcp = str(port.getsockname()[1])
        yield {
            "http": {"url": f"{http.base}/health", "method": "HEAD", "keyword": ""},
            "tcp": {"host": "127.0.0.1", "port": tcp},
            "dns": {"host": "localhost", "recordType": "A", "expectedValue": "127.0.0.1"},
            "tls": {"host": "127.0.0.1", "port": tcp},
            "heartbeat": {"schedule": "*/5 * * * *", "timezone": "UTC", "graceSeconds": "120"},
        }


def sign_up_with_a_project(browser: WebDriver, server: LiveServer, email: str) -> None:
    browser.get(f"{server.url}/app/signup")
    fill(browser, email=email, password=PASSWORD, firstName="Lea")
    submit(browser)
    wait_for(browser, lambda b: "Welcome to Upwatch." in flash(b))
    browser.get(f"{server.url}/app/projects")
    fill(browser, name="Shop")
    submit(browser)
    wait_for(browser, lambda b: "Project Shop created." in flash(b))


def choose_type(browser: WebDriver, server: LiveServer, kind: str) -> None:
    browser.get(f"{server.url}/app/monitors")
    click(browser, "a[href='/app/monitors/new']")
    Select(browser.find_element(By.NAME, "type")).select_by_value(kind)
    submit(browser, "form.type-choice")
    wait_for(
        browser,
        lambda b: (
            b.find_element(By.CSS_SELECTOR, ".monitor-form input[name=type]").get_attribute("value")
            == kind
        ),
    )


def live_the_whole_life(
    browser: WebDriver, server: LiveServer, kind: str, boxes: dict[str, str]
) -> None:
    name = f"{kind.upper()} check"
    choose_type(browser, server, kind)
    fill(browser, name=name, intervalSeconds="300", **boxes)
    submit(browser, "form.monitor-form")
    wait_for(browser, lambda b: flash(b) == f"Monitor {name} created.")

    click(browser, ".monitor-actions a[href$='/edit']")
    fill(browser, name=f"{name} v2", retries="2")
    submit(browser, "form.monitor-form")
    wait_for(browser, lambda b: flash(b) == f"Monitor {name} v2 saved.")
    assert b_text(browser, "h1") == f"{name} v2"

    click(browser, "form[action$='/pause'] button")
    wait_for(browser, lambda b: flash(b) == "Monitor paused.")
    click(browser, "form[action$='/resume'] button")
    wait_for(browser, lambda b: flash(b) == "Monitor resumed.")

    click(browser, ".monitor-actions a[href$='/clone']")
    wait_for(
        browser,
        lambda b: b.find_element(By.NAME, "name").get_attribute("value") == f"Copy of {name} v2",
    )
    submit(browser, "form.monitor-form")
    wait_for(browser, lambda b: flash(b) == f"Monitor Copy of {name} v2 created.")

    for _copy_then_original in range(2):
        click(browser, ".monitor-actions a[href$='/delete']")
        click(browser, "form.confirm button[type=submit]")
        wait_for(browser, lambda b: flash(b) == "Monitor deleted.")
        if _copy_then_original == 0:
            browser.find_element(By.LINK_TEXT, f"{name} v2").click()
    assert name not in browser.find_element(By.ID, "monitor-rows").text


def b_text(browser: WebDriver, selector: str) -> str:
    return browser.find_element(By.CSS_SELECTOR, selector).text


@pytest.mark.parametrize("javascript", [True, False], ids=["with-javascript", "without"])
def test_a_monitor_of_every_type_is_made_edited_paused_resumed_cloned_and_deleted(
    server: LiveServer, targets: dict[str, dict[str, str]], javascript: bool
) -> None:
    browser = start_browser(javascript=javascript)
    shots = os.environ.get("UPWATCH_SCREENSHOT_DIR") if javascript else None
    try:
        sign_up_with_a_project(browser, server, f"types-{javascript}@example.com")
        for kind, boxes in targets.items():
            live_the_whole_life(browser, server, kind, boxes)

        choose_type(browser, server, "http")
        checked = {"new monitor form": accessibility_violations(browser) if javascript else []}
        if shots:
            browser.save_screenshot(str(Path(shots) / "console-monitor-form.png"))
        for n in range(3):
            choose_type(browser, server, "tcp")
            fill(browser, name=f"Port {n}", intervalSeconds="300", **targets["tcp"])
            submit(browser, "form.monitor-form")
            wait_for(browser, lambda b, n=n: flash(b) == f"Monitor Port {n} created.")
        browser.get(f"{server.url}/app/monitors?q=port")
        for box in browser.find_elements(By.CSS_SELECTOR, "#monitor-rows input[name=ids]")[:2]:
            box.click()
        Select(browser.find_element(By.ID, "bulk-action")).select_by_value("pause")
        submit(browser, "form.bulk")
        wait_for(browser, lambda b: flash(b) == "2 monitors paused.")
        if javascript:
            browser.get(f"{server.url}/app/monitors")
            checked["monitors list"] = accessibility_violations(browser)
            browser.find_element(By.LINK_TEXT, "Port 0").click()
            checked["monitor page"] = accessibility_violations(browser)
            click(browser, ".monitor-actions a[href$='/delete']")
            checked["delete confirmation"] = accessibility_violations(browser)
        assert {page: found for page, found in checked.items() if found} == {}
    finally:
        browser.quit()
