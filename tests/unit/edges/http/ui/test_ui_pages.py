"""The explorer's pages as the server hands them out: one shell per view at a stable
address, a strict CSP on every answer under /ui, no inline script or style, data written
through the DOM only, and every file shipped in the wheel."""

from __future__ import annotations

import re
import tomllib
from fnmatch import fnmatch
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

from memstream.edges.http.ui import CONTENT_SECURITY_POLICY, PAGES

from .stub_api import stub_app

ROOT = Path(__file__).resolve().parents[5]
PACKAGE = ROOT / "services" / "memstream"
UI = PACKAGE / "edges" / "http" / "ui"


@pytest.fixture
async def client() -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=stub_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


@pytest.mark.parametrize(
    ("path", "view"),
    [
        ("/ui/", "signin"),
        ("/ui/users", "users"),
        ("/ui/users/ana", "timeline"),
        ("/ui/users/ana/memories/s0", "node"),
        ("/ui/users/ana/messages/d1", "node"),
        ("/ui/users/ana/recall", "recall"),
    ],
)
async def test_every_view_has_its_address_and_a_strict_policy(
    client: httpx.AsyncClient, path: str, view: str
) -> None:
    reply = await client.get(path)
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/html")
    assert reply.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert reply.headers["x-content-type-options"] == "nosniff"
    assert f'data-view="{view}"' in reply.text


@pytest.mark.parametrize("path", ["/ui", "/ui/nowhere", "/ui/static/none.js", "/ui/static/..%5Cx"])
async def test_errors_and_redirects_under_ui_carry_the_policy_too(
    client: httpx.AsyncClient, path: str
) -> None:
    reply = await client.get(path)
    assert reply.status_code in (307, 404)
    assert reply.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


async def test_the_api_answers_without_the_ui_policy(client: httpx.AsyncClient) -> None:
    reply = await client.get("/v1/users", headers={"Authorization": "Bearer stub-key"})
    assert reply.status_code == 200
    assert "content-security-policy" not in reply.headers


async def test_assets_are_served_with_their_types(client: httpx.AsyncClient) -> None:
    script = await client.get("/ui/static/timeline.js")
    assert script.headers["content-type"].startswith("text/javascript")
    style = await client.get("/ui/static/explorer.css")
    assert style.headers["content-type"].startswith("text/css")


class _Inline(HTMLParser):
    """Collects what a strict CSP would block: inline scripts, style elements and attributes,
    event-handler attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.scripts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        if tag == "script":
            src = dict(attrs).get("src") or ""
            self.scripts.append(src)
            if not src.startswith("/ui/static/"):
                self.found.append("inline script")
        if tag == "style" or "style" in names:
            self.found.append("inline style")
        self.found += [f"handler {n}" for n in names if n.startswith("on")]


@pytest.mark.parametrize("view", PAGES)
def test_pages_hold_no_inline_script_or_style(view: str) -> None:
    parser = _Inline()
    parser.feed((UI / "pages" / f"{view}.html").read_text())
    assert parser.found == []
    assert parser.scripts == [f"/ui/static/{view}.js"]


def test_scripts_write_data_only_as_text() -> None:
    """No HTML parsing of strings anywhere in the modules, and nothing from another origin."""
    sinks = re.compile(
        r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function"
    )
    for script in (UI / "static").glob("*.js"):
        text = script.read_text()
        assert not sinks.search(text), script.name
        assert not re.search(r"https?://", text), script.name
        assert "localStorage" not in text, script.name


def test_the_wheel_ships_every_ui_file() -> None:
    """pyproject's package data covers each page, module and stylesheet of the explorer."""
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["memstream"]
    files = [
        p
        for p in UI.rglob("*")
        if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts
    ]
    assert len(files) >= len(PAGES) * 2
    for path in files:
        relative = path.relative_to(PACKAGE).as_posix()
        assert any(fnmatch(relative, pattern) for pattern in patterns), relative
