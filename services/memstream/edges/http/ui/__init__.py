"""The memory explorer: static pages under `/ui` on the recall API's own app and port.

    app.include_router(ui_router())

Every page is an HTML shell (one per view, each at a stable address) and a few ES modules
that read the JSON API in the browser with the bearer key the person signed in with. The
server renders no data into the pages, so nothing a user said can reach the markup from
here; the modules write text through the DOM only. Every answer under `/ui` carries a strict
Content-Security-Policy (no inline script or style, nothing from another origin).
docs/explorer.md says why it is built this way.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path
from fastapi.responses import RedirectResponse, Response

from memstream.edges.http.ui.headers import CONTENT_SECURITY_POLICY, UiHeaders

__all__ = ["CONTENT_SECURITY_POLICY", "PAGES", "UiHeaders", "ui_router"]

# Page shells by view; the modules read the ids from the address.
PAGES = ("signin", "users", "timeline", "node", "recall")
ASSET_NAME = re.compile(r"^[a-z0-9-]+\.(js|css)$")
MEDIA_TYPES = {"html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8"}
MEDIA_TYPES["css"] = "text/css; charset=utf-8"
# The shells hold no data, but a fresh copy after an upgrade beats a stale module.
NO_CACHE = {"Cache-Control": "no-cache"}

# Bounded like the API's ids; what they hold is the API's to judge, not the shell's.
Id = Annotated[str, Path(min_length=1, max_length=200)]


@cache
def _packaged(folder: str, name: str) -> bytes | None:
    """A file shipped in this package (read once), or None."""
    resource = files(__package__).joinpath(folder, name)
    return resource.read_bytes() if resource.is_file() else None


def _file(folder: str, name: str) -> Response:
    body = _packaged(folder, name)
    if body is None:
        raise HTTPException(status_code=404, detail="no such file")
    media_type = MEDIA_TYPES[name.rsplit(".", 1)[1]]
    return Response(body, media_type=media_type, headers=NO_CACHE)


def _page(view: str) -> Response:
    return _file("pages", f"{view}.html")


def ui_router() -> APIRouter:
    """The explorer's routes (left out of the OpenAPI spec: they serve files, not data)."""
    router = APIRouter(prefix="/ui", include_in_schema=False)

    @router.get("")
    async def home() -> RedirectResponse:
        return RedirectResponse("/ui/")

    @router.get("/")
    async def sign_in() -> Response:
        return _page("signin")

    @router.get("/users")
    async def users() -> Response:
        return _page("users")

    @router.get("/users/{user_id}")
    async def timeline(user_id: Id) -> Response:
        return _page("timeline")

    @router.get("/users/{user_id}/memories/{memory_id}")
    async def node(user_id: Id, memory_id: Id) -> Response:
        return _page("node")

    @router.get("/users/{user_id}/messages/{message_id}")
    async def message(user_id: Id, message_id: Id) -> Response:
        # The node page finds the exchange (L1) that holds the message, then shows it.
        return _page("node")

    @router.get("/users/{user_id}/recall")
    async def recall(user_id: Id) -> Response:
        return _page("recall")

    @router.get("/static/{name}")
    async def asset(name: str) -> Response:
        if not ASSET_NAME.fullmatch(name):
            raise HTTPException(status_code=404, detail="no such file")
        return _file("static", name)

    return router
