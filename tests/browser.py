"""Headless Chromium for the browser tests: Debian's chromium and chromium-driver, driven by
Selenium (.ci/run installs both). Bounds are settings, not speeds (docs/testing.md)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

from tests.factories import FAST_PLANS
from tests.live_server import LiveServer, clean_env

CHROMIUM = os.environ.get("UPWATCH_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("UPWATCH_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")
# How long a page may take to load and settle in a loaded browser (a bound, not a speed).
BROWSER_SECONDS = float(os.environ.get("UPWATCH_TEST_BROWSER_SECONDS", "60"))


AXE = Path(__file__).resolve().parent.parent / "node_modules" / "axe-core" / "axe.min.js"
# What an accessibility check may not find on a page (axe-core's impact levels).
BLOCKING_IMPACTS = frozenset({"serious", "critical"})


def require_browser() -> None:
    """Skip with the reason where the machine has no browser; in CI
    (UPWATCH_REQUIRE_BROWSER=1) a missing browser fails instead."""
    if shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER):
        return
    reason = (
        f"needs Chromium and ChromeDriver ({CHROMIUM}, {CHROMEDRIVER}): "
        "apt-get install chromium chromium-driver (.ci/run does)"
    )
    if os.environ.get("UPWATCH_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def start_browser(javascript: bool) -> WebDriver:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1100,1500",
    ):
        options.add_argument(flag)
    if not javascript:
        options.add_experimental_option(
            "prefs", {"profile.managed_default_content_settings.javascript": 2}
        )
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(BROWSER_SECONDS)
    return driver


def accessibility_violations(driver: WebDriver) -> list[str]:
    """axe-core's serious and critical findings on the page ``driver`` shows, one line each
    (rule, impact, the elements it names). axe-core is an npm package (package.json;
    scripts/install dev installs it); without it the check fails in CI and skips elsewhere."""
    if not AXE.is_file():
        reason = f"needs axe-core at {AXE}: npm ci (scripts/install dev runs it)"
        if os.environ.get("UPWATCH_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    # WebDriver's own script channel is not subject to the page's script policy.
    driver.execute_script(AXE.read_text())
    found: list[dict[str, Any]] = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']})"
        ".then(r => done(r.violations), e => done([{id: 'axe-error', impact: 'critical',"
        " help: String(e), nodes: []}]));"
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + ", ".join(str(n.get("target")) for n in v.get("nodes", [])[:5])
        for v in found
        if v.get("impact") in BLOCKING_IMPACTS
    ]


@contextmanager
def console_server(
    tmp: Path,
    plans: str | None = None,
    *,
    private_targets: bool = True,
    prepare: Callable[[Path, dict[str, str]], object] | None = None,
    **env: str,
) -> Iterator[LiveServer]:
    """A real `upwatch serve` on its own SQLite file for a browser test module (skipped, with
    the reason, where the machine has no browser): fast plans (or ``plans``), local targets
    allowed unless ``private_targets`` is false, ``env`` added; ``prepare`` runs before the
    server starts (e.g. to make an administrator with the CLI)."""
    require_browser()
    plans_file = tmp / "plans.toml"
    plans_file.write_text(FAST_PLANS if plans is None else plans)
    allowed = {"UPWATCH_ALLOW_PRIVATE_TARGETS": "true"} if private_targets else {}
    settings = clean_env(
        UPWATCH_DATABASE_URL=f"sqlite+aiosqlite:///{tmp / 'upwatch.db'}",
        UPWATCH_PLANS_FILE=str(plans_file),
        **allowed,
        **env,
    )
    if prepare is not None:
        prepare(tmp, settings)
    live = LiveServer(tmp, settings).start()
    try:
        yield live
    finally:
        live.stop()
