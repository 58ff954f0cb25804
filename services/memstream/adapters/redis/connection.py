"""A redis-py asyncio connection that packs commands with hiredis (C).

redis-py's asyncio connection builds each command in a Python loop over its arguments; a
recall's MGETs carried about 170 keys then (about 270 since), and packing them was the
largest single item of its CPU profile after decoding. hiredis (installed with
`redis[hiredis]`, already the reply parser) packs the same bytes in one call; the
synchronous client uses it the same way.
Integers (limits, a script's key count) come out as the same digits from both; commands with
other arguments (floats: scores) keep redis-py's packing, whose number formatting the server
has always seen.

A connection also names redis-py's version to the server (CLIENT SETINFO) without reading
the package's metadata each time: redis-py looks the version up anew for every connection
it opens, which parses the installed METADATA file, and a pool grows by a connection for
each command in flight at once (a burst of recalls opens dozens). The version is read once
per process; what the server is told is the same. And a connection taken from the pool is
checked for unread bytes without a turn of the event loop when nothing is there
(`can_read_destructive`).

    aioredis.from_url(url, connection_class=HiredisPackedConnection)  # redis:// only; a
    # rediss:// or unix:// URL names its own connection class, which takes precedence
"""

from __future__ import annotations

import asyncio
import functools
import select
from collections.abc import Callable
from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import AbstractConnection, Connection
from redis.driver_info import DriverInfo
from redis.utils import get_lib_version

from memstream.adapters.redis.slots import SLOTS

# The types hiredis packs as redis-py would; checked with `map(type, ...)`, whose loop runs in C
# (a generator would resume a Python frame for each key of a recall's MGETs). Exact types: a
# bool (an int) is refused by redis-py, and still goes its way.
_PLAIN_TYPES = frozenset((str, bytes, int))


# The arguments by which a caller names the driver itself; without any, redis-py's default.
_DRIVER_ARGUMENTS = frozenset(("driver_info", "lib_name", "lib_version"))


@functools.cache
def _redis_py_version() -> str:
    return str(get_lib_version())


class HiredisPackedConnection(Connection):
    def __init__(self, **kwargs: Any) -> None:
        if not _DRIVER_ARGUMENTS & kwargs.keys():
            # redis-py's default driver info, with the version it would look up each time.
            kwargs["driver_info"] = DriverInfo(lib_version=_redis_py_version())
        super().__init__(**kwargs)

    async def can_read_destructive(self) -> bool:
        """Whether the connection, taken from the pool for a command, holds unread bytes (a
        reply nobody read: it is then opened again). redis-py finds out with a read under a
        zero timeout, a turn of the event loop and a cancelled read for every command; with
        nothing buffered and nothing readable on the socket (no data, no end, no error) its
        answer is False, given here without the turn. Anything there: its own check."""
        if self._nothing_to_read():
            return False
        return bool(await super().can_read_destructive())

    def _nothing_to_read(self) -> bool:
        reader, writer = self._reader, self._writer
        parsed = getattr(self._parser, "_reader", None)  # hiredis's buffer of reply bytes
        if reader is None or writer is None or reader.at_eof() or not self._socket_is_empty():
            return False  # redis-py's own test of the stream's buffer
        if not isinstance(parsed, hiredis.Reader) or parsed.has_data():
            return False
        sock = writer.get_extra_info("socket")
        if sock is None:
            return False
        readable = select.poll()
        readable.register(sock.fileno(), select.POLLIN | select.POLLPRI)
        return not readable.poll(0)

    def pack_command(self, *args: Any) -> list[bytes]:
        # redis-py splits a first argument holding spaces ("CONFIG GET"); hiredis would not.
        plain = _PLAIN_TYPES.issuperset(map(type, args))
        encoder = self.encoder
        utf8 = encoder.encoding == "utf-8" and encoder.encoding_errors == "strict"
        if plain and utf8 and " " not in str(args[0]):
            return [hiredis.pack_command(args)]
        return super().pack_command(*args)


# Reads one index's keys of many slots on one primary. Only the first key is declared (it
# routes the script); the others come as arguments, which `allow-cross-slot-keys` lets it
# reach when this node serves them (any other is refused). `no-writes`: it only reads.
_EACH_KEY = """#!lua flags=no-writes,allow-cross-slot-keys
local command, count = ARGV[1], tonumber(ARGV[2])
local args = {unpack(ARGV, 3, 2 + count)}
local found = {}
for i = 3 + count, #ARGV do
  local reply = redis.call(command, ARGV[i], unpack(args))
  if #reply > 0 then found[#found + 1] = reply end
end
return found
"""


Argument = str | bytes | int | float


