"""Forgetting users whose ids are glob patterns, through the broker and the workers (#14).

Six users are built through the real broker, Faust workers, Redis and Qdrant: "a*", "a?",
"[a]" and "a\\" (each matches another id as a Redis glob pattern: "a*" and "a?" match "ab",
"[a]" matches "a"), and "a" and "ab". The first four are forgotten by `forget.v1` on the
turns topic, as the API publishes it. Afterwards each of them keeps only its tombstone, in
Redis and no point in Qdrant, and "a" and "ab" keep every key and point they had.

The user-id pattern (schemas and the API) allows `*`, `?`, `[`, `]` and `\\`; it refuses
whitespace, `{` and `}` (they would break the Redis hash tag), `/` and control characters,
so those cannot be tested here: no event with them reaches the workers.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memstream.bootstrap import Container, connect
from memstream.contracts.codec import encode_forget
from memstream.contracts.records import Outbound
from memstream.domain.models import Level
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.settings import Settings

pytestmark = pytest.mark.integration

FORGOTTEN = ["a*", "a?", "[a]", "a\\"]
KEPT = ["a", "ab"]
START = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)


def conversation(user: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for seq, (role, text) in enumerate(
        [("user", f"{user} plants tomatoes."), ("assistant", "Tomatoes like sun.")]
    ):
        events.append(
            {
                "type": "turn.v1",
                "event_id": f"{user}-{seq}",
                "user_id": user,
                "session_id": "s1",
                "seq": seq,
                "speaker": "Ana" if role == "user" else "Bot",
                "role": role,
                "text": text,
                "ts": (START + timedelta(minutes=seq)).isoformat(),
            }
        )
    end = (START + timedelta(minutes=5)).isoformat()
    events.append({"type": "session_end.v1", "user_id": user, "session_id": "s1", "ts": end})
    return events


async def keys_of(c: Container, user: str) -> list[str]:
    """The user's key suffixes, by an exact prefix test (so the check cannot mix users)."""
    prefix = f"{c.settings.redis.namespace}:{{{user}}}:"
    found = [k.decode() async for k in c.tree._r.scan_iter(count=1000)]  # type: ignore[attr-defined]
    return sorted(k.removeprefix(prefix) for k in found if k.startswith(prefix))


async def test_forgetting_glob_like_ids_through_the_workers_touches_no_other_user(
    settings: Settings, tmp_path: Path
) -> None:
    local = settings.model_copy(
        update={"data_dir": tmp_path, "clock_grace_s": 0.0, "clock_interval_s": 0.5}
    )
    path = tmp_path / "users.jsonl"
    path.write_text(
        "".join(json.dumps(e) + "\n" for u in FORGOTTEN + KEPT for e in conversation(u))
    )
    async with (
        connect(local, prioritise_online=True) as c,
        run_parts(c, WRITE_PATH, fast_rebalance=True),
    ):
        await publish_file(
            path, catalog=c.catalog, bootstrap=local.broker.bootstrap, show_progress=False
        )
        await wait_caught_up(c, FORGOTTEN + KEPT, timeout_s=120)
        before = {u: await keys_of(c, u) for u in FORGOTTEN + KEPT}
        points = {u: await c.index.count(u) for u in FORGOTTEN + KEPT}
        assert all(before[u] and points[u] == 5 for u in before)  # L1 to L5 each
        assert [await c.tree.count(u, Level.SEGMENT) for u in before] == [1] * len(before)

        await c.publisher.publish(
            [Outbound(c.catalog.turns.name, u, encode_forget(u)) for u in FORGOTTEN]
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        for user in FORGOTTEN:
            while await c.tree.tombstone(user) is None:
                assert loop.time() < deadline, f"{user!r} was not forgotten"
                await asyncio.sleep(0.1)
        await wait_caught_up(c, KEPT, timeout_s=60)

        for user in FORGOTTEN:
            assert await keys_of(c, user) == ["tombstone"], user
            assert await c.index.count(user) == 0, user
        for user in KEPT:
            assert await keys_of(c, user) == before[user], user
            assert await c.index.count(user) == points[user], user
