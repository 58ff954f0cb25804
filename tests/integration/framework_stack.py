"""Helpers for the framework adapters' tests: producer options for the embedded broker, and
waiting on the recall API for what a conversation in real time (timestamps of now) leaves.

`wait_caught_up` waits for every window to close, which for messages of today means
midnight; these wait only for what the tests read: the exchanges (L1), and forgetting."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from memstream.client import AsyncRecallClient, Memory

from .sdk_stack import Served

TIMEOUT_S = 120.0
POLL_S = 0.2


def producer_options(stack: Served) -> dict[str, Any]:
    # The embedded broker (Tansu) hands out no producer ids; the workers dedup by event id.
    return {"topic_prefix": stack.settings.broker.topic_prefix, "idempotent": False}


async def _until(check: Callable[[], Any], what: str) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT_S
    while loop.time() < deadline:
        if found := await check():
            return found
        await asyncio.sleep(POLL_S)
    raise TimeoutError(f"{what} within {TIMEOUT_S:.0f} s")


async def wait_for_leaves(
    client: AsyncRecallClient, user_id: str, sessions: set[str]
) -> list[Memory]:
    """The user's exchanges (L1), once every session named has one."""

    async def leaves() -> list[Memory] | None:
        page = await client.memories(user_id, level=1, limit=500)
        return page.items if sessions <= {m.session_id for m in page.items} else None

    found: list[Memory] = await _until(leaves, f"no exchange of {sorted(sessions)}")
    return found


async def wait_forgotten(client: AsyncRecallClient, user_id: str, message_id: str) -> None:
    """Until no memory of the user cites the message any more."""

    async def gone() -> bool:
        page = await client.memories(user_id, limit=500)
        return not any(message_id in m.source_ids for m in page.items)

    await _until(gone, f"message {message_id} is still cited")
