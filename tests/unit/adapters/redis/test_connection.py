"""HiredisPackedConnection sends the very bytes redis-py's own packing sends."""

from __future__ import annotations

from typing import Any

import pytest
from redis.asyncio.connection import Connection

from memstream.adapters.redis.connection import HiredisPackedConnection

COMMANDS: list[tuple[Any, ...]] = [
    ("MGET", *(f"ms:{{ana}}:node:{i}" for i in range(60))),
    ("GET", "ms:{ana}:state"),
    ("SET", "ms:{zoë}:state", '{"text": "café ☕"}'),
    ("SET", b"raw-key", b"\x00\xff binary"),
    ("SET", "big", "x" * 20_000),  # over redis-py's buffer cutoff: it sends it in pieces
    ("CONFIG GET", "maxmemory"),  # redis-py splits a first argument with spaces
    ("ZADD", "ms:due", 1714550400.25, "ana"),  # numbers: redis-py's formatting
    ("ZREVRANGEBYSCORE", "ms:{ana}:level:5", "+inf", "-inf", "LIMIT", 0, 1),
    ("EXPIRE", "k", 60),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: str(c[0]))
def test_the_bytes_on_the_wire_are_redis_pys(command: tuple[Any, ...]) -> None:
    ours = b"".join(bytes(p) for p in HiredisPackedConnection().pack_command(*command))
    theirs = b"".join(bytes(p) for p in Connection().pack_command(*command))
    assert ours == theirs


def test_plain_commands_are_packed_in_one_piece() -> None:
    assert len(HiredisPackedConnection().pack_command("MGET", "a", "b")) == 1


def test_text_that_is_not_utf8_encodable_fails_as_with_redis_py() -> None:
    with pytest.raises(UnicodeEncodeError):
        Connection().pack_command("SET", "k", "\ud800")
    with pytest.raises(UnicodeEncodeError):
        HiredisPackedConnection().pack_command("SET", "k", "\ud800")
