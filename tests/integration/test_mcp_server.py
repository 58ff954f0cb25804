"""`memstream mcp` in its own process, driven by the MCP SDK's client over stdio and HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from memstream.entrypoints.embedded.processes import free_port
from memstream.settings import Settings

from .sdk_stack import API_KEY, Served, serving_everything

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"recall", "remember", "profile", "facts", "forget"}
CLI = "from memstream.entrypoints.cli import app; app()"


def _env(stack: Served) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSTREAM_", "OTEL_"))}
    env |= {
        "PYTHONPATH": str(ROOT / "services"),
        "MEMSTREAM_KAFKA_BOOTSTRAP": stack.settings.broker.bootstrap,
        "MEMSTREAM_TOPIC_PREFIX": stack.settings.broker.topic_prefix,
        "MEMSTREAM_RECALL_API_KEYS": json.dumps([API_KEY]),
        "MEMSTREAM_MCP_USER_KEYS": json.dumps({"mcp-bob": "bob-key"}),
    }
    return env


def _args(stack: Served, *extra: str) -> list[str]:
    return ["-c", CLI, "mcp", "--api-url", stack.url, "--no-idempotent", *extra]


async def _converse(client: Client, user_says: str, bot_says: str) -> dict[str, Any]:
    mine = await client.call_tool("remember", {"text": user_says, "speaker": "User"})
    await client.call_tool("remember", {"text": bot_says, "role": "assistant", "speaker": "Bot"})
    assert not mine.is_error, mine.content
    assert mine.structured_content is not None
    return mine.structured_content


async def _recalled(client: Client, query: str, word: str, timeout_s: float = 60) -> Any:
    """Call recall until a memory holding `word` comes back (the L1 is written async)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        result = await client.call_tool("recall", {"query": query})
        assert not result.is_error, result.content
        if any(word in m["text"] for m in result.structured_content["memories"]):
            return result
        if loop.time() > deadline:
            raise TimeoutError(f"no memory with {word!r} after {timeout_s:.0f} s")
        await asyncio.sleep(0.5)


