"""HiredisPackedConnection sends the very bytes redis-py's own packing sends."""

from __future__ import annotations

from typing import Any

import pytest
from redis.asyncio.connection import Connection
from redis.exceptions import DataError

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
    ("EVALSHA", "758a90fe", 3, "ms:{ana}:a", "ms:{ana}:b", "ms:{ana}:c", b"\x00rev"),
    ("INCRBY", "k", -5),
    ("SET", "k", 12345678901234567890),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: str(c[0]))
def test_the_bytes_on_the_wire_are_redis_pys(command: tuple[Any, ...]) -> None:
    ours = b"".join(bytes(p) for p in HiredisPackedConnection().pack_command(*command))
    theirs = b"".join(bytes(p) for p in Connection().pack_command(*command))
    assert ours == theirs


def test_plain_commands_are_packed_in_one_piece() -> None:
    assert len(HiredisPackedConnection().pack_command("MGET", "a", "b")) == 1
    assert len(HiredisPackedConnection().pack_command("ZRANGE", "k", 0, -1)) == 1


def test_a_bool_is_refused_as_by_redis_py() -> None:
    with pytest.raises(DataError):
        Connection().pack_command("SET", "k", True)
    with pytest.raises(DataError):
        HiredisPackedConnection().pack_command("SET", "k", True)


def test_text_that_is_not_utf8_encodable_fails_as_with_redis_py() -> None:
    with pytest.raises(UnicodeEncodeError):
        Connection().pack_command("SET", "k", "\ud800")
    with pytest.raises(UnicodeEncodeError):
        HiredisPackedConnection().pack_command("SET", "k", "\ud800")


def test_a_new_connection_names_the_driver_as_redis_py_does_without_reading_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from importlib import metadata

    theirs = Connection().driver_info
    HiredisPackedConnection()  # the version is read once per process, here at the latest
    monkeypatch.setattr(metadata, "version", lambda name: pytest.fail("read metadata"))
    ours = [HiredisPackedConnection().driver_info for _ in range(3)]
    for info in ours:
        assert info is not None and theirs is not None
        assert (info.formatted_name, info.lib_version) == (
            theirs.formatted_name,
            theirs.lib_version,
        )
    assert ours[0] is not ours[1]  # each its own: redis-py may add upstream drivers to one
    assert HiredisPackedConnection(driver_info=None).driver_info is None  # a caller's own
