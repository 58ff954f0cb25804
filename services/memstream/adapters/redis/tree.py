"""The tree store in Redis: one class for every role of `memstream.ports.tree`.

Its parts, one module each: `keys` (the table of every key, and the functions that build
them), `base` (the client, the clock and the guarded transaction), `nodes` (the tree's nodes),
`segmenter_state` (the segmenter's load and commit, markers, outboxes), `knowledge` (the
facts and entity surfaces of the L1s, written in that commit) and `users` (the indexes
across users, and forgetting), `progress` (the segmenter's committed offsets), `overflow`
(the records a tenant's share sent to the overflow topic), `backup`
(the export's paged reads), `restore` (the tree written back from the index), `datakeys`
(the users' data keys, what their words on the topics are sealed under), `persistence`
(Redis's files rewritten after a forget), `degraded_index` (each user's degraded index filled
from the markers of older versions).
"""

from __future__ import annotations

from memstream.adapters.redis.backup import RedisBackupReads
from memstream.adapters.redis.datakeys import RedisDataKeys
from memstream.adapters.redis.degraded_index import RedisDegradedIndex
from memstream.adapters.redis.knowledge import RedisKnowledge
from memstream.adapters.redis.overflow import RedisOverflow
from memstream.adapters.redis.persistence import RedisPersistence
from memstream.adapters.redis.progress import RedisProgress
from memstream.adapters.redis.restore import RedisRestore
from memstream.adapters.redis.segmenter_state import RedisSegmenterState
from memstream.adapters.redis.users import RedisUsers


class RedisTree(
    RedisSegmenterState,
    RedisUsers,
    RedisKnowledge,
    RedisProgress,
    RedisOverflow,
    RedisBackupReads,
    RedisRestore,
    RedisDataKeys,
    RedisPersistence,
    RedisDegradedIndex,
):
    """Implements `memstream.ports.TreeStore`: tree links, time indexes, window state,
    idempotency markers, outboxes, and the knowledge committed with the L1s."""
