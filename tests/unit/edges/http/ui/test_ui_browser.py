"""The explorer's pages in headless Chromium against a stand-in API (`stub_api`): sign-in,
user search, the overview on the timeline, the recall trace, and the "not available" panels
an older server without those routes gets. The real API is tested in
tests/integration/test_explorer.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect
from tests.browser import chromium, watched_page

from memstream.edges.http.server import BackgroundServer

from .stub_api import KEY, USER, stub_app


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def full() -> Iterator[str]:
    with BackgroundServer(stub_app()) as server:
        yield server.url


@pytest.fixture(scope="module")
def older() -> Iterator[str]:
    with BackgroundServer(stub_app(missing=True)) as server:
        yield server.url


def signed_in(browser: Browser, url: str, path: str):  # type: ignore[no-untyped-def]
    watched = watched_page(browser)
    page = watched.page
    page.goto(f"{url}/ui/?next={path}")
    page.fill("#key", KEY)
    page.click("#signin button[type=submit]")
    page.wait_for_url(f"{url}{path}")
    return watched


def test_a_wrong_key_is_refused_with_a_message(browser: Browser, full: str) -> None:
    page = watched_page(browser).page
    page.goto(f"{full}/ui/")
    page.fill("#key", "not-the-key")
    page.click("#signin button[type=submit]")
    expect(page.locator("#message")).to_contain_text("not accepted")
    assert page.evaluate("() => sessionStorage.getItem('memstream.key')") is None
    assert page.url == f"{full}/ui/"


def test_the_key_is_kept_for_the_tab_only(browser: Browser, full: str) -> None:
    watched = signed_in(browser, full, "/ui/users")
    page = watched.page
    assert page.evaluate("() => sessionStorage.getItem('memstream.key')") == KEY
    assert page.evaluate("() => localStorage.length") == 0
    assert KEY not in page.url
    # A new tab (a new context here) starts signed out.
    other = watched_page(browser).page
    other.goto(f"{full}/ui/users")
    other.wait_for_url(f"{full}/ui/?next=%2Fui%2Fusers")


def test_user_search_pages_by_prefix(browser: Browser, full: str) -> None:
    page = signed_in(browser, full, "/ui/users").page
    page.fill("#prefix", "user-")
    page.click("form[role=search] button")
    expect(page.locator("#results tbody tr")).to_have_count(25)
    page.click("text=More users")
    expect(page.locator("#results tbody tr")).to_have_count(30)
    page.click("text=user-07")
    page.wait_for_url(f"{full}/ui/users/user-07")


def test_the_timeline_shows_levels_counts_and_consolidation(browser: Browser, full: str) -> None:
    watched = signed_in(browser, full, f"/ui/users/{USER}")
    page = watched.page
    expect(page.locator("main[data-ready=true]")).to_be_visible()
    expect(page.locator(".row[data-level='5'] .label")).to_contain_text("1 in all")
    expect(page.locator(".row[data-level='2'] .bar")).to_have_count(2)
    expect(page.locator("text=Pending windows · 1")).to_be_visible()
    expect(page.locator("section.panel h2", has_text="Consolidation")).to_be_visible()
    # The stand-in has no knowledge routes: those panels say so instead of failing.
    expect(page.locator(".notice", has_text="Entities: not available")).to_be_visible()
    assert watched.errors == []


def test_zooming_changes_the_address_and_shows_exchanges(browser: Browser, full: str) -> None:
    page = signed_in(browser, full, f"/ui/users/{USER}").page
    expect(page.locator("main[data-ready=true]")).to_be_visible()
    page.locator(".row[data-level='3'] .bar").first.click()
    expect(page.locator(".row[data-level='1'] .bar")).to_have_count(2)
    assert "start=" in page.url and "end=" in page.url
    page.reload()  # the zoomed view is linkable
    expect(page.locator(".row[data-level='1'] .bar")).to_have_count(2)


def test_a_summary_fact_leads_to_its_message_in_one_click(browser: Browser, full: str) -> None:
    page = signed_in(browser, full, f"/ui/users/{USER}/memories/day0").page
    page.locator("a.source", has_text="d2").first.click()
    page.wait_for_url(f"{full}/ui/users/{USER}/memories/e-d2")
    expect(page.locator("blockquote")).to_have_text("Ana: message d2")


def test_an_explained_recall_shows_the_trace(browser: Browser, full: str) -> None:
    watched = signed_in(browser, full, f"/ui/users/{USER}/recall")
    page = watched.page
    page.fill("#query", "what are the plans?")
    page.click("#recall button[type=submit]")
    expect(page.locator("#recall-result[data-ready=true]")).to_be_visible()
    leaves = page.locator("section.panel:has(h2:text-matches('^Leaves'))").locator("tbody tr")
    expect(leaves).to_have_count(2)
    expect(leaves.first).to_contain_text("0.810")
    expect(page.locator("section.panel:has(h2:text-matches('^Dropped'))")).to_contain_text(
        "below the relevance gate"
    )
    expect(page.locator(".stage")).to_have_count(4)
    expect(page.locator("text=42 of 1000 tokens")).to_be_visible()
    assert watched.errors == []


def test_an_older_server_gets_not_available_panels(browser: Browser, older: str) -> None:
    page = signed_in(browser, older, f"/ui/users/{USER}/recall").page
    page.fill("#query", "plans")
    page.click("#recall button[type=submit]")
    expect(page.locator(".notice", has_text="The recall trace: not available")).to_be_visible()
    expect(page.locator("section.panel", has_text="Recalled")).to_contain_text("message d1")
    page.goto(f"{older}/ui/users/{USER}")
    expect(page.locator("main[data-ready=true]")).to_be_visible()
    expect(page.locator(".notice", has_text="overview: not available")).to_be_visible()
    expect(page.locator(".row[data-level='5'] .bar")).to_have_count(1)
    page.goto(f"{older}/ui/users")
    expect(page.locator(".notice", has_text="User search: not available")).to_be_visible()


def test_forgetting_the_user_needs_the_id_typed_out(browser: Browser) -> None:
    with BackgroundServer(stub_app()) as server:  # its own: the user is gone afterwards
        watched = signed_in(browser, server.url, f"/ui/users/{USER}")
        page = watched.page
        expect(page.locator("main[data-ready=true]")).to_be_visible()
        page.click("text=Forget this user")
        dialog = page.locator("dialog.confirm")
        confirm = dialog.locator("button[type=submit]")
        expect(confirm).to_be_disabled()
        dialog.locator("input").fill("an")
        expect(confirm).to_be_disabled()
        dialog.locator("input").fill(USER)
        confirm.click()
        expect(page.locator(".notice", has_text="No memories for this user")).to_be_visible()
        assert watched.dialogs == []
