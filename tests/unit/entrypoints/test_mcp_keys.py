"""The MCP server over HTTP never serves a request without a key, `--user-id` or not."""

from __future__ import annotations

import json

import httpx
import pytest
from starlette.types import Receive, Scope, Send
from typer.testing import CliRunner

from memstream.entrypoints.cli import app
from memstream.entrypoints.mcp_server import USER_SCOPE_KEY, KeyAuth, McpConfig, http_session_keys

KEYS = {"ann": "ann-key", "bob": "bob-key"}


def _config(user_id: str = "", user_keys: dict[str, str] | None = None) -> McpConfig:
    return McpConfig(
        api_url="http://127.0.0.1:1", api_key=None, kafka_bootstrap="127.0.0.1:1",
        user_id=user_id, user_keys=user_keys or {},
    )  # fmt: skip


async def _whose(scope: Scope, receive: Receive, send: Send) -> None:
    user = scope["state"][USER_SCOPE_KEY].encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": user})


async def _ask(keys: dict[str, str], bearer: str | None) -> httpx.Response:
    transport = httpx.ASGITransport(app=KeyAuth(_whose, keys))
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    async with httpx.AsyncClient(transport=transport, base_url="http://mcp") as client:
        return await client.post("/mcp", headers=headers)


@pytest.mark.parametrize("user_id", ["", "ann"])
def test_over_http_without_keys_the_server_refuses_to_start(user_id: str) -> None:
    with pytest.raises(ValueError, match="only sessions with a key"):
        http_session_keys(_config(user_id))


def test_a_user_id_without_its_key_is_refused_and_with_it_only_its_key_serves() -> None:
    with pytest.raises(ValueError, match="no key in MEMSTREAM_MCP_USER_KEYS"):
        http_session_keys(_config("carol", KEYS))
    assert http_session_keys(_config("ann", KEYS)) == {"ann": "ann-key"}
    assert http_session_keys(_config("", KEYS)) == KEYS


@pytest.mark.parametrize("bearer", [None, "", "nope", "bob-key"])
async def test_with_user_id_a_request_without_its_key_gets_401(bearer: str | None) -> None:
    reply = await _ask(dict(http_session_keys(_config("ann", KEYS))), bearer)
    assert reply.status_code == 401 and reply.headers["www-authenticate"] == "Bearer"


async def test_a_session_key_names_its_user() -> None:
    reply = await _ask(KEYS, "bob-key")
    assert (reply.status_code, reply.text) == (200, "bob")


def test_the_command_exits_with_the_reason_instead_of_serving() -> None:
    env = {"MEMSTREAM_KAFKA_BOOTSTRAP": "127.0.0.1:1", "MEMSTREAM_MCP_USER_KEYS": json.dumps({})}
    result = CliRunner().invoke(app, ["mcp", "--transport", "http", "--user-id", "ann"], env=env)
    assert result.exit_code == 2
    assert "only sessions with a key" in result.output
