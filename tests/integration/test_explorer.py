"""The memory explorer in headless Chromium against the real API and workers over real HTTP,
with a LoCoMo conversation and a user of hostile messages ingested once for the module.

Set EXPLORER_SCREENSHOTS=docs/explorer to keep a screenshot of each page (the docs' images).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect
from pydantic import SecretStr
from tests.browser import Watched, body_overflows, chromium, watched_page

from memstream.entrypoints.embedded.processes import free_port
from memstream.settings import Settings
from memstream_lab.locomo import load_conversation, message_text

from .explorer_stack import HOSTILE_USER, LOCOMO_USER, LONG_WORD, LiveExplorer
from .trees import locomo_file, module_settings

KEY = "explorer-test-key"
FORGET_TIMEOUT_MS = 180_000


@pytest.fixture(scope="module")
def live(
    stack_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveExplorer]:
    data = tmp_path_factory.mktemp("explorer")
    settings = module_settings(
        stack_settings,
        data,
        recall_api_keys=[SecretStr(KEY)],
        api_port=free_port(),
        clock_grace_s=0.0,
        clock_interval_s=0.5,
    )
    with LiveExplorer(settings, data) as running:
        yield running


@pytest.fixture(scope="module")
def browser(live: LiveExplorer) -> Iterator[Browser]:
    # After the stack: Playwright's synchronous API holds an event loop in this thread, and
    # the stack's set-up runs one of its own here first.
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def api(live: LiveExplorer) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=live.url, headers=headers, timeout=30) as client:
        yield client


def keep(page: Page, name: str) -> None:
    """A screenshot for the docs, when EXPLORER_SCREENSHOTS names where to put it."""
    folder = os.environ.get("EXPLORER_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def signed_in(browser: Browser, live: LiveExplorer, path: str) -> Watched:
    watched = watched_page(browser)
    watched.page.goto(f"{live.url}/ui/?next={path}")
    watched.page.fill("#key", KEY)
    watched.page.click("#signin button[type=submit]")
    watched.page.wait_for_url(re.compile(re.escape(live.url + path)))
    return watched


def test_signing_in_with_a_wrong_then_the_right_key(browser: Browser, live: LiveExplorer) -> None:
    page = watched_page(browser).page
    page.goto(f"{live.url}/ui/users")
    page.wait_for_url(f"{live.url}/ui/?next=%2Fui%2Fusers")
    page.fill("#key", "wrong-key")
    page.click("#signin button[type=submit]")
    expect(page.locator("#message")).to_contain_text("not accepted")
    keep(page, "signin")
    page.fill("#key", KEY)
    page.click("#signin button[type=submit]")
    page.wait_for_url(f"{live.url}/ui/users")
    assert page.evaluate("() => localStorage.length") == 0


def test_the_timeline_opens_a_summary(browser: Browser, live: LiveExplorer) -> None:
    watched = signed_in(browser, live, f"/ui/users/{LOCOMO_USER}")
    page = watched.page
    expect(page.locator("main[data-ready=true]")).to_be_visible(timeout=10_000)
    for level in (5, 4, 3):
        assert page.locator(f".row[data-level='{level}'] .bar").count() >= 1
    keep(page, "timeline")
    page.locator("ol.memories li a").first.click()
    page.wait_for_url(re.compile(r"/memories/"))
    expect(page.locator("h1")).to_contain_text("day (L3)")
    assert page.locator("ul.children li").count() >= 1
    assert page.locator("ul.ancestors li").count() == 2  # its week and month
    assert watched.errors == []


def test_zooming_to_a_day_shows_its_sessions_and_exchanges(
    browser: Browser, live: LiveExplorer
) -> None:
    page = signed_in(browser, live, f"/ui/users/{LOCOMO_USER}").page
    expect(page.locator("main[data-ready=true]")).to_be_visible()
    page.locator(".row[data-level='3'] .bar").first.click()
    expect(page.locator(".row[data-level='1'] .bar").first).to_be_visible()
    assert page.locator(".row[data-level='2'] .bar").count() >= 1
    keep(page, "timeline-day")


def test_a_cited_source_leads_to_its_message(
    browser: Browser, live: LiveExplorer, api: httpx.Client
) -> None:
    day = api.get(f"/v1/users/{LOCOMO_USER}/memories", params={"level": 3, "limit": 1}).json()
    [summary] = day["items"]
    message = summary["source_ids"][0]
    page = signed_in(browser, live, f"/ui/users/{LOCOMO_USER}/memories/{summary['id']}").page
    expect(page.locator("main[data-ready=true]")).to_be_visible()
    keep(page, "summary")
    page.locator("a.source", has_text=re.compile(f"^{re.escape(message)}$")).first.click()
    page.wait_for_url(re.compile(r"/memories/"))
    texts = {
        m.dia_id: message_text(m)
        for s in load_conversation(locomo_file("30")).sessions
        for m in s.messages
    }
    expect(page.locator("blockquote.user-text")).to_contain_text(texts[message][:40])
    expect(page.locator("section.panel", has_text="Source messages")).to_contain_text(message)
    keep(page, "exchange")


def test_an_explained_recall(browser: Browser, live: LiveExplorer) -> None:
    watched = signed_in(browser, live, f"/ui/users/{LOCOMO_USER}/recall")
    page = watched.page
    page.fill("#query", "When did Gina get her tattoo?")
    page.click("#recall button[type=submit]")
    expect(page.locator("#recall-result[data-ready=true]")).to_be_visible(timeout=30_000)
    assert page.locator("section.panel", has_text="Recalled").locator("ol li").count() >= 1
    leaves = page.locator("section.panel:has(h2:text-matches('^Leaves'))").locator("tbody tr")
    assert leaves.count() >= 1
    assert page.locator(".stage").count() >= 2
    keep(page, "recall")
    assert watched.errors == []


def cited_outside_its_chain(api: httpx.Client, leaf: dict[str, Any]) -> bool:
    """Whether a summary other than the leaf's ancestors cites its message (a later month's
    profile carries lines of the one before it): the page's test takes a message cited by its
    chain only, so the memory above it is the whole story; the API's test below takes one
    cited beyond it."""
    [message] = leaf["source_ids"]
    chain, parent = set(), leaf["parent_id"]
    summaries = {}
    for level in (2, 3, 4, 5):
        page = api.get(f"/v1/users/{LOCOMO_USER}/memories", params={"level": level, "limit": 500})
        summaries |= {n["id"]: n for n in page.json()["items"]}
    while parent:
        chain.add(parent)
        parent = summaries[parent]["parent_id"]
    return any(
        message in n["source_ids"] or any(message in f["source_ids"] for f in n["facts"])
        for i, n in summaries.items()
        if i not in chain
    )


def test_forgetting_a_message_takes_it_off_the_tree(
    browser: Browser, live: LiveExplorer, api: httpx.Client
) -> None:
    leaves = api.get(f"/v1/users/{LOCOMO_USER}/memories", params={"level": 1, "limit": 50})
    leaf = next(
        n
        for n in reversed(leaves.json()["items"])
        if len(n["source_ids"]) == 1 and not cited_outside_its_chain(api, n)
    )
    [message] = leaf["source_ids"]
    page = signed_in(browser, live, f"/ui/users/{LOCOMO_USER}/memories/{leaf['id']}").page
    page.click(f"text=Forget message {message}")
    dialog = page.locator("dialog.confirm")
    expect(dialog).to_be_visible()
    keep(page, "forget")
    dialog.locator("button[type=submit]").click()
    # Done when no memory cites it; the page then shows the memory above, rewritten.
    forgotten = page.locator(".notice", has_text=f"Message {message} was forgotten")
    expect(forgotten).to_be_visible(timeout=FORGET_TIMEOUT_MS)
    assert f"/memories/{leaf['parent_id']}?forgot=" in page.url
    expect(page.locator("main[data-ready=true]")).to_be_visible()
    expect(page.locator(f"a[href$='/memories/{leaf['id']}']")).to_have_count(0)
    expect(page.locator("a.source", has_text=re.compile(f"^{re.escape(message)}$"))).to_have_count(
        0
    )
    page.goto(f"{live.url}/ui/users/{LOCOMO_USER}/memories/{leaf['id']}")
    expect(page.locator(".notice", has_text="This memory is gone")).to_be_visible()


def test_forgetting_a_message_a_later_profile_carries_reaches_that_profile(
    api: httpx.Client,
) -> None:
    """A profile repeats lines of the profile before it, which its own children do not
    change: the forget re-closes it and it is written again without the message."""
    leaves = api.get(f"/v1/users/{LOCOMO_USER}/memories", params={"level": 1, "limit": 500})
    leaf = next(
        n
        for n in leaves.json()["items"]
        if len(n["source_ids"]) == 1 and cited_outside_its_chain(api, n)
    )
    [message] = leaf["source_ids"]
    answer = api.post(f"/v1/users/{LOCOMO_USER}/messages:forget", json={"message_ids": [message]})
    assert answer.status_code == 202
    status_path = f"/v1/users/{LOCOMO_USER}/messages/{quote(message, safe='')}/forget"
    deadline = time.monotonic() + FORGET_TIMEOUT_MS / 1000
    while api.get(status_path).json()["status"] != "done":
        assert time.monotonic() < deadline, f"forgetting {message} never ended"
        time.sleep(0.5)
    for level in (1, 2, 3, 4, 5):
        page = api.get(f"/v1/users/{LOCOMO_USER}/memories", params={"level": level, "limit": 500})
        for node in page.json()["items"]:
            cited = {s for f in node["facts"] for s in f["source_ids"]} | set(node["source_ids"])
            assert message not in cited, f"L{level} {node['id']} still cites {message}"


def no_harm_done(watched: Watched) -> None:
    page = watched.page
    assert watched.dialogs == []
    assert page.evaluate("() => window.__pwned") is None
    injected = "main img, main svg, main script, main iframe, a[href^='javascript']"
    assert page.locator(injected).count() == 0
    assert not body_overflows(page)


def test_hostile_messages_are_shown_as_text_and_run_nothing(
    browser: Browser, live: LiveExplorer, api: httpx.Client
) -> None:
    watched = signed_in(browser, live, f"/ui/users/{HOSTILE_USER}")
    page = watched.page
    expect(page.locator("main[data-ready=true]")).to_be_visible()
    no_harm_done(watched)
    keep(page, "hostile-timeline")
    sessions = api.get(f"/v1/users/{HOSTILE_USER}/memories", params={"level": 2}).json()["items"]
    page.goto(f"{live.url}/ui/users/{HOSTILE_USER}/memories/{sessions[0]['id']}")
    expect(page.locator("main[data-ready=true]")).to_be_visible()
    no_harm_done(watched)
    keep(page, "hostile-session")
    leaves = api.get(f"/v1/users/{HOSTILE_USER}/memories", params={"level": 1}).json()["items"]
    shown = ""
    for leaf in leaves:
        page.goto(f"{live.url}/ui/users/{HOSTILE_USER}/memories/{leaf['id']}")
        expect(page.locator("main[data-ready=true]")).to_be_visible()
        no_harm_done(watched)
        shown += page.locator("blockquote.user-text").inner_text()
    # The markup is there, as text; the long word and both scripts survive whole.
    assert "<script>window.__pwned=2</script>" in shown
    assert LONG_WORD in shown
    assert "שלום" in shown and "مرحبا" in shown
    page.goto(f"{live.url}/ui/users/{HOSTILE_USER}/recall")
    page.fill("#query", "pottery band tour coffee")
    page.click("#recall button[type=submit]")
    expect(page.locator("#recall-result[data-ready=true]")).to_be_visible(timeout=30_000)
    no_harm_done(watched)
    assert watched.errors == []
