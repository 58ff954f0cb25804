"""Headless Chromium for the explorer's tests: Debian's system browser driven by Playwright.

    with chromium() as browser:
        page = watched_page(browser)        # records dialogs and page errors
        page.goto(url + "/ui/")

No browser is downloaded: Playwright launches /usr/bin/chromium (scripts/setup.sh installs
it); a machine without it fails the test, as for kcat and promtool.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Dialog, Page, sync_playwright

SCREENSHOTS = Path(__file__).resolve().parents[1] / "docs" / "explorer"
VIEWPORT = {"width": 1280, "height": 860}


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium is missing: apt-get install chromium chromium-driver (setup.sh)")
    return path


@contextmanager
def chromium() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=["--no-sandbox"]
        )
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Watched:
    """A page with what it did behind the test's back: dialogs opened, uncaught errors,
    requests to any other origin, and CSP violations reported on the console."""

    page: Page
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


def watched_page(browser: Browser) -> Watched:
    page = browser.new_page(viewport=VIEWPORT)  # a fresh context: its own sessionStorage
    watched = Watched(page)

    def on_dialog(dialog: Dialog) -> None:
        watched.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda error: watched.errors.append(str(error)))
    page.on(
        "console",
        lambda m: watched.console_errors.append(m.text) if m.type == "error" else None,
    )
    return watched


def body_overflows(page: Page) -> bool:
    """Whether the page is wider than the window (a long word broke the layout)."""
    return bool(
        page.evaluate(
            "() => document.documentElement.scrollWidth > document.documentElement.clientWidth"
        )
    )


def screenshot(page: Page, name: str) -> None:
    """Keeps the page as docs/explorer/NAME.png (what the docs and the README show)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
