"""A redis-py asyncio connection that packs commands with hiredis (C).

redis-py's asyncio connection builds each command in a Python loop over its arguments; a
recall's MGETs carried about 170 keys then (about 270 since), and packing them was the
largest single item of its CPU profile after decoding. hiredis (installed with
`redis[hiredis]`, already the reply parser) packs the same bytes in one call; the
synchronous client uses it the same way.
Commands with other than str and bytes arguments (numbers: scores, limits) keep redis-py's
packing, whose number formatting the server has always seen.

    aioredis.from_url(url, connection_class=HiredisPackedConnection)  # redis:// only; a
    # rediss:// or unix:// URL names its own connection class, which takes precedence
"""

from __future__ import annotations

from typing import Any

import hiredis
from redis.asyncio.connection import Connection


class HiredisPackedConnection(Connection):
    def pack_command(self, *args: Any) -> list[bytes]:
        # redis-py splits a first argument holding spaces ("CONFIG GET"); hiredis would not.
        plain = all(type(a) is str or type(a) is bytes for a in args)
        encoder = self.encoder
        utf8 = encoder.encoding == "utf-8" and encoder.encoding_errors == "strict"
        if plain and utf8 and " " not in str(args[0]):
            return [hiredis.pack_command(args)]
        return super().pack_command(*args)
