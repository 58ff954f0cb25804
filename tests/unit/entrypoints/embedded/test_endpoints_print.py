"""What `memstream up` prints once the stack is up: the explorer's address among the rest."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from memstream.entrypoints.embedded.commands import print_endpoints
from memstream.entrypoints.embedded.stack import Endpoints
from memstream.settings import Settings


def test_up_prints_the_explorer_url_beside_the_api() -> None:
    settings = Settings(api_host="127.0.0.1", api_port=8123, recall_auth_disabled=True)
    endpoints = Endpoints("127.0.0.1:9092", "redis://127.0.0.1:6379", "", None, frozenset())
    stack = SimpleNamespace(endpoints=endpoints, topics=[], settings=lambda: settings)
    out = io.StringIO()
    print_endpoints(stack, Console(file=out, width=200))  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    assert "MEMSTREAM_RECALL_URL=http://127.0.0.1:8123" in lines
    assert "Memory explorer: http://127.0.0.1:8123/ui/" in lines
