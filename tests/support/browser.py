"""Browser fixtures (a pytest plugin: conftest.py loads it): a real headless Chromium (Debian's package)
driven by Playwright's Python API.

`.ci/browser-deps` installs both (`make test` runs it). Without a Chromium the browser tests are
skipped with the reason, except in CI (CI=true), where a missing browser is a failure.
"""

import os
import shutil

import pytest

from support import ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Flags for a closed network and a root user: no sandbox, no background connections to the outside.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
SCREENSHOTS = ROOT / "reports" / "ui"


@pytest.fixture(scope="module")
def chromium():
    """A headless Chromium for the tests of one module. Not for the session: while Playwright's sync API is
    open, the worker's main thread counts as running an event loop, and a later test of another module in
    that worker that calls asyncio.run() failed (test_fleet_memory, when pytest-xdist sent it there)."""
    if not os.path.exists(CHROMIUM):
        reason = f"no Chromium at {CHROMIUM}: run .ci/browser-deps (installs Debian's chromium)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: .ci/browser-deps")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    """A fresh browser page (own context: no cookies or storage shared between tests)."""
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    yield tab
    context.close()


def screenshot(tab, name):
    """Save a screenshot under reports/ui/ (kept by CI as an artifact of the browser tests)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    tab.screenshot(path=str(path), full_page=True)
    return path


def expect():
    """Playwright's `expect`, imported only by the tests that drive a browser."""
    from playwright.sync_api import expect as playwright_expect
    return playwright_expect
