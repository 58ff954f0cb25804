"""The window state's remembered closed sessions and window keys, kept beside it in Redis
(`domain.remembered`): a hash of sessions by id, a sorted set of their last message times
(the oldest are the ones evicted) and a sorted set of closed window keys by their place (the
newest `MAX_REMEMBERED_CLOSED` are kept). A step reads only the entries it asks for, and
writes what it changed in its own transaction."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import text
from memstream.contracts.codec import decode_session, encode_session
from memstream.domain.remembered import Remembered, RememberedChanges
from memstream.domain.windows import MAX_REMEMBERED_CLOSED

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _score(at: datetime) -> int:
    """A time as whole microseconds: exact in a sorted set's score (below 2**53)."""
    return (at - _EPOCH) // _MICROSECOND


def queue_remembered_reads(
    pipe: Any, prefix: str, sessions: Iterable[str], closed: Iterable[str], oldest: int
) -> None:
    """Queue the reads of the sessions and keys asked, the oldest `oldest` and the count:
    always four commands, whose replies `remembered_from` reads."""
    ids, window_keys = list(sessions), list(closed)
    ages = prefix + keys.SESSION_AGES
    # (A read with nothing to ask still holds its place; no id or key is empty.)
    pipe.hmget(prefix + keys.SESSIONS, ids or [""])
    pipe.zmscore(prefix + keys.CLOSED, window_keys or [""])
    if oldest:
        pipe.zrange(ages, 0, oldest - 1, withscores=True)
    else:
        pipe.zcard(ages)
    pipe.zcard(ages)


def remembered_from(
    sessions: Iterable[str], closed: Iterable[str], replies: Sequence[Any]
) -> Remembered:
    ids, window_keys = list(sessions), list(closed)
    found, places, oldest, count = replies
    return Remembered(
        sessions={
            sid: decode_session(json.loads(raw)) if raw is not None else None
            for sid, raw in zip(ids, found, strict=False)
        },
        closed={key: place is not None for key, place in zip(window_keys, places, strict=False)},
        count=int(count),
        oldest=tuple((text(sid), _EPOCH + int(score) * _MICROSECOND) for sid, score in oldest)
        if isinstance(oldest, list)
        else (),
    )


def queue_remembered(pipe: Any, prefix: str, changes: RememberedChanges) -> None:
    """Queue a commit's writes of the remembered sessions and keys."""
    if changes.dropped:
        pipe.hdel(prefix + keys.SESSIONS, *changes.dropped)
        pipe.zrem(prefix + keys.SESSION_AGES, *changes.dropped)
    if changes.sessions:
        pipe.hset(
            prefix + keys.SESSIONS,
            mapping={s.session_id: json.dumps(encode_session(s)) for s in changes.sessions},
        )
        pipe.zadd(
            prefix + keys.SESSION_AGES, {s.session_id: _score(s.last_ts) for s in changes.sessions}
        )
    if changes.unclosed:
        pipe.zrem(prefix + keys.CLOSED, *changes.unclosed)
    if changes.closed:
        pipe.zadd(prefix + keys.CLOSED, dict(changes.closed))
        pipe.zremrangebyrank(prefix + keys.CLOSED, 0, -(MAX_REMEMBERED_CLOSED + 1))


def composed_state(
    doc: dict[str, Any], sessions: Sequence[Any], closed: Sequence[Any]
) -> dict[str, Any]:
    """The state document with its remembered sessions and keys put back, as a state that
    holds them itself is written (the codec decodes either)."""
    if not sessions and not closed:
        return doc
    held = {row[0] for row in doc["sessions"]}
    apart = [row for row in (json.loads(raw) for raw in sessions) if row[0] not in held]
    kept = list(dict.fromkeys([*(text(k) for k in closed), *doc["closed"]]))
    return doc | {"sessions": [*apart, *doc["sessions"]], "closed": kept}
