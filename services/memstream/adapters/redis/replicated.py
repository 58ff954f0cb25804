"""A transaction that returns only once the primary's replicas hold its writes (`WAIT`), so a
failover cannot take away a commit the caller has moved past (docs/cluster.md, Failover).

WAIT counts the replicas that acknowledged the writes of the connection it is sent on, so it
follows the EXEC on the same connection. redis-py's pipeline gives that connection back to its
pool as soon as `execute` ends, hence the hook into the transaction itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.asyncio.connection import Connection

# How long a connection trusts what ROLE said of its primary's replicas: a replica that joins
# a primary left alone is waited for within this long.
REPLICAS_KNOWN_S = 1.0
# connection -> (replicas its primary had connected, when ROLE said so)
_replicas_seen: WeakKeyDictionary[Connection, tuple[int, float]] = WeakKeyDictionary()


class ReplicatedTransaction(Pipeline):
    """A transaction (MULTI/EXEC) that returns only once `replicas` replicas hold its writes,
    or as many as the primary has connected, if fewer.

    A WAIT that runs out first is reported (`on_lag`) and sent again: the commit does not
    return before its writes are safe from a failover, and a primary that dies meanwhile
    fails it with a connection error, which the caller takes as an outage and runs again
    elsewhere. A primary with no replica connected (the one a failover promoted, until a
    replica joins it) has nobody to fail over to: its commits do not wait.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        replicas: int,
        timeout_ms: int,
        on_lag: Callable[[int], None],
    ) -> None:
        super().__init__(client.connection_pool, client.response_callbacks, True, None)
        self._replicas = replicas
        self._timeout_ms = timeout_ms
        self._on_lag = on_lag

    async def _execute_transaction(
        self, connection: Connection, commands: Any, raise_on_error: bool
    ) -> list[Any]:
        response: list[Any] = await super()._execute_transaction(
            connection, commands, raise_on_error
        )
        fresh = False
        while True:
            wanted = min(self._replicas, await _connected_replicas(connection, fresh=fresh))
            if wanted == 0:
                return response
            await connection.send_command("WAIT", str(wanted), str(self._timeout_ms))
            acknowledged = int(await connection.read_response())
            if acknowledged >= wanted:
                return response
            self._on_lag(acknowledged)
            fresh = True  # a replica may have gone: ask again before waiting again


async def _connected_replicas(connection: Connection, *, fresh: bool) -> int:
    """How many replicas the connection's primary has connected, asked (ROLE) at most once
    every `REPLICAS_KNOWN_S` unless `fresh`."""
    known = _replicas_seen.get(connection)
    now = time.monotonic()
    if known is None or fresh or now - known[1] > REPLICAS_KNOWN_S:
        await connection.send_command("ROLE")
        role = await connection.read_response()  # [b"master", offset, [[host, port, offset]]]
        known = (len(role[2]) if role[0] == b"master" else 0, now)
        _replicas_seen[connection] = known
    return known[0]