async def _fact_said(client: Client, word: str, timeout_s: float = 60) -> str:
    """Call facts until one holding `word` comes back (facts are written with the L1)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        result = await client.call_tool("facts", {})
        assert not result.is_error, result.content
        text: str = result.content[0].text
        if word in text:
            return text
        if loop.time() > deadline:
            raise TimeoutError(f"no fact with {word!r} after {timeout_s:.0f} s: {text}")
        await asyncio.sleep(0.5)


@asynccontextmanager
async def _http_server(stack: Served) -> AsyncIterator[str]:
    port = free_port()
    log = stack.settings.data_dir / "mcp-http.log"  # a file: a full pipe would stall it
    with log.open("wb") as errors:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            *_args(stack, "--transport", "http", "--port", str(port)),
            env=_env(stack),
            stderr=errors,
        )
    try:
        await _until_listening(port, proc, log, timeout_s=60)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 20)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


async def _until_listening(
    port: int, proc: asyncio.subprocess.Process, log: Path, timeout_s: float
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not _accepts(port):
        if proc.returncode is not None:
            raise RuntimeError(f"memstream mcp exited: {await asyncio.to_thread(log.read_text)}")
        if loop.time() > deadline:
            raise TimeoutError("memstream mcp did not listen")
        await asyncio.sleep(0.2)


def _http_client(url: str, key: str | None) -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)))


async def test_mcp_over_stdio_and_http(settings: Settings, tmp_path: Path) -> None:
    async with serving_everything(settings, tmp_path) as stack:
        stdio = StdioServerParameters(
            command=sys.executable, args=_args(stack, "--user-id", "mcp-ann"), env=_env(stack)
        )
        async with Client(stdio) as ann:
            tools = {tool.name for tool in (await ann.list_tools()).tools}
            stored = await _converse(
                ann, "My sister Ines moves to Lisbon in June.", "Lisbon is lovely in June!"
            )
            ann_recall = await _recalled(ann, "Where is Ines moving?", "Lisbon")
            expired = await ann.call_tool(
                "remember",
                {"text": "My locker code is 4711.", "expires_at": "2001-01-01T00:00:00Z"},
            )
            # The same user's turns are consumed in order: once the next one is recallable,
            # the expired one has been handled (and stored nowhere).
            await _converse(ann, "I bought a red kayak.", "A kayak, how fun!")
            await _recalled(ann, "What did I buy?", "kayak")
            on_locker = await ann.call_tool("recall", {"query": "What is my locker code?"})
            await _converse(ann, "We live in Porto, by the river.", "Porto is beautiful!")
            ann_facts = await _fact_said(ann, "Porto")
            on_olga = await ann.call_tool("facts", {"subject": "Olga"})
            bad_time = await ann.call_tool("facts", {"at": "yesterday"})

        async with _http_server(stack) as url:
            async with _http_client(url, "bob-key") as bob:
                http_tools = {tool.name for tool in (await bob.list_tools()).tools}
                await _converse(bob, "I started learning the cello.", "The cello, wonderful!")
                bob_recall = await _recalled(bob, "What instrument?", "cello")
                bob_on_ines = await bob.call_tool("recall", {"query": "Where is Ines moving?"})
                bob_facts = await bob.call_tool("facts", {})
            async with httpx.AsyncClient() as raw:
                anonymous = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            with pytest.raises(Exception):  # noqa: B017  the SDK wraps the 401 in task groups
                await asyncio.wait_for(_list_tools(_http_client(url, "not-a-key")), 30)

    assert tools == TOOLS and http_tools == TOOLS
    assert not expired.is_error, expired.content
    assert all("4711" not in m["text"] for m in on_locker.structured_content["memories"])
    assert stored["seq"] == 0 and stored["session_id"].startswith("mcp-")
    text = ann_recall.content[0].text
    assert "Lisbon" in text and text.startswith("What you remember")
    assert {m["user_id"] for m in ann_recall.structured_content["memories"]} == {"mcp-ann"}
    assert stored["event_id"] in {
        s for m in ann_recall.structured_content["memories"] for s in m["source_ids"]
    }
    assert {m["user_id"] for m in bob_recall.structured_content["memories"]} == {"mcp-bob"}
    # Bob's key reaches Bob's memories only, whatever he asks.
    assert all("Lisbon" not in m["text"] for m in bob_on_ines.structured_content["memories"])
    assert anonymous.status_code == 401
    # The facts tool: what holds now, with since when; nothing of another user's.
    assert "User lives in Porto (since " in ann_facts
    assert on_olga.content[0].text == "Nothing is known about Olga."
    assert bad_time.is_error
    assert not bob_facts.is_error and "Porto" not in bob_facts.content[0].text


async def _list_tools(client: Client) -> None:
    async with client:
        await client.list_tools()


async def test_remember_then_recall_in_one_agent_turn_over_mcp(
    settings: Settings, tmp_path: Path
) -> None:
    """No polling: `recall` and `facts` wait for the message `remember` just published
    (flushed, so it is written before any reply)."""
    async with serving_everything(settings, tmp_path) as stack:
        stdio = StdioServerParameters(
            command=sys.executable, args=_args(stack, "--user-id", "mcp-carla"), env=_env(stack)
        )
        async with Client(stdio) as carla:
            said = await carla.call_tool(
                "remember", {"text": "Remember: my locker code is 4711.", "flush": True}
            )
            recalled = await carla.call_tool("recall", {"query": "What is my locker code?"})
            await carla.call_tool(
                "remember", {"text": "We live in Porto, by the river.", "flush": True}
            )
            known = await carla.call_tool("facts", {})
            await carla.call_tool(
                "remember", {"text": "Big news: we move to Leeds next month.", "flush": True}
            )
            planned = await carla.call_tool("facts", {})
    assert not said.is_error and said.structured_content is not None
    assert said.structured_content["write_token"].startswith("mst1.")
    assert not recalled.is_error and recalled.structured_content is not None
    assert recalled.structured_content["pending"] is False
    assert any("4711" in m["text"] for m in recalled.structured_content["memories"])
    # The facts tool waits for the last message remembered too.
    assert not known.is_error and "Porto" in known.content[0].text
    # A move told to begin next month is planned, not holding: Porto holds until then.
    assert not planned.is_error, planned.content
    lines = planned.content[0].text.splitlines()
    assert any(line.startswith("- Planned from ") and "Leeds" in line for line in lines), lines
    assert any("Porto" in line and "Leeds" not in line for line in lines), lines