class SlotTransactions(RedisCluster):
    """redis-py's cluster client, plus a plain client per primary for transactions.

    A user's transaction touches one slot, so it can run on a plain client of the primary
    that owns the slot, as on a single primary. redis-py's own cluster transactions are not
    used: its asyncio pipeline runs each command queued in a transaction on a thread with
    an event loop of its own (its queueing API is synchronous), whose connections then
    serve the caller's loop, and which no commit can afford anyway.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._primary_clients: dict[str, aioredis.Redis] = {}
        self._owned_keys: dict[str, list[list[str]]] = {}  # index -> its keys by primary

    async def primary_for(self, key: str) -> aioredis.Redis:
        """A plain client of the primary that owns `key`'s slot now."""
        await self.initialize()  # learns the slots' owners once
        node = self.get_node_from_key(key)
        if node is None:  # only asked of a replica, never here
            raise RuntimeError(f"no primary owns the slot of {key!r}")
        return self._plain_client(node)

    async def primaries(self) -> list[aioredis.Redis]:
        """A plain client of every primary: for what each node does alone (its files)."""
        await self.initialize()
        return [self._plain_client(node) for node in self.get_primaries()]

    def _plain_client(self, node: Any) -> aioredis.Redis:
        client = self._primary_clients.get(node.name)
        if client is None:
            pool = aioredis.ConnectionPool(
                connection_class=node.connection_class,
                max_connections=node.max_connections,
                **node.connection_kwargs,
            )
            client = self._primary_clients[node.name] = aioredis.Redis(connection_pool=pool)
        return client

    async def ask_each_slot(
        self, index: str, key_of: Callable[[int], str], command: str, *args: Argument
    ) -> list[list[bytes]]:
        """`command <key> *args` on every slot's key of `index` (`key_of(slot)`), the replies
        that are not empty.

        One script a primary, over the keys of the slots it owns (a script may reach keys
        of several slots of its own node when it says so): the same reads as a pipeline of
        one command a slot, without encoding and decoding 16,384 commands in Python. Which
        keys go to which primary is kept until the slots move.
        """
        await self.initialize()
        owned = self._owned_keys.get(index)
        if owned is None:
            by_primary: dict[str, list[str]] = {}
            for slot in range(SLOTS):
                primary = self.nodes_manager.slots_cache[slot][0].name
                by_primary.setdefault(primary, []).append(key_of(slot))
            owned = self._owned_keys[index] = list(by_primary.values())

        async def ask(names: list[str]) -> list[list[bytes]]:
            primary = await self.primary_for(names[0])
            # Every argument as text, so hiredis packs the command in one call (connection).
            texts = [a if isinstance(a, str | bytes) else str(a) for a in args]
            script_args = (command, str(len(args)), *texts, *names)
            replies = await primary.execute_command("EVAL", _EACH_KEY, "1", names[0], *script_args)
            return list(replies)

        found = await asyncio.gather(*(ask(names) for names in owned))
        return [reply for replies in found for reply in replies]

    async def slots_moved(self) -> None:
        """Learn the slots' owners again (a command was redirected)."""
        self._owned_keys.clear()
        await self.nodes_manager.initialize()

    async def aclose(self) -> None:
        clients, self._primary_clients = list(self._primary_clients.values()), {}
        for client in clients:
            await client.aclose()
        await super().aclose()


RedisClient = aioredis.Redis | SlotTransactions


def open_client(url: str, *, cluster: bool = False) -> RedisClient:
    """The asyncio client for `url`: on a cluster, redis-py's cluster client (which learns
    the slots' owners from the node `url` names and follows their moves) with plain
    clients of its primaries for the transactions."""
    if cluster:
        client = SlotTransactions.from_url(url, connection_class=HiredisPackedConnection)
        assert isinstance(client, SlotTransactions)  # from_url builds the class it is called on
        return client
    return aioredis.from_url(url, connection_class=HiredisPackedConnection)


async def open_pool(client: RedisClient, connections: int) -> None:
    """Open `connections` connections of a single primary's client now, so that a burst of
    up to that many commands at once opens none (each a connect and a handshake on the event
    loop). The pool stays unbounded: beyond those, redis-py opens a connection more for each
    command in flight. A bounded pool, where a command waits for a free connection, made a
    burst of recalls queue behind a few dozen connections and collapsed
    (docs/read-your-writes.md). A cluster's client opens its connections as it goes."""
    pool = getattr(client, "connection_pool", None)
    if pool is None or connections <= 0:
        return
    # A server not up yet is no error here: the connections then open as commands need them.
    held = await asyncio.gather(
        *(pool.get_connection() for _ in range(connections)), return_exceptions=True
    )
    for connection in held:
        if isinstance(connection, AbstractConnection):
            await pool.release(connection)
